//! The characters stored text may not carry, and how text already stored with them is shown.
//!
//! A name, a presentation or an instruction reaches a PDF, the patient's page and a pharmacy's
//! screen. NUL and the other C0/C1 control characters have no business there, and the Unicode
//! bidirectional formatting characters (U+202A-U+202E, U+2066-U+2069) can make text *display* as
//! something else (the "Trojan Source" trick, CVE-2021-42574): a presentation that reads as another
//! drug's name. Every text field the API stores refuses them (`refused`); line breaks and tabs stay
//! allowed in the fields that are multi-line by nature (`MULTILINE`). Rows stored before the rule
//! are not rewritten: `visible` shows such a character as U+FFFD instead of obeying it.

/// The fields whose text may span lines: line breaks (`\n`, `\r`) and tabs are allowed in them.
pub const MULTILINE: [&str; 11] = [
    "instructions",
    "diagnosis",
    "extras",
    "notes",
    "address",
    "reason",
    "reason_of_rejected",
    "antibiotic_repeat_reason",
    // A PEM certificate (a medic's e.firma) is lines of base64.
    "certificate",
    // A prescriber's CMS signature in base64 (`openssl base64` wraps it in lines).
    "cms",
    // Addresses separated by commas, spaces or line breaks (resend's copies).
    "cc",
];

/// Whether `c` is a bidirectional formatting character (embeddings, overrides, isolates).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` may appear in stored text; `multiline` allows line breaks and tabs.
fn allowed(c: char, multiline: bool) -> bool {
    if is_bidi_control(c) {
        return false;
    }
    if c.is_control() {
        return multiline && matches!(c, '\n' | '\r' | '\t');
    }
    true
}

/// The one sentence refusing `s`, naming its first character that stored text may not carry;
/// `None` when `s` is fine.
pub fn refused(s: &str, multiline: bool) -> Option<String> {
    let c = s.chars().find(|&c| !allowed(c, multiline))?;
    let code = format!("U+{:04X}", c as u32);
    Some(if is_bidi_control(c) {
        format!(
            "The bidirectional formatting character {code} is not allowed: it can make text display as something else."
        )
    } else if matches!(c, '\n' | '\r' | '\t') {
        format!("Line breaks and tabs ({code}) are not allowed in this field.")
    } else {
        format!("The control character {code} is not allowed.")
    })
}

/// The field that carries a scanned GS1 element string, whose variable-length values end at the
/// group separator U+001D (FNC1): allowed there, and only there. It is parsed, never stored.
pub const GS1_FIELD: &str = "gs1";

/// `refused` for the field named `field`: multi-line when it is one of `MULTILINE`; in
/// `GS1_FIELD`, U+001D is allowed.
pub fn refused_in(field: &str, s: &str) -> Option<String> {
    if field == GS1_FIELD {
        return refused(&s.replace('\u{1d}', ""), false);
    }
    refused(s, MULTILINE.contains(&field))
}

/// Text as shown to a person: a character `refused` would refuse (but line breaks and tabs) is
/// replaced by U+FFFD, so stored text shows it is there instead of obeying it.
pub fn visible(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().all(|c| allowed(c, true)) {
        return std::borrow::Cow::Borrowed(s);
    }
    s.chars()
        .map(|c| if allowed(c, true) { c } else { '\u{FFFD}' })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_accented_text_passes() {
        assert_eq!(refused("Amoxicilina 500 mg, cápsulas Ñ 東京", false), None);
        assert_eq!(refused("Tomar 1\ncada 8 h\tcon agua\r\n", true), None);
    }

    #[test]
    fn nul_and_c0_c1_controls_are_named() {
        assert_eq!(
            refused("a\0b", true).unwrap(),
            "The control character U+0000 is not allowed."
        );
        assert!(refused("x\u{1B}[31m", true).unwrap().contains("U+001B"));
        assert!(refused("x\u{85}", true).unwrap().contains("U+0085"));
        assert!(refused("x\u{7F}", false).unwrap().contains("U+007F"));
    }

    #[test]
    fn line_breaks_only_in_multiline_fields() {
        assert!(refused("a\nb", false).unwrap().contains("U+000A"));
        assert!(refused("a\tb", false).unwrap().contains("U+0009"));
        assert_eq!(refused_in("instructions", "a\nb"), None);
        assert!(refused_in("name", "a\nb").is_some());
    }

    #[test]
    fn bidi_overrides_and_isolates_are_refused_everywhere() {
        for c in ['\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}'] {
            let s = format!("Paracetamol{c}lonazepam");
            let message = refused(&s, true).unwrap();
            assert!(
                message.contains(&format!("U+{:04X}", c as u32)),
                "{message}"
            );
            assert!(message.starts_with("The bidirectional"));
        }
        // Marks that only set direction (LRM/RLM) are ordinary text.
        assert_eq!(refused("a\u{200E}b", false), None);
    }

    #[test]
    fn visible_replaces_what_is_refused_and_keeps_line_breaks() {
        assert_eq!(visible("ok\ntab\t"), "ok\ntab\t");
        assert_eq!(visible("a\0b\u{202E}c"), "a\u{FFFD}b\u{FFFD}c");
        assert!(matches!(visible("plain"), std::borrow::Cow::Borrowed(_)));
    }
}
