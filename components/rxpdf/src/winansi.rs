//! Text to WinAnsiEncoding bytes, the encoding of the standard Type 1 fonts as this crate uses them.
//!
//! WinAnsi (Windows-1252) covers Spanish completely: á é í ó ú ü ñ, their capitals, ¿ ¡ and the
//! peso sign `$`. Anything it cannot show becomes a visible `?`: a character is never dropped
//! silently nor turned into some other letter. Only characters that are invisible by nature (zero
//! width spaces, soft hyphens, variation selectors, carriage returns) are left out, and a letter
//! followed by a combining accent (`e` + U+0301, as macOS and some forms send it) is composed into
//! the accented letter first.

/// The byte that stands for a character the fonts cannot show.
pub const REPLACEMENT: u8 = b'?';

/// Windows-1252 bytes 0x80..=0x9F and the characters they stand for (0x81, 0x8D, 0x8F, 0x90 and
/// 0x9D are undefined).
const HIGH: [(char, u8); 27] = [
    ('€', 0x80),
    ('‚', 0x82),
    ('ƒ', 0x83),
    ('„', 0x84),
    ('…', 0x85),
    ('†', 0x86),
    ('‡', 0x87),
    ('ˆ', 0x88),
    ('‰', 0x89),
    ('Š', 0x8A),
    ('‹', 0x8B),
    ('Œ', 0x8C),
    ('Ž', 0x8E),
    ('‘', 0x91),
    ('’', 0x92),
    ('“', 0x93),
    ('”', 0x94),
    ('•', 0x95),
    ('–', 0x96),
    ('—', 0x97),
    ('˜', 0x98),
    ('™', 0x99),
    ('š', 0x9A),
    ('›', 0x9B),
    ('œ', 0x9C),
    ('ž', 0x9E),
    ('Ÿ', 0x9F),
];

/// The WinAnsi byte of one character, if the encoding has it. Some look-alikes that WinAnsi lacks
/// map to their plain form (the Unicode hyphens and minus to `-`, the typographic spaces to a space).
pub fn encode_char(c: char) -> Option<u8> {
    match c {
        ' '..='~' | '\u{A0}'..='\u{FF}' => Some(c as u32 as u8),
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2212}' => Some(b'-'),
        '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => Some(b' '),
        _ => HIGH.iter().find(|(h, _)| *h == c).map(|&(_, b)| b),
    }
}

/// Characters with no visible form: left out rather than shown as `?`.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\r' | '\u{AD}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2060}'..='\u{2064}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

fn is_combining(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}')
}

/// A base letter and a combining mark composed into one Latin-1 (or WinAnsi) letter.
fn compose(base: char, mark: char) -> Option<char> {
    let (from, to): (&str, &str) = match mark {
        '\u{0300}' => ("AEIOUaeiou", "ÀÈÌÒÙàèìòù"),
        '\u{0301}' => ("AEIOUYaeiouy", "ÁÉÍÓÚÝáéíóúý"),
        '\u{0302}' => ("AEIOUaeiou", "ÂÊÎÔÛâêîôû"),
        '\u{0303}' => ("ANOano", "ÃÑÕãñõ"),
        '\u{0308}' => ("AEIOUYaeiouy", "ÄËÏÖÜŸäëïöüÿ"),
        '\u{030A}' => ("Aa", "Åå"),
        '\u{030C}' => ("SZsz", "ŠŽšž"),
        '\u{0327}' => ("Cc", "Çç"),
        _ => return None,
    };
    let i = from.chars().position(|f| f == base)?;
    to.chars().nth(i)
}

/// Encodes one line or paragraph of text (no line breaks expected; a `\n` or tab becomes a space).
pub fn encode(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    // Printable ASCII is its own WinAnsi byte. The last such character before anything else is
    // left to the loop below, since a combining mark after it composes with it.
    let bytes = text.as_bytes();
    let ascii = bytes
        .iter()
        .position(|b| !matches!(b, b' '..=b'~'))
        .unwrap_or(bytes.len());
    if ascii == bytes.len() {
        out.extend_from_slice(bytes);
        return out;
    }
    let plain = ascii.saturating_sub(1);
    out.extend_from_slice(&bytes[..plain]);
    let mut chars = text[plain..].chars().peekable();
    while let Some(mut c) = chars.next() {
        let mark_follows = chars.peek().is_some_and(|&m| is_combining(m));
        // Latin-1 is its own WinAnsi byte, but for the soft hyphen (invisible).
        if !mark_follows && matches!(c, ' '..='~' | '\u{A0}'..='\u{AC}' | '\u{AE}'..='\u{FF}') {
            out.push(c as u32 as u8);
            continue;
        }
        if is_invisible(c) {
            continue;
        }
        if let Some(&mark) = chars.peek()
            && let Some(composed) = compose(c, mark)
        {
            chars.next();
            c = composed;
        }
        let byte = if matches!(c, '\n' | '\t') {
            b' '
        } else if c.is_control() {
            // NUL and the other controls: shown, not obeyed nor hidden (`common::text`).
            REPLACEMENT
        } else if is_combining(c) {
            // A mark that composes with nothing WinAnsi has: show that something was there.
            REPLACEMENT
        } else {
            encode_char(c).unwrap_or(REPLACEMENT)
        };
        out.push(byte);
    }
    out
}

/// Decodes WinAnsi bytes back to text (for tests).
#[cfg(test)]
pub fn decode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| match b {
            0x80..=0x9F => HIGH.iter().find(|&&(_, h)| h == b).map_or('?', |&(c, _)| c),
            _ => b as char,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spanish_round_trips() {
        let text = "¿Cómo está, Señor Núñez? ¡Pingüino! Acción: $1,250.00 MXN — «niño» “ok” 38 °C";
        let bytes = encode(text);
        assert_eq!(bytes.iter().filter(|&&b| b == REPLACEMENT).count(), 1); // the one in the text
        assert_eq!(decode(&bytes), text);
        assert_eq!(encode("ñ"), vec![0xF1]);
        assert_eq!(encode("¿¡"), vec![0xBF, 0xA1]);
        assert_eq!(encode("€"), vec![0x80]);
    }

    #[test]
    fn everything_else_is_a_visible_question_mark() {
        assert_eq!(encode("药"), b"?");
        assert_eq!(encode("a😀b"), b"a?b");
        assert_eq!(encode("Ωμέγα"), b"?????");
        // An emoji with a variation selector is one replacement, not two.
        assert_eq!(encode("❤\u{FE0F}"), b"?");
        assert_eq!(decode(&encode("Жук ok")), "??? ok");
    }

    #[test]
    fn combining_marks_compose() {
        assert_eq!(
            decode(&encode("Jose\u{0301} Nu\u{0301}n\u{0303}ez")),
            "José Núñez"
        );
        assert_eq!(decode(&encode("pingu\u{0308}ino")), "pingüino");
        // A mark with no composed form in WinAnsi stays visible.
        assert_eq!(encode("x\u{0301}"), b"x?");
    }

    #[test]
    fn ascii_then_anything() {
        assert_eq!(encode(""), b"");
        assert_eq!(encode("plain ASCII ~ text"), b"plain ASCII ~ text");
        assert_eq!(encode("e\u{0301}"), vec![0xE9]);
        assert_eq!(encode("Jose\u{0301}"), b"Jos\xE9");
        assert_eq!(encode("ab\u{0301}"), b"ab?");
        assert_eq!(encode("\u{0301}"), b"?");
        assert_eq!(encode("\nab"), b" ab");
        assert_eq!(encode("ab\tc"), b"ab c");
        assert_eq!(encode("año ñ"), b"a\xF1o \xF1");
    }

    #[test]
    fn controls_and_invisibles() {
        assert_eq!(encode("a\tb\r"), b"a b");
        assert_eq!(encode("a\u{200B}b\u{AD}c\u{FEFF}"), b"abc");
        assert_eq!(encode("10\u{202F}mg \u{2212}5"), b"10 mg -5");
    }

    #[test]
    fn high_table_is_windows_1252() {
        for &(c, b) in &HIGH {
            assert_eq!(encode_char(c), Some(b));
            assert!((0x80..=0x9F).contains(&b));
        }
        for b in 0xA0..=0xFFu32 {
            assert_eq!(encode_char(char::from_u32(b).unwrap()), Some(b as u8));
        }
    }
}
