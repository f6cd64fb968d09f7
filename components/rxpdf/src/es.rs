//! The Spanish wording of values: dates, ages, sex, quantities.

use calendar::Date;

/// `2026-11-22` → `22 de noviembre de 2026`; anything that is not a date is shown as given.
pub fn long_date(iso: &str) -> String {
    match Date::parse(iso.trim()) {
        Some(d) => d.spanish_long(),
        None => iso.trim().to_string(),
    }
}

/// `1990-06-15` → `15/06/1990`, the way dates are written in Mexico; anything else as given.
pub fn short_date(iso: &str) -> String {
    match Date::parse(iso.trim()) {
        Some(d) => format!("{:02}/{:02}/{:04}", d.day, d.month, d.year),
        None => iso.trim().to_string(),
    }
}

/// The age on the day of issue: `36 años`, `1 año`; under a year, in months (`7 meses`); `None`
/// when either date is not a date or the birth is after the issue.
pub fn age(date_of_birth: &str, issued_on: &str) -> Option<String> {
    let born = Date::parse(date_of_birth.trim())?;
    let on = Date::parse(issued_on.trim())?;
    if born > on {
        return None;
    }
    let years = born.years_until(&on);
    Some(match years {
        1 => "1 año".to_string(),
        y if y > 1 => format!("{y} años"),
        _ => {
            let mut months =
                (on.year as i32 - born.year as i32) * 12 + on.month as i32 - born.month as i32;
            if on.day < born.day {
                months -= 1;
            }
            match months {
                0 => "menos de 1 mes".to_string(),
                1 => "1 mes".to_string(),
                m => format!("{m} meses"),
            }
        }
    })
}

/// The stored sex letter, spelled out (`M` and `H` are male, `F` female, `O` other); another
/// value is shown as given.
pub fn sex(gender: &str) -> String {
    match gender.trim().to_ascii_uppercase().as_str() {
        "M" | "H" | "MALE" => "Masculino".to_string(),
        "F" | "FEMALE" => "Femenino".to_string(),
        "O" | "OTHER" => "Otro".to_string(),
        _ => gender.trim().to_string(),
    }
}

/// The quantity with its label: `2 cajas`. A label that already starts with the number is
/// shown alone, one that starts with another number goes in parentheses (`2 (20 tabletas)`), and
/// no label shows the number alone.
pub fn quantity(qty: i64, label: &str) -> String {
    let label = label.trim();
    let n = qty.to_string();
    if label.is_empty() {
        n
    } else if label
        .strip_prefix(n.as_str())
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_digit()))
    {
        label.to_string()
    } else if label.starts_with(|c: char| c.is_ascii_digit()) {
        format!("{n} ({label})")
    } else {
        format!("{n} {label}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(long_date("2026-11-22"), "22 de noviembre de 2026");
        assert_eq!(long_date("2026-01-05"), "5 de enero de 2026");
        assert_eq!(long_date("ayer"), "ayer");
        assert_eq!(short_date("1990-06-15"), "15/06/1990");
        assert_eq!(short_date(""), "");
    }

    #[test]
    fn ages() {
        assert_eq!(age("1990-06-15", "2026-06-14").as_deref(), Some("35 años"));
        assert_eq!(age("1990-06-15", "2026-06-15").as_deref(), Some("36 años"));
        assert_eq!(age("2025-06-15", "2026-06-15").as_deref(), Some("1 año"));
        assert_eq!(age("2025-11-20", "2026-06-19").as_deref(), Some("6 meses"));
        assert_eq!(age("2026-05-10", "2026-06-15").as_deref(), Some("1 mes"));
        assert_eq!(
            age("2026-06-10", "2026-06-15").as_deref(),
            Some("menos de 1 mes")
        );
        assert_eq!(age("2027-01-01", "2026-06-15"), None);
        assert_eq!(age("15/06/1990", "2026-06-15"), None);
    }

    #[test]
    fn sexes() {
        assert_eq!(sex("M"), "Masculino");
        assert_eq!(sex("h"), "Masculino");
        assert_eq!(sex("F"), "Femenino");
        assert_eq!(sex("O"), "Otro");
        assert_eq!(sex("X"), "X");
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity(2, "cajas"), "2 cajas");
        assert_eq!(quantity(2, "2 cajas"), "2 cajas");
        assert_eq!(quantity(2, "20 tabletas"), "2 (20 tabletas)");
        assert_eq!(quantity(20, "2 cajas"), "20 (2 cajas)");
        assert_eq!(quantity(1, ""), "1");
        assert_eq!(quantity(1, "  frasco "), "1 frasco");
    }
}
