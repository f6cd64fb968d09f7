//! GS1 element strings, as a pharmacy's scanner reads them from a box's DataMatrix: the product
//! (AI 01, a GTIN-14), its expiry (17, `YYMMDD`), lot (10) and serial (21), in the human-readable
//! form `(01)…(17)…(10)…(21)…` or the raw one, where a variable-length field ends at a GS
//! (U+001D, the FNC1 separator) or at the end, after an optional symbology identifier (`]d2`,
//! `]C1`, `]Q3`, `]e0`). Other AIs of the GS1 General Specifications' common set are read and
//! skipped; an unknown one is refused, since its length cannot be known. An AI given twice with
//! two values is refused (the record would not say which box was scanned: an expired lot could
//! pass or not by the order of its elements); given twice with one value, it is that value.

use common::gtin;

/// What a burn keeps of a scanned element string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Product {
    /// 14 digits, check digit verified.
    pub gtin: Option<String>,
    /// `YYYY-MM-DD` (day `00` in the string: the last day of that month).
    pub expiry: Option<String>,
    pub lot: Option<String>,
    pub serial: Option<String>,
}

/// The group separator that ends a variable-length field (FNC1 in a raw scan).
const GS: char = '\u{1d}';

/// An AI's value: a fixed number of characters, or up to a maximum (variable: ends at GS).
#[derive(Clone, Copy)]
enum Len {
    Fixed(usize),
    Upto(usize),
}

/// The AIs read (GS1 General Specifications, section 3): the ones a medicine's box carries, and
/// the common ones around them.
const AIS: &[(&str, Len)] = &[
    ("00", Len::Fixed(18)),
    ("01", Len::Fixed(14)),
    ("02", Len::Fixed(14)),
    ("10", Len::Upto(20)),
    ("11", Len::Fixed(6)),
    ("12", Len::Fixed(6)),
    ("13", Len::Fixed(6)),
    ("15", Len::Fixed(6)),
    ("16", Len::Fixed(6)),
    ("17", Len::Fixed(6)),
    ("20", Len::Fixed(2)),
    ("21", Len::Upto(20)),
    ("22", Len::Upto(20)),
    ("240", Len::Upto(30)),
    ("241", Len::Upto(30)),
    ("250", Len::Upto(30)),
    ("30", Len::Upto(8)),
    ("37", Len::Upto(8)),
    ("710", Len::Upto(20)),
    ("711", Len::Upto(20)),
    ("712", Len::Upto(20)),
    ("713", Len::Upto(20)),
    ("714", Len::Upto(20)),
    ("7003", Len::Fixed(10)),
];

/// The product, expiry, lot and serial of an element string; the reason, a sentence, when it is
/// not one.
pub fn parse(input: &str) -> Result<Product, String> {
    let s = input.trim();
    let s = ["]d2", "]C1", "]Q3", "]e0"]
        .iter()
        .find_map(|p| s.strip_prefix(p))
        .unwrap_or(s);
    let fields = if s.starts_with('(') {
        bracketed(s)?
    } else {
        raw(s)?
    };
    if fields.is_empty() {
        return Err("it holds no GS1 element".into());
    }
    for (i, (ai, value)) in fields.iter().enumerate() {
        if let Some((_, first)) = fields[..i].iter().find(|(a, v)| a == ai && v != value) {
            return Err(format!(
                "({ai}) is given twice with different values ({} and {})",
                truncate(first),
                truncate(value)
            ));
        }
    }
    let mut product = Product::default();
    for (ai, value) in fields {
        match ai {
            "01" => {
                if !gtin::is_valid(&value) {
                    return Err(format!("(01) {value} is not a GTIN: bad check digit"));
                }
                product.gtin = Some(value);
            }
            "17" => product.expiry = Some(date(&value)?),
            "10" => product.lot = Some(value),
            "21" => product.serial = Some(value),
            _ => {}
        }
    }
    Ok(product)
}

/// `(AI)value(AI)value…`.
fn bracketed(s: &str) -> Result<Vec<(&'static str, String)>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let body = rest
            .strip_prefix('(')
            .ok_or_else(|| format!("expected \"(\" at {rest:?}"))?;
        let close = body.find(')').ok_or("an AI without its \")\"")?;
        let (ai, len) = known(&body[..close])?;
        let after = &body[close + 1..];
        let end = after.find('(').unwrap_or(after.len());
        let value = after[..end].trim_end_matches(GS);
        check_len(ai, len, value)?;
        out.push((ai, value.to_string()));
        rest = &after[end..];
    }
    Ok(out)
}

/// AIs and values run together, a variable-length value ended by GS or the end.
fn raw(s: &str) -> Result<Vec<(&'static str, String)>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim_start_matches(GS);
    while !rest.is_empty() {
        let (ai, len) = AIS
            .iter()
            .find(|(ai, _)| rest.starts_with(ai))
            .map(|(ai, len)| (*ai, *len))
            .ok_or_else(|| format!("unknown or missing AI at {:?}", truncate(rest)))?;
        let body = &rest[ai.len()..];
        let end = match len {
            Len::Fixed(n) => body.char_indices().nth(n).map_or(body.len(), |(i, _)| i),
            Len::Upto(_) => body.find(GS).unwrap_or(body.len()),
        };
        let value = &body[..end];
        check_len(ai, len, value)?;
        out.push((ai, value.to_string()));
        rest = body[end..].trim_start_matches(GS);
    }
    Ok(out)
}

fn known(ai: &str) -> Result<(&'static str, Len), String> {
    AIS.iter()
        .find(|(known, _)| *known == ai)
        .map(|(ai, len)| (*ai, *len))
        .ok_or_else(|| format!("({ai}) is not an AI this service reads"))
}

fn check_len(ai: &str, len: Len, value: &str) -> Result<(), String> {
    let n = value.chars().count();
    let ok = match len {
        Len::Fixed(want) => n == want,
        Len::Upto(max) => (1..=max).contains(&n),
    };
    let printable = value.chars().all(|c| (' '..='~').contains(&c));
    if !ok || !printable {
        return Err(format!(
            "({ai}) {value:?} has not the length or characters GS1 allows"
        ));
    }
    if matches!(len, Len::Fixed(_)) && !value.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("({ai}) {value:?} must be digits"));
    }
    Ok(())
}

/// `YYMMDD` as `YYYY-MM-DD` (years 2000-2099; day 00: the month's last day).
fn date(v: &str) -> Result<String, String> {
    let n = |r: std::ops::Range<usize>| v[r].parse::<u16>().unwrap_or(99);
    let (year, month, day) = (2000 + n(0..2), n(2..4), n(4..6));
    let Some(last) = calendar::days_in_month(year, month) else {
        return Err(format!("(17) {v} is not a date"));
    };
    let day = if day == 0 { last } else { day };
    if day > last {
        return Err(format!("(17) {v} is not a date"));
    }
    Ok(format!("{year:04}-{month:02}-{day:02}"))
}

fn truncate(s: &str) -> String {
    s.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(gtin: &str, expiry: &str, lot: &str, serial: &str) -> Product {
        Product {
            gtin: Some(gtin.into()),
            expiry: Some(expiry.into()),
            lot: Some(lot.into()),
            serial: Some(serial.into()),
        }
    }

    #[test]
    fn a_box_reads_the_same_bracketed_or_raw() {
        let want = product("07501055300075", "2027-06-30", "L2345A", "SN0001");
        assert_eq!(
            parse("(01)07501055300075(17)270630(10)L2345A(21)SN0001"),
            Ok(want.clone())
        );
        assert_eq!(
            parse("]d201075010553000751727063010L2345A\u{1d}21SN0001"),
            Ok(want.clone())
        );
        // Any order; the lot last needs no separator.
        assert_eq!(
            parse("010750105530007521SN0001\u{1d}17270630\u{1d}10L2345A"),
            Ok(want)
        );
    }

    #[test]
    fn day_00_is_the_months_last_day() {
        let p = parse("(01)07501055300075(17)280200").unwrap();
        assert_eq!(p.expiry.as_deref(), Some("2028-02-29"));
        assert_eq!((p.lot, p.serial), (None, None));
    }

    #[test]
    fn an_ai_given_twice_with_one_value_is_that_value() {
        let p = parse("(01)07501234567893(10)LOTA(01)07501234567893").unwrap();
        assert_eq!(p.gtin.as_deref(), Some("07501234567893"));
        assert_eq!(p.lot.as_deref(), Some("LOTA"));
    }

    #[test]
    fn bad_strings_say_why() {
        for (bad, says) in [
            ("(01)07501055300076", "check digit"),
            ("(01)0750105530007", "length"),
            ("(99)ABC", "not an AI"),
            ("(17)271332", "not a date"),
            ("9912345", "unknown"),
            ("", "no GS1"),
            ("(10)", "length"),
            (
                "(01)07501234567893(01)00012345600012",
                "(01) is given twice",
            ),
            ("(17)200131(17)301231", "(17) is given twice"),
            ("(10)LOTA(10)LOTB", "(10) is given twice"),
            (
                "0107501234567893\u{1d}10LOTA\u{1d}10LOTB",
                "(10) is given twice",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }
}
