//! HTML text escaping, shared by the landing page and the email body.

/// Escapes text for HTML element content and quoted attribute values. A character stored text may
/// not carry (a control character, a bidirectional override: `crate::text`) shows as U+FFFD.
pub fn escape(s: &str) -> String {
    let s = crate::text::visible(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_markup_and_quotes_keeps_the_rest() {
        assert_eq!(
            escape(r#"<script>alert('x') & "y"</script>"#),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
        assert_eq!(escape("Ñandú 東京"), "Ñandú 東京");
    }

    #[test]
    fn shows_controls_and_bidi_overrides_instead_of_obeying_them() {
        assert_eq!(
            escape("Para\u{202E}cetamol\0"),
            "Para\u{FFFD}cetamol\u{FFFD}"
        );
        assert_eq!(escape("línea 1\nlínea 2"), "línea 1\nlínea 2");
    }
}
