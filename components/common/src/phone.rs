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

//!
//! The usual case skips the metadata: a Mexican number of ten digits (the first 2-9: no national
//! or mobile prefix), alone or after `+52`, written with spaces, `-`, `.` or `(` `)` only, is
//! `+52` and its digits, which is what libphonenumber makes of it. Loading the metadata costs an
//! instance ~60 ms of CPU natively the first time, and Spin and this host replace an instance
//! after 128 requests: ~0.8 ms a request for every create of a patient with a phone
//! (docs/bench.md, `POST /api/v2/patient/`).

use phonenumber::country::Id;

/// `raw` in E.164 (`+525512345678`), or `None` when it does not parse as a phone number.
pub fn e164(raw: &str) -> Option<String> {
    if raw.trim().is_empty() {
        return None;
    }
    if let Some(national) = plain_mexican(raw) {
        return Some(format!("+52{national}"));
    }
    let number = phonenumber::parse(Some(Id::MX), ungrouped(raw)).ok()?;
    Some(number.format().mode(phonenumber::Mode::E164).to_string())
}

/// The ten digits of a plain Mexican number (see the module's text), if `raw` is one.
fn plain_mexican(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let (rest, plus) = match raw.strip_prefix("+52") {
        Some(rest) => (rest, true),
        None => (raw, false),
    };
    if !plus && raw.starts_with('+') {
        return None;
    }
    let mut digits = String::with_capacity(10);
    for c in rest.chars() {
        match c {
            '0'..='9' => digits.push(c),
            ' ' | '-' | '.' | '(' | ')' => {}
            _ => return None,
        }
    }
    let first = digits.chars().next()?;
    (digits.len() == 10 && ('2'..='9').contains(&first)).then_some(digits)
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

    /// What the metadata says, without the shortcut.
    fn e164_by_metadata(raw: &str) -> Option<String> {
        let number = phonenumber::parse(Some(Id::MX), ungrouped(raw)).ok()?;
        Some(number.format().mode(phonenumber::Mode::E164).to_string())
    }

    #[test]
    fn the_shortcut_says_what_the_metadata_says() {
        for raw in [
            "5512345678",
            "55 1234 5678",
            "(55) 1234-5678",
            "33.1234.5678",
            "+52 55 1234 5678",
            "+525512345678",
            "+52 (81) 1234-5678",
            "999 123 4567",
            "222-123-4567",
        ] {
            assert!(plain_mexican(raw).is_some(), "{raw}");
            assert_eq!(e164(raw), e164_by_metadata(raw), "{raw}");
        }
        for raw in [
            "0155 1234 5678",
            "1 55 1234 5678",
            "+1 415 555 2671",
            "555123456",
            "52 55 1234 5678",
        ] {
            assert!(plain_mexican(raw).is_none(), "{raw}");
        }
    }

    #[test]
    fn national_numbers_are_mexican_and_others_keep_their_country() {
        assert_eq!(e164("55 1234 5678").as_deref(), Some("+525512345678"));
        assert_eq!(e164("(55) 1234-5678").as_deref(), Some("+525512345678"));
        assert_eq!(e164("+1 415 555 2671").as_deref(), Some("+14155552671"));
        assert_eq!(e164("555123456").as_deref(), Some("+52555123456"));
        assert_eq!(e164("+5233-9498-3550").as_deref(), Some("+523394983550"));
        assert_eq!(e164("+52 33.9498.3550").as_deref(), Some("+523394983550"));
        assert_eq!(ungrouped("55-1234-5678 ext. 12"), "5512345678 ext. 12");
        assert_eq!(e164("+52 (55) 1234-5678").as_deref(), Some("+525512345678"));
        assert_eq!(
            e164("044 55 1234 5678"),
            e164_by_metadata("044 55 1234 5678")
        );
        assert_eq!(e164("abc"), None);
        assert_eq!(e164("  "), None);
    }
}
