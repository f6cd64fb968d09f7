//! The statement's text read as SQLite's tokenizer would, as far as the host needs: its words
//! outside parentheses, quotes and comments, and whether a second statement follows the first.

/// Whether `text` holds a second statement after its first `;` ([`Statement::multiple`]). Quotes (`'…'`, `"…"`, `` `…` ``, `[…]`) and comments are skipped.
pub fn more_than_one_statement(text: &str) -> bool {
    if !text.contains(';') || starts_with_create_trigger(text) {
        return false;
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut ended = false;
    while i < bytes.len() {
        let c = bytes[i];
        if let Some(after) = skip_quoted_or_comment(bytes, i) {
            if ended && !matches!(c, b'-' | b'/') {
                return true;
            }
            i = after;
        } else if c == b';' {
            ended = true;
            i += 1;
        } else {
            if ended && !c.is_ascii_whitespace() {
                return true;
            }
            i += 1;
        }
    }
    false
}

fn starts_with_create_trigger(text: &str) -> bool {
    let mut words = text.split_ascii_whitespace();
    words
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("CREATE"))
        && words.take(2).any(|w| w.eq_ignore_ascii_case("TRIGGER"))
}

/// Where a quoted text or a comment that starts at `i` ends (past its close), if one starts there.
fn skip_quoted_or_comment(bytes: &[u8], i: usize) -> Option<usize> {
    let until = |from: usize, end: &[u8]| {
        let mut j = from;
        while j < bytes.len() && !bytes[j..].starts_with(end) {
            j += 1;
        }
        (j + end.len()).min(bytes.len())
    };
    match bytes[i] {
        b'\'' | b'"' | b'`' => Some(until(i + 1, &[bytes[i]])),
        b'[' => Some(until(i + 1, b"]")),
        b'-' if bytes[i..].starts_with(b"--") => Some(until(i + 2, b"\n")),
        b'/' if bytes[i..].starts_with(b"/*") => Some(until(i + 2, b"*/")),
        _ => None,
    }
}

/// The words of a statement outside parentheses, quotes and comments.
pub struct Words<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Words<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        while self.at < bytes.len() {
            if let Some(after) = skip_quoted_or_comment(bytes, self.at) {
                self.at = after;
                continue;
            }
            let b = bytes[self.at];
            match b {
                b'(' => depth += 1,
                b')' => depth = depth.saturating_sub(1),
                _ if depth == 0 && b.is_ascii_alphabetic() => {
                    let start = self.at;
                    while self.at < bytes.len()
                        && (bytes[self.at].is_ascii_alphanumeric() || bytes[self.at] == b'_')
                    {
                        self.at += 1;
                    }
                    return Some(&self.text[start..self.at]);
                }
                _ => {}
            }
            self.at += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_statement_is_seen_past_quotes_and_comments() {
        let multiple = more_than_one_statement;
        assert!(multiple("SELECT 1; SELECT 2"));
        assert!(multiple("SELECT 1;SELECT 2;"));
        assert!(!multiple("SELECT 1"));
        assert!(!multiple("SELECT 1;  "));
        assert!(!multiple("SELECT 1; -- done\n /* really */ "));
        assert!(!multiple("SELECT ';x' AS \"a;b\", [c;d] FROM t"));
        assert!(!multiple(
            "CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END"
        ));
        assert!(multiple("SELECT 1; 'x'"));
    }

    #[test]
    fn words_skip_comments_quotes_and_parentheses() {
        let words: Vec<&str> =
            Words::new("/* x */ WITH a(\"b\") AS (SELECT 1) -- y\n 'z' DELETE").collect();
        assert_eq!(words, ["WITH", "a", "AS", "DELETE"]);
    }
}
