//! GS1 product codes (GTIN-8, UPC-A/GTIN-12, EAN-13, GTIN-14): the `upc` of the drug catalog.

/// Whether `code` is a GTIN: 8, 12, 13 or 14 digits whose last digit is the GS1 check digit.
pub fn is_valid(code: &str) -> bool {
    let digits: Vec<u32> = match code
        .chars()
        .map(|c| c.to_digit(10))
        .collect::<Option<Vec<u32>>>()
    {
        Some(d) if matches!(d.len(), 8 | 12 | 13 | 14) => d,
        _ => return false,
    };
    let (body, check) = digits.split_at(digits.len() - 1);
    check[0] == check_digit(body)
}

/// The GS1 check digit of the digits before it: weights 3, 1, 3, … from the right.
pub fn check_digit(body: &[u32]) -> u32 {
    let sum: u32 = body
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| if i % 2 == 0 { d * 3 } else { *d })
        .sum();
    (10 - sum % 10) % 10
}

/// A GTIN that passed `is_valid`, without surrounding whitespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gtin(String);

impl Gtin {
    /// The GTIN in `s` (trimmed), if it is one.
    pub fn parse(s: &str) -> Option<Gtin> {
        let s = s.trim();
        is_valid(s).then(|| Gtin(s.to_string()))
    }
}

impl From<Gtin> for String {
    fn from(gtin: Gtin) -> String {
        gtin.0
    }
}

/// `code` as a GTIN-14 (left-padded with zeros, as GS1's AI 01 carries it) when it is a GTIN of at
/// most 14 digits.
pub fn fourteen(code: &str) -> Option<String> {
    let code = code.trim();
    let padded = format!("{code:0>14}");
    (!code.is_empty() && code.len() <= 14 && is_valid(&padded)).then_some(padded)
}

/// Whether a valid GTIN is in GS1's restricted-circulation ("in-store") range, EAN-13 prefix 2, which
/// no real product carries.
pub fn is_in_store(code: &str) -> bool {
    is_valid(code) && code.len() == 13 && code.starts_with('2')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtins_pad_to_fourteen_digits_and_keep_their_check_digit() {
        assert_eq!(fourteen("7501055300075").as_deref(), Some("07501055300075"));
        assert_eq!(
            fourteen("07501055300075").as_deref(),
            Some("07501055300075")
        );
        assert_eq!(fourteen("7501055300076"), None);
        assert_eq!(fourteen("075010553000750"), None);
        assert_eq!(fourteen("abc"), None);
    }

    #[test]
    fn real_codes() {
        assert!(is_valid("7501055300075")); // EAN-13
        assert!(is_valid("036000291452")); // UPC-A
        assert!(is_valid("96385074")); // GTIN-8
        assert!(is_valid("10614141000415")); // GTIN-14
        assert!(!is_valid("7501055300076"));
        assert!(!is_valid("750105530007"));
        assert!(!is_valid("75010553000x5"));
        assert!(!is_valid(""));
        assert!(!is_valid("123456789"));
    }

    #[test]
    fn parse_trims_and_checks() {
        assert_eq!(
            Gtin::parse(" 7501055300075 ").map(String::from).as_deref(),
            Some("7501055300075")
        );
        assert_eq!(Gtin::parse("7501055300076"), None);
    }

    #[test]
    fn in_store_range() {
        assert!(is_in_store("2000000000015"));
        assert!(!is_in_store("7501055300075"));
        assert!(!is_in_store("2000000000016"));
    }
}
