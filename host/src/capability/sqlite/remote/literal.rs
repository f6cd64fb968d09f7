//! A statement with its parameters written into it as SQL literals: how a replica's deferred
//! transaction (`deferred`) sends several statements in one request, since the `libsql` crate's
//! batches take SQL text without parameters. Each value becomes the literal SQLite reads back as
//! the same value (an integer, a real, a quoted text with its quotes doubled, a blob as `X'…'`,
//! `NULL`), so nothing of a value is ever read as SQL. Only what can be written so exactly is:
//! otherwise (named parameters, a count that does not match, a non-finite real, a text holding
//! NUL, a second statement) the statement is left to run as it is, with its parameters.

use std::fmt::Write;

use crate::capability::sqlite::bindings::Value;

/// `statement` with `parameters` in place of its `?` and `?NNN`, without a trailing `;`; `None`
/// when it cannot be written exactly (see the module's documentation).
pub fn inline(statement: &str, parameters: &[Value]) -> Option<String> {
    let bytes = statement.as_bytes();
    let mut out = String::with_capacity(statement.len() + 16 * parameters.len());
    let mut copied = 0;
    let mut i = 0;
    let mut next_index = 0usize;
    let mut largest = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            quote @ (b'\'' | b'"' | b'`' | b'[') => {
                let close = if quote == b'[' { b']' } else { quote };
                i += 1;
                while i < bytes.len() && bytes[i] != close {
                    i += 1;
                }
                i += 1;
            }
            b'-' if bytes[i..].starts_with(b"--") => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes[i..].starts_with(b"/*") => {
                i += 2;
                while i < bytes.len() && !bytes[i..].starts_with(b"*/") {
                    i += 1;
                }
                i += 2;
            }
            b':' | b'@' | b'$' => return None,
            b';' => {
                if !only_blank(&statement[i + 1..]) {
                    return None;
                }
                break;
            }
            b'?' => {
                out.push_str(&statement[copied..i]);
                i += 1;
                let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
                let index = if digits == 0 {
                    next_index + 1
                } else {
                    statement[i..i + digits].parse().ok()?
                };
                i += digits;
                copied = i;
                next_index = next_index.max(index);
                largest = largest.max(index);
                let value = parameters.get(index.checked_sub(1)?)?;
                write_literal(&mut out, value)?;
                continue;
            }
            _ => i += 1,
        }
    }
    if largest != parameters.len() {
        return None;
    }
    out.push_str(&statement[copied..i.min(bytes.len())]);
    Some(out)
}

/// Whether `text` holds nothing but whitespace and comments.
fn only_blank(text: &str) -> bool {
    let mut rest = text.trim_start();
    loop {
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.split_once('\n').map_or("", |(_, r)| r).trim_start();
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r).trim_start();
        } else {
            return rest.is_empty();
        }
    }
}

/// Writes `value` as the SQLite literal that reads back as it (negative numbers in parentheses, so
/// that `x-?` does not become a comment).
fn write_literal(out: &mut String, value: &Value) -> Option<()> {
    match value {
        Value::Null => out.push_str("NULL"),
        Value::Integer(i64::MIN) => out.push_str("(-9223372036854775807-1)"),
        Value::Integer(n) if *n < 0 => write!(out, "({n})").ok()?,
        Value::Integer(n) => write!(out, "{n}").ok()?,
        // `{:?}` is the shortest text that reads back as the same double, always with a `.` or an
        // exponent, so SQLite reads a real.
        Value::Real(r) if !r.is_finite() => return None,
        Value::Real(r) if r.is_sign_negative() => write!(out, "({r:?})").ok()?,
        Value::Real(r) => write!(out, "{r:?}").ok()?,
        Value::Text(t) if t.contains('\0') => return None,
        Value::Text(t) => {
            out.push('\'');
            for (i, part) in t.split('\'').enumerate() {
                if i > 0 {
                    out.push_str("''");
                }
                out.push_str(part);
            }
            out.push('\'');
        }
        Value::Blob(b) => {
            // By table, not `write!`: a PDF's ~30 KB went through the formatter byte by byte (6%
            // of a replica node's CPU per create, `perf`).
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            out.reserve(b.len() * 2 + 3);
            out.push_str("X'");
            for byte in b {
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
            out.push('\'');
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    #[test]
    fn each_value_is_written_as_the_literal_sqlite_reads_back() {
        let sql = "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)";
        let values = [
            Value::Integer(-3),
            Value::Real(1.0),
            text("it's"),
            Value::Blob(vec![0, 0xff]),
            Value::Null,
            Value::Integer(i64::MIN),
        ];
        assert_eq!(
            inline(sql, &values).as_deref(),
            Some(
                "INSERT INTO t VALUES ((-3), 1.0, 'it''s', X'00FF', NULL, (-9223372036854775807-1))"
            )
        );
        assert_eq!(
            inline(
                "SELECT ?2, ?1, ?",
                &[Value::Integer(1), Value::Real(2.5e-9), text("")]
            )
            .as_deref(),
            Some("SELECT 2.5e-9, 1, ''")
        );
    }

    #[test]
    fn question_marks_in_quotes_and_comments_are_not_parameters() {
        let sql = "SELECT '?', \"a?\", [b?] -- ?\n /* ? */ FROM t WHERE x = ?;";
        assert_eq!(
            inline(sql, &[Value::Integer(7)]).as_deref(),
            Some("SELECT '?', \"a?\", [b?] -- ?\n /* ? */ FROM t WHERE x = 7")
        );
        assert_eq!(
            inline("UPDATE t SET a = a-?", &[Value::Integer(-1)]).as_deref(),
            Some("UPDATE t SET a = a-(-1)")
        );
    }

    #[test]
    fn what_cannot_be_written_exactly_is_left_alone() {
        assert_eq!(inline("SELECT :a", &[Value::Integer(1)]), None);
        assert_eq!(inline("SELECT ?", &[]), None);
        assert_eq!(inline("SELECT 1", &[Value::Integer(1)]), None);
        assert_eq!(inline("SELECT ?", &[Value::Real(f64::NAN)]), None);
        assert_eq!(inline("SELECT ?", &[text("a\0b")]), None);
        assert_eq!(inline("SELECT 1; SELECT 2", &[]), None);
        assert_eq!(
            inline("SELECT 1; -- done", &[]).as_deref(),
            Some("SELECT 1")
        );
    }
}
