//! Timestamps and calendar dates, without a calendar crate.

use std::time::SystemTime;

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

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    now_iso8601()[..10].to_string()
}

/// A calendar date `YYYY-MM-DD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    pub year: u16,
    pub month: u8,
    pub day: u8,
}

/// Month names in Spanish, January first.
const MONTHS: [&str; 12] = [
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

impl Date {
    /// The date as written in Spanish: `22 de noviembre de 2026`.
    pub fn spanish_long(&self) -> String {
        format!(
            "{} de {} de {}",
            self.day,
            MONTHS[self.month as usize - 1],
            self.year
        )
    }

    /// Parses exactly `YYYY-MM-DD` and checks that the day exists (leap years included).
    pub fn parse(s: &str) -> Option<Date> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<u16> {
            let part = &s[r];
            part.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| part.parse().ok())?
        };
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days_in_month = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (year >= 1 && (1..=days_in_month).contains(&day)).then_some(Date {
            year,
            month: month as u8,
            day: day as u8,
        })
    }

    /// Whole years from `self` to `on` (an age).
    pub fn years_until(&self, on: &Date) -> i32 {
        let mut years = on.year as i32 - self.year as i32;
        if (on.month, on.day) < (self.month, self.day) {
            years -= 1;
        }
        years
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_timestamps_parse_back() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(1_795_000_000_123_456);
        assert_eq!(parse_iso8601(&iso8601(t)), Some(t));
        assert_eq!(parse_iso8601("yesterday"), None);
    }

    #[test]
    fn parses_real_dates_only() {
        assert_eq!(Date::parse("1990-02-28").unwrap().to_string(), "1990-02-28");
        assert!(Date::parse("2024-02-29").is_some());
        assert!(Date::parse("2023-02-29").is_none());
        assert!(Date::parse("1990-13-01").is_none());
        assert!(Date::parse("1990-1-01").is_none());
        assert!(Date::parse("1990-01-01T00:00").is_none());
        assert!(Date::parse("+990-01-01").is_none());
        assert!(Date::parse("").is_none());
    }

    #[test]
    fn spanish_long_names_the_month() {
        assert_eq!(
            Date::parse("2026-11-02").unwrap().spanish_long(),
            "2 de noviembre de 2026"
        );
        assert_eq!(
            Date::parse("1990-01-31").unwrap().spanish_long(),
            "31 de enero de 1990"
        );
    }

    #[test]
    fn age_counts_whole_years() {
        let born = Date::parse("1990-06-15").unwrap();
        assert_eq!(born.years_until(&Date::parse("2026-06-14").unwrap()), 35);
        assert_eq!(born.years_until(&Date::parse("2026-06-15").unwrap()), 36);
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
