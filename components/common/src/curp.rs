//! The CURP (Clave Única de Registro de Población), as RENAPO assigns it: the patient's identity
//! when it is well formed and its check digit is right (docs/patients.md, "One person"). Used by
//! the patients component (who is one person) and the gateway (the FHIR Patient's identifier).
//!
//! The rules are those of PyPI `python-stdnum`'s `stdnum.mx.curp`, which the black-box tests ask on
//! valid and mutated values: 18 characters once `-`, `_` and spaces are removed and letters upper
//! cased; four letters (not one of the words RENAPO never assigns), a real date `YYMMDD`, `H` or
//! `M`, one of the 33 state codes (`NE` born abroad), three consonants, the century character (a
//! digit before 2000, a letter from 2000) and the check digit: `(10 - Σ value·weight mod 10) mod
//! 10` over the first 17, each worth its place in `0-9A-N&O-Z` (`&` standing for `Ñ`), weights 18
//! down to 2.

/// A valid CURP, normalised (upper case, nothing but its 18 characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Curp(String);

/// The values of the check digit's alphabet, in order.
const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMN&OPQRSTUVWXYZ";

/// The two-letter codes of the states (and `NE`, born abroad).
const STATES: [&str; 33] = [
    "AS", "BC", "BS", "CC", "CH", "CL", "CM", "CS", "DF", "DG", "GR", "GT", "HG", "JC", "MC", "MN",
    "MS", "NE", "NL", "NT", "OC", "PL", "QR", "QT", "SL", "SP", "SR", "TC", "TL", "TS", "VZ", "YN",
    "ZS",
];

/// The four-letter words RENAPO replaces (its second letter becomes `X`): never a CURP's start.
const NEVER: [&str; 81] = [
    "BACA", "BAKA", "BUEI", "BUEY", "CACA", "CACO", "CAGA", "CAGO", "CAKA", "CAKO", "COGE", "COGI",
    "COJA", "COJE", "COJI", "COJO", "COLA", "CULO", "FALO", "FETO", "GETA", "GUEI", "GUEY", "JETA",
    "JOTO", "KACA", "KACO", "KAGA", "KAGO", "KAKA", "KAKO", "KOGE", "KOGI", "KOJA", "KOJE", "KOJI",
    "KOJO", "KOLA", "KULO", "LILO", "LOCA", "LOCO", "LOKA", "LOKO", "MAME", "MAMO", "MEAR", "MEAS",
    "MEON", "MIAR", "MION", "MOCO", "MOKO", "MULA", "MULO", "NACA", "NACO", "PEDA", "PEDO", "PENE",
    "PIPI", "PITO", "POPO", "PUTA", "PUTO", "QULO", "RATA", "ROBA", "ROBE", "ROBO", "RUIN", "SENO",
    "TETA", "VACA", "VAGA", "VAGO", "VAKA", "VUEI", "VUEY", "WUEI", "WUEY",
];

impl Curp {
    /// `raw` as a valid CURP, or `None` (any text is accepted as a patient's `curp`; only a valid
    /// one is an identity).
    pub fn parse(raw: &str) -> Option<Curp> {
        let s = normalise(raw);
        let b = s.as_bytes();
        if b.len() != 18 {
            return None;
        }
        let letters = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_uppercase);
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        let shape = letters(0..4)
            && digits(4..10)
            && letters(10..16)
            && (b[16].is_ascii_digit() || b[16].is_ascii_uppercase())
            && b[17].is_ascii_digit();
        let ok = shape
            && !NEVER.contains(&&s[..4])
            && is_date(b)
            && matches!(b[10], b'H' | b'M')
            && STATES.contains(&&s[11..13])
            && b[17] == check_digit(&b[..17]);
        ok.then_some(Curp(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The characters a CURP is written with that are not part of it: the ASCII space, tab, line feed
/// and carriage return, `-` and `_`, the Unicode spaces word processors and phones put in (no-break,
/// en, em, figure, thin, hair, zero-width, narrow no-break, ideographic, the BOM) and the Unicode
/// dashes (hyphen, no-break hyphen, figure dash, en dash, em dash, minus sign, full-width
/// hyphen-minus). Removed wherever they stand, in Rust ([`normalise`]) and in SQL
/// ([`normalised_sql`]) alike, so a CURP typed with a no-break space or a word processor's dash is
/// the same person, never a valid CURP that links nobody (docs/patients.md, "One person"). Any
/// other character stays and makes the CURP invalid in both. The list is short on purpose: SQL
/// removes each with one nested `replace`, and SQLite before 3.46 refuses to parse an expression
/// nested 29 deep (measured: 23 plus `upper` leaves 5 levels of headroom in the deepest query).
pub const IGNORED: [char; 23] = [
    ' ', '\t', '\n', '\r', '-', '_', '\u{A0}', '\u{2002}', '\u{2003}', '\u{2007}', '\u{2009}',
    '\u{200A}', '\u{200B}', '\u{202F}', '\u{3000}', '\u{FEFF}', '\u{2010}', '\u{2011}', '\u{2012}',
    '\u{2013}', '\u{2014}', '\u{2212}', '\u{FF0D}',
];

/// What is compared: every [`IGNORED`] character removed, ASCII letters upper cased. The patients
/// component's SQL matches stored values normalised the same way ([`normalised_sql`]).
pub fn normalise(raw: &str) -> String {
    raw.chars()
        .filter(|c| !IGNORED.contains(c))
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// The stored `curp` column normalised as [`normalise`] does, in SQL: each ignored character
/// replaced by nothing (`char(n)`), then SQLite's `upper` (ASCII only, like
/// `to_ascii_uppercase`). The index `patients_by_curp_key` (migration 0033) is built on this very
/// expression, so a lookup by it reads the index.
pub fn normalised_sql() -> String {
    let inner = IGNORED.iter().fold("curp".to_string(), |inner, c| {
        format!("replace({inner}, char({}), '')", u32::from(*c))
    });
    format!("upper({inner})")
}

/// Whether `YYMMDD` (positions 4..10) is a real date, in the century the 17th character says.
fn is_date(b: &[u8]) -> bool {
    let n = |i: usize| u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0');
    let year = n(4) + if b[16].is_ascii_digit() { 1900 } else { 2000 };
    let (month, day) = (n(6), n(8));
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// The check digit of a CURP's first 17 characters (as an ASCII digit).
fn check_digit(first: &[u8]) -> u8 {
    let sum: usize = first
        .iter()
        .zip((2..=18).rev())
        .map(|(c, weight)| ALPHABET.iter().position(|a| a == c).unwrap_or(0) * weight)
        .sum();
    b'0' + ((10 - sum % 10) % 10) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renapo_examples_are_valid_and_normalised() {
        // stdnum's own example, and the SAT test e.firma's holder.
        for raw in [
            "BOXW310820HNERXN09",
            "boxw-310820 hnerxn09",
            "SABC560626MDFLRN01",
        ] {
            assert!(Curp::parse(raw).is_some(), "{raw}");
        }
        assert_eq!(
            Curp::parse(" boxw310820hnerxn09 ").unwrap().as_str(),
            "BOXW310820HNERXN09"
        );
    }

    #[test]
    fn each_rule_refuses() {
        for raw in [
            "BOXW310820HNERXN08", // check digit
            "BOXW310820HNERXN0",  // length
            "BOXW311320HNERXN09", // month 13
            "BOXW310231HNERXN09", // 31 February
            "BOXW310820XNERXN09", // neither H nor M
            "BOXW310820HZZRXN09", // no such state
            "PUTO310820HNERXN09", // a word RENAPO never assigns
            "BOXW3108201NERXN09", // a digit among the consonants
            "ABCTEST",            // the spec's example: free text, accepted but no identity
            "",
        ] {
            assert!(Curp::parse(raw).is_none(), "{raw}");
        }
    }

    #[test]
    fn the_century_decides_leap_years() {
        // 29 February 2000 (a letter in position 17) exists; 29 February 1900 does not.
        let with = |century: u8| {
            let mut b = *b"AAAA000229HDFBBB?0";
            b[16] = century;
            b[17] = check_digit(&b[..17]);
            String::from_utf8(b.to_vec()).unwrap()
        };
        assert!(Curp::parse(&with(b'A')).is_some());
        assert!(Curp::parse(&with(b'0')).is_none());
    }

    #[test]
    fn unicode_spaces_and_dashes_are_the_same_person() {
        for raw in [
            "\u{A0}BOXW310820HNERXN09\u{A0}",
            "BOXW\u{2011}310820\u{2009}HNERXN09",
            "boxw\u{2013}310820\u{200B}hnerxn09\u{FEFF}",
            "\tBOXW 310820_HNERXN09\u{3000}",
        ] {
            assert_eq!(
                Curp::parse(raw).map(|c| c.0),
                Some("BOXW310820HNERXN09".to_string()),
                "{raw:?}"
            );
        }
        // Anything else stays and makes it invalid: never valid yet unlinked.
        assert!(Curp::parse("BOXW310820HNERXN09\u{200D}").is_none());
        assert!(Curp::parse("ＢOXW310820HNERXN09").is_none());
    }

    #[test]
    fn the_sql_removes_every_ignored_character() {
        let sql = normalised_sql();
        for c in IGNORED {
            assert!(
                sql.contains(&format!("char({}), ''", u32::from(c))),
                "{c:?}"
            );
        }
        assert!(sql.starts_with("upper(replace(") && sql.contains("(curp, char(32), '')"));
    }
}
