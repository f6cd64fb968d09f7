//! A migration file's statements, one by one: Spin's SQLite interface runs one statement per
//! `execute`. A `;` ends a statement unless it is inside a string, a quoted name, a comment, or the
//! body of a `CREATE TRIGGER` (which ends at `END;`), the rules of SQLite's own
//! `sqlite3_complete`. Each statement starts at its first word (leading comments dropped) and
//! leaves out its `;`.

/// The statements of `sql`, in order.
pub fn statements(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let mut found = Vec::new();
    let mut start: Option<usize> = None;
    let mut words = 0;
    let mut creates = false;
    let mut trigger = false;
    let mut last_word_is_end = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\'' | b'"' | b'`' | b'[' => {
                start.get_or_insert(i);
                last_word_is_end = false;
                i = match b {
                    b'[' => skip_to(bytes, i + 1, b"]"),
                    quote => skip_quoted(bytes, i, quote),
                };
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = skip_to(bytes, i + 2, b"\n"),
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = skip_to(bytes, i + 2, b"*/"),
            b';' => {
                if let Some(s) = start
                    && (!trigger || last_word_is_end)
                {
                    found.push(sql[s..i].trim_end());
                    start = None;
                    words = 0;
                    trigger = false;
                }
                last_word_is_end = false;
                i += 1;
            }
            _ if b.is_ascii_alphanumeric() || b == b'_' => {
                let begin = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let word = &sql[begin..i];
                start.get_or_insert(begin);
                words += 1;
                // CREATE [TEMP | TEMPORARY] TRIGGER (not `DROP TRIGGER`, which has no body)
                if words == 1 {
                    creates = word.eq_ignore_ascii_case("CREATE");
                }
                if creates && words <= 3 && word.eq_ignore_ascii_case("TRIGGER") {
                    trigger = true;
                }
                last_word_is_end = word.eq_ignore_ascii_case("END");
                continue;
            }
            _ => {
                if !b.is_ascii_whitespace() {
                    start.get_or_insert(i);
                    last_word_is_end = false;
                }
                i += 1;
            }
        }
    }
    if let Some(s) = start {
        let rest = sql[s..].trim_end();
        if !rest.is_empty() {
            found.push(rest);
        }
    }
    found
}

/// The index after the quote that closes the one at `open` (a doubled quote is an escaped one).
fn skip_quoted(bytes: &[u8], open: usize, quote: u8) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// The index after the first `end` at or after `from` (the end of the text if none).
fn skip_to(bytes: &[u8], from: usize, end: &[u8]) -> usize {
    bytes[from.min(bytes.len())..]
        .windows(end.len())
        .position(|w| w == end)
        .map_or(bytes.len(), |p| from + p + end.len())
}

#[cfg(test)]
mod tests {
    use super::statements;

    #[test]
    fn semicolons_in_strings_names_and_comments_do_not_split() {
        let sql = "-- a; comment\nCREATE TABLE t (a TEXT DEFAULT 'x;y', \"b;\" INT, [c;] INT); /* ; */\n\
                   INSERT INTO t (a) VALUES ('it''s; fine');\n";
        assert_eq!(
            statements(sql),
            [
                "CREATE TABLE t (a TEXT DEFAULT 'x;y', \"b;\" INT, [c;] INT)",
                "INSERT INTO t (a) VALUES ('it''s; fine')",
            ]
        );
    }

    #[test]
    fn a_trigger_body_ends_at_end() {
        let sql = "CREATE TRIGGER IF NOT EXISTS t_never BEFORE UPDATE ON t\nBEGIN\n    \
                   SELECT RAISE(ABORT, 'no; never');\n    SELECT 1;\nEND;\nCREATE INDEX i ON t (a);";
        let found = statements(sql);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("CREATE TRIGGER") && found[0].ends_with("END"));
        assert_eq!(found[1], "CREATE INDEX i ON t (a)");
    }

    #[test]
    fn a_dropped_trigger_has_no_body() {
        let sql = "DROP TRIGGER t_never;\nCREATE TRIGGER t_never BEFORE UPDATE ON t\nBEGIN\n    \
                   SELECT 1;\nEND;\nDROP TABLE u;";
        let found = statements(sql);
        assert_eq!(found.len(), 3, "{found:?}");
        assert_eq!(found[0], "DROP TRIGGER t_never");
        assert!(found[1].starts_with("CREATE TRIGGER") && found[1].ends_with("END"));
        assert_eq!(found[2], "DROP TABLE u");
    }

    #[test]
    fn a_last_statement_without_semicolon_and_trailing_comments() {
        assert_eq!(statements("SELECT 1;\nSELECT 2"), ["SELECT 1", "SELECT 2"]);
        assert_eq!(statements("SELECT 1; -- done\n"), ["SELECT 1"]);
        assert!(statements("-- only a comment\n").is_empty());
    }
}
