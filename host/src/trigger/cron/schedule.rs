//! Cron expressions of Spin's cron trigger plugin (the `cron` crate's syntax, Quartz-like),
//! evaluated in UTC: six fields `sec min hour day-of-month month day-of-week` and an optional
//! seventh `year`. A field is `*` (or `?` for the two day fields), a value, a range `a-b`, a step
//! `*/n`, `a/n` or `a-b/n`, or a comma-separated list of those. Months may be `JAN`..`DEC`, days of
//! week `SUN`..`SAT`; day of week numbers are 1 (Sunday) to 7 (Saturday). Both day fields must
//! match. A pure module: parsing and "when next".

use anyhow::{Context, Result, ensure};

/// One field's allowed values, as a set over `min..=max`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    min: u32,
    allowed: Vec<bool>,
}

impl Field {
    fn contains(&self, value: u32) -> bool {
        value
            .checked_sub(self.min)
            .and_then(|i| self.allowed.get(i as usize))
            .copied()
            .unwrap_or(false)
    }
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

fn parse_value(text: &str, min: u32, max: u32, names: &[&str], name_base: u32) -> Result<u32> {
    let upper = text.to_ascii_uppercase();
    let value = match names
        .iter()
        .position(|n| upper.starts_with(n) && n.len() >= 3)
    {
        Some(i) if upper.chars().all(|c| c.is_ascii_alphabetic()) => i as u32 + name_base,
        _ => text
            .parse()
            .with_context(|| format!("{text:?} is not a number"))?,
    };
    ensure!(
        (min..=max).contains(&value),
        "{value} is outside {min}-{max}"
    );
    Ok(value)
}

fn parse_field(
    text: &str,
    min: u32,
    max: u32,
    names: &[&str],
    name_base: u32,
    question: bool,
) -> Result<Field> {
    let mut allowed = vec![false; (max - min + 1) as usize];
    for item in text.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .with_context(|| format!("step {step:?} is not a number"))?;
                ensure!(step > 0, "a step must be positive");
                (range, step)
            }
            None => (item, 1),
        };
        let (lo, hi) = if range == "*" || (question && range == "?") {
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (
                parse_value(a, min, max, names, name_base)?,
                parse_value(b, min, max, names, name_base)?,
            )
        } else {
            let start = parse_value(range, min, max, names, name_base)?;
            // `a/n` runs from a to the end of the field.
            (start, if item.contains('/') { max } else { start })
        };
        ensure!(lo <= hi, "range {range:?} runs backwards");
        let mut v = lo;
        while v <= hi {
            allowed[(v - min) as usize] = true;
            v += step;
        }
    }
    Ok(Field { min, allowed })
}

/// A parsed cron expression.
#[derive(Debug, Clone)]
pub struct Schedule {
    fields: [Field; 6],
    year: Option<Field>,
}

impl Schedule {
    /// Parses a 6- or 7-field expression.
    pub fn parse(expression: &str) -> Result<Self> {
        let parts: Vec<&str> = expression.split_whitespace().collect();
        ensure!(
            parts.len() == 6 || parts.len() == 7,
            "cron expression {expression:?} has {} fields; it needs 6 (sec min hour day-of-month month day-of-week) or 7 (+ year)",
            parts.len()
        );
        let field = |i: usize, min, max, names: &[&str], base, q| {
            parse_field(parts[i], min, max, names, base, q).with_context(|| {
                format!(
                    "cron expression {expression:?}, field {} ({:?})",
                    i + 1,
                    parts[i]
                )
            })
        };
        let fields = [
            field(0, 0, 59, &[], 0, false)?,
            field(1, 0, 59, &[], 0, false)?,
            field(2, 0, 23, &[], 0, false)?,
            field(3, 1, 31, &[], 0, true)?,
            field(4, 1, 12, &MONTHS, 1, false)?,
            field(5, 1, 7, &DAYS, 1, true)?,
        ];
        let year = if parts.len() == 7 {
            Some(field(6, 1970, 2099, &[], 0, false)?)
        } else {
            None
        };
        Ok(Self { fields, year })
    }

    /// Whether the schedule fires at this second (Unix time, UTC).
    #[cfg(test)]
    pub fn matches(&self, unix_seconds: u64) -> bool {
        let t = civil(unix_seconds);
        let values = [t.second, t.minute, t.hour, t.day, t.month, t.weekday + 1];
        self.fields.iter().zip(values).all(|(f, v)| f.contains(v))
            && self.year.as_ref().is_none_or(|y| y.contains(t.year))
    }

    /// The first firing strictly after `after`, searching up to about four years ahead.
    pub fn next_after(&self, after: u64) -> Option<u64> {
        // Walk minutes whose (month, day, hour, minute) match, then seconds within them.
        let mut t = after + 1;
        let limit = after + 4 * 366 * 86_400;
        while t < limit {
            let c = civil(t);
            let minute_ok = self.fields[1].contains(c.minute)
                && self.fields[2].contains(c.hour)
                && self.fields[3].contains(c.day)
                && self.fields[4].contains(c.month)
                && self.fields[5].contains(c.weekday + 1)
                && self.year.as_ref().is_none_or(|y| y.contains(c.year));
            if minute_ok {
                for s in c.second..60 {
                    if self.fields[0].contains(s) {
                        return Some(t + u64::from(s - c.second));
                    }
                }
            }
            t += u64::from(60 - c.second); // next minute
        }
        None
    }
}

/// A UTC calendar time.
#[derive(Debug, PartialEq, Eq)]
struct Civil {
    year: u32,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    /// 0 = Sunday.
    weekday: u32,
}

/// Unix seconds → UTC calendar fields (days-to-civil, proleptic Gregorian).
fn civil(unix_seconds: u64) -> Civil {
    let days = unix_seconds / 86_400;
    let secs = (unix_seconds % 86_400) as u32;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400) as u32 + u32::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: secs / 3_600,
        minute: secs / 60 % 60,
        second: secs % 60,
        weekday: ((days + 4) % 7) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_time() {
        // 2024-02-29T13:45:07Z, a Thursday.
        let t = civil(1_709_214_307);
        assert_eq!(
            t,
            Civil {
                year: 2024,
                month: 2,
                day: 29,
                hour: 13,
                minute: 45,
                second: 7,
                weekday: 4
            }
        );
        assert_eq!(civil(0).weekday, 4); // 1970-01-01, Thursday
    }

    #[test]
    fn expressions() {
        let every_second = Schedule::parse("* * * * * *").unwrap();
        assert_eq!(every_second.next_after(100), Some(101));
        let every_10s = Schedule::parse("*/10 * * * * *").unwrap();
        assert_eq!(every_10s.next_after(1_709_214_307), Some(1_709_214_310));
        let at_minute = Schedule::parse("0 0 * * * *").unwrap();
        assert_eq!(at_minute.next_after(1_709_214_307), Some(1_709_215_200)); // 14:00:00
        // Thursdays (5 in Sunday=1 numbering) at 13:45:07.
        let thursday = Schedule::parse("7 45 13 ? * THU").unwrap();
        assert!(thursday.matches(1_709_214_307));
        let friday = Schedule::parse("7 45 13 * * 6").unwrap();
        assert!(!friday.matches(1_709_214_307));
        let feb = Schedule::parse("0-10/5 45 13 29 FEB * 2024").unwrap();
        assert!(feb.matches(1_709_214_305));
        assert!(!feb.matches(1_709_214_307));
        for bad in [
            "* * * * *",
            "61 * * * * *",
            "* * * * 13 *",
            "*/0 * * * * *",
            "5-1 * * * * *",
            "x * * * * *",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad}");
        }
    }
}
