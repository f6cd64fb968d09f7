//! A patient's phone as the channels need it: parsed with libphonenumber's rules and metadata (the
//! `phonenumber` crate), a national number taken as Mexican (`+52`), and written in E.164. Exactly
//! what PyPI `phonenumbers` gives for `format_number(parse(phone, "MX"), E164)`: the black-box suite
//! compares them on the spellings integrators send. Parsing is not validation: a number of the
//! wrong length for its region still parses (as in `phonenumbers`), and the provider answers for it.
//!
//! Where the crate and libphonenumber differ (measured against `phonenumbers` 9.0.43 on 4,000
//! random spellings): a `+` number whose country code runs straight into digits grouped by `-` or
//! `.` (`+5233-9498-3550`) fails in the crate; those separators, between two digits, are only
//! punctuation to libphonenumber, so they are dropped first (0 differences in 3,000 Mexican
//! spellings after that). Still different: a foreign number written with its own national prefix
//! after the country code (`+57 0773966382`: libphonenumber drops the `0`, the crate keeps it),
//! about 1 % of random international spellings; docs/patients.md says so.

use phonenumber::country::Id;

/// `raw` in E.164 (`+525512345678`), or `None` when it does not parse as a phone number.
pub fn e164(raw: &str) -> Option<String> {
    if raw.trim().is_empty() {
        return None;
    }
    let number = phonenumber::parse(Some(Id::MX), ungrouped(raw)).ok()?;
    Some(number.format().mode(phonenumber::Mode::E164).to_string())
}

/// `raw` without the `-` and `.` that sit between two digits.
fn ungrouped(raw: &str) -> String {
    let chars: Vec<char> = raw.chars().collect();
    let digit = |i: Option<usize>| {
        i.and_then(|i| chars.get(i))
            .is_some_and(char::is_ascii_digit)
    };
    chars
        .iter()
        .enumerate()
        .filter(|&(i, c)| {
            !(matches!(c, '-' | '.') && digit(i.checked_sub(1)) && digit(Some(i + 1)))
        })
        .map(|(_, c)| *c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn national_numbers_are_mexican_and_others_keep_their_country() {
        assert_eq!(e164("55 1234 5678").as_deref(), Some("+525512345678"));
        assert_eq!(e164("(55) 1234-5678").as_deref(), Some("+525512345678"));
        assert_eq!(e164("+1 415 555 2671").as_deref(), Some("+14155552671"));
        assert_eq!(e164("555123456").as_deref(), Some("+52555123456"));
        assert_eq!(e164("+5233-9498-3550").as_deref(), Some("+523394983550"));
        assert_eq!(e164("+52 33.9498.3550").as_deref(), Some("+523394983550"));
        assert_eq!(ungrouped("55-1234-5678 ext. 12"), "5512345678 ext. 12");
        assert_eq!(e164("abc"), None);
        assert_eq!(e164("  "), None);
    }
}
