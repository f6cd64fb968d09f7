//! A calendar date (`YYYY-MM-DD`) in the proleptic Gregorian calendar: parsed strictly, counted in
//! days, written in Spanish. A pure library with no dependencies, shared by `common` (which
//! re-exports it as `common::time::Date`) and `rxpdf`, which stays free of the components' SDKs.

/// How many days `month` (1-12) of `year` has, leap years included; `None` for no such month.
pub fn days_in_month(year: u16, month: u16) -> Option<u16> {
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => Some(31),
        4 | 6 | 9 | 11 => Some(30),
        2 if leap => Some(29),
        2 => Some(28),
        _ => None,
    }
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
        let last = days_in_month(year, month)?;
        (year >= 1 && (1..=last).contains(&day)).then_some(Date {
            year,
            month: month as u8,
            day: day as u8,
        })
    }

    /// Days since 1970-01-01 (negative before), by Howard Hinnant's `days_from_civil`.
    pub fn days(&self) -> i64 {
        let (m, d) = (i64::from(self.month), i64::from(self.day));
        let y = i64::from(self.year) - i64::from(m <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01 (`civil_from_days`); `None` outside years 1-9999.
    pub fn from_days(days: i64) -> Option<Date> {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        (1..=9999).contains(&year).then_some(Date {
            year: year as u16,
            month: month as u8,
            day: day as u8,
        })
    }

    /// The date `n` days later (earlier when negative).
    pub fn plus_days(&self, n: i64) -> Option<Date> {
        Date::from_days(self.days() + n)
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
    fn months_have_their_days() {
        assert_eq!(days_in_month(2024, 2), Some(29));
        assert_eq!(days_in_month(2100, 2), Some(28));
        assert_eq!(days_in_month(2000, 2), Some(29));
        assert_eq!(days_in_month(2026, 11), Some(30));
        assert_eq!(days_in_month(2026, 13), None);
        assert_eq!(days_in_month(2026, 0), None);
    }

    #[test]
    fn day_numbers_round_trip() {
        let d = Date::parse("1970-01-01").unwrap();
        assert_eq!(d.days(), 0);
        for s in [
            "2024-02-29",
            "2026-12-31",
            "2000-03-01",
            "1900-02-28",
            "0001-01-01",
        ] {
            let d = Date::parse(s).unwrap();
            assert_eq!(Date::from_days(d.days()), Some(d), "{s}");
        }
        let d = Date::parse("2026-11-25").unwrap();
        assert_eq!(d.plus_days(30).unwrap().to_string(), "2026-12-25");
        assert_eq!(d.plus_days(37).unwrap().to_string(), "2027-01-01");
        assert_eq!(
            Date::parse("2028-02-28")
                .unwrap()
                .plus_days(1)
                .unwrap()
                .to_string(),
            "2028-02-29"
        );
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
}
