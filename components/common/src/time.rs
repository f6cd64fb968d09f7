//! Timestamps and calendar dates, without a calendar crate.

use std::time::SystemTime;

pub use calendar::Date;

/// Now, as an ISO 8601 UTC timestamp with microseconds (`2026-11-22T03:30:00.123456Z`).
pub fn now_iso8601() -> String {
    iso8601(SystemTime::now())
}

/// A time as an ISO 8601 UTC timestamp with microseconds, the one format every stored timestamp has:
/// fixed width, so text order is time order (`next_attempt_at <= ?` compares correctly).
pub fn iso8601(t: SystemTime) -> String {
    humantime::format_rfc3339_micros(t).to_string()
}

/// The time of a stored timestamp (`iso8601`'s format); `None` for anything else.
pub fn parse_iso8601(s: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339(s).ok()
}

/// Mexico City's offset from UTC: -6 h all year since the 2022 reform abolished daylight saving
/// time there (DOF 28-10-2022).
pub const MEXICO_CITY_OFFSET_SECS: i64 = -6 * 3600;

/// The calendar date in Mexico City at a stored timestamp (`iso8601`'s format).
pub fn mexico_city_date(timestamp: &str) -> Option<Date> {
    let t = parse_iso8601(timestamp)?;
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).ok()?.as_secs() as i64;
    Date::from_days((secs + MEXICO_CITY_OFFSET_SECS).div_euclid(86_400))
}

/// The instant a Mexico City day ends (the next day's 00:00 there), as a stored timestamp.
pub fn end_of_mexico_city_day(day: &Date) -> String {
    let secs = (day.days() + 1) * 86_400 - MEXICO_CITY_OFFSET_SECS;
    iso8601(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64))
}

/// A stored timestamp moved by `secs` seconds (any sign); `None` if it does not parse.
pub fn shift(timestamp: &str, secs: i64) -> Option<String> {
    let t = parse_iso8601(timestamp)?;
    let d = std::time::Duration::from_secs(secs.unsigned_abs());
    Some(iso8601(if secs >= 0 { t + d } else { t - d }))
}

/// The start of the minute of a stored timestamp (`iso8601`'s format): `2026-11-25T16:07:00.000000Z`.
/// Mexico City's offset is whole hours, so this is its minute too.
pub fn minute_start(timestamp: &str) -> String {
    match timestamp.get(..16) {
        Some(minute) => format!("{minute}:00.000000Z"),
        None => timestamp.to_string(),
    }
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    now_iso8601()[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_starts_at_its_zero_second() {
        assert_eq!(
            minute_start("2026-11-25T16:07:33.123456Z"),
            "2026-11-25T16:07:00.000000Z"
        );
        assert!(
            minute_start("2026-11-25T16:07:33.123456Z").as_str() <= "2026-11-25T16:07:00.000001Z"
        );
        assert_eq!(minute_start("short"), "short");
    }

    #[test]
    fn stored_timestamps_parse_back() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_795_000_000_123_456);
        assert_eq!(parse_iso8601(&iso8601(t)), Some(t));
        assert_eq!(parse_iso8601("yesterday"), None);
    }

    #[test]
    fn mexico_city_days() {
        // 05:59 UTC is still the previous day in Mexico City; 06:00 is the next.
        let day = |t: &str| mexico_city_date(t).unwrap().to_string();
        assert_eq!(day("2026-11-26T05:59:59.000000Z"), "2026-11-25");
        assert_eq!(day("2026-11-26T06:00:00.000000Z"), "2026-11-26");
        let end = end_of_mexico_city_day(&Date::parse("2026-12-25").unwrap());
        assert_eq!(end, "2026-12-26T06:00:00.000000Z");
        assert_eq!(shift(&end, -1).unwrap(), "2026-12-26T05:59:59.000000Z");
    }

    #[test]
    fn now_is_iso8601_utc() {
        let now = now_iso8601();
        assert!(now.ends_with('Z') && now.len() == 27, "{now}");
        assert!(Date::parse(&today()).is_some());
    }

    #[test]
    fn timestamps_sort_as_text() {
        use std::time::{Duration, UNIX_EPOCH};
        let a = iso8601(UNIX_EPOCH + Duration::from_secs(1_800_000_000));
        let b = iso8601(UNIX_EPOCH + Duration::from_micros(1_800_000_000_000_001));
        assert_eq!(a, "2027-01-15T08:00:00.000000Z");
        assert!(a < b && a.len() == b.len(), "{a} {b}");
    }
}
