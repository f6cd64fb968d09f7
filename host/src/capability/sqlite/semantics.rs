//! What both backends share, so a guest sees one behaviour whichever serves its database.

use std::time::Duration;

use crate::capability::sqlite::bindings::{Error, QueryResult, Value};

/// Spin's cap on a buffered query result.
pub const MAX_RESULT_BYTES: usize = 128 * 1024 * 1024;
/// How long a statement waits for another connection's write lock (locally), or for a libSQL
/// server's answer (remotely) before it fails with `io`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the first word of `statement` (its leading ASCII letters) is one of `keywords`, in any
/// case: how both backends classify a statement without parsing it.
pub fn starts_with_keyword(statement: &str, keywords: &[&str]) -> bool {
    let first = statement
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("");
    keywords.iter().any(|k| first.eq_ignore_ascii_case(k))
}

/// The words of a short statement (`BEGIN …`, `COMMIT`, …) in upper case, without a trailing `;`.
pub fn upper_words(statement: &str) -> Vec<String> {
    statement
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_ascii_uppercase)
        .collect()
}

/// The result of a statement that returns no rows.
pub fn no_rows() -> QueryResult {
    QueryResult {
        columns: Vec::new(),
        rows: Vec::new(),
    }
}

/// Whether `statement` sets `PRAGMA busy_timeout` (`= n` or `(n)`): how long SQLite waits for
/// another connection's lock. `Connection::execute` answers it without applying it on either
/// backend: this host's writer turns make a writer wait for the lock in turn (up to
/// [`BUSY_TIMEOUT`]), and a libSQL server waits by its own rules (`common::db` sets it around each
/// `BEGIN IMMEDIATE` for Spin's sake).
pub fn is_busy_timeout(statement: &str) -> bool {
    // Every statement passes here: most are not a PRAGMA, and are let through without allocating.
    if !starts_with_keyword(statement, &["PRAGMA"]) {
        return false;
    }
    let words = upper_words(statement).concat();
    let name = words.strip_prefix("PRAGMA").unwrap_or(&words);
    let name = name.strip_prefix("MAIN.").unwrap_or(name);
    name.strip_prefix("BUSY_TIMEOUT")
        .is_some_and(|value| value.starts_with(['=', '(']))
}

/// `BEGIN`, `BEGIN DEFERRED`, `BEGIN TRANSACTION`, ... → `BEGIN IMMEDIATE`, so that a transaction
/// takes the write lock up front and waits for it instead of failing with "database is locked"
/// when two requests write concurrently. Guests meant to also run on Spin should write
/// `BEGIN IMMEDIATE` themselves.
pub fn upgrade_begin(statement: &str) -> Option<&'static str> {
    matches!(begin_mode(statement), Some(Mode::Default | Mode::Deferred))
        .then_some("BEGIN IMMEDIATE")
}

/// Whether `statement` opens a plain transaction: `BEGIN`, with `DEFERRED` or `IMMEDIATE` or
/// neither, with or without `TRANSACTION` (not `BEGIN EXCLUSIVE`).
pub fn opens_plain_transaction(statement: &str) -> bool {
    begin_mode(statement).is_some()
}

/// The mode a plain `BEGIN` names.
enum Mode {
    Default,
    Deferred,
    Immediate,
}

fn begin_mode(statement: &str) -> Option<Mode> {
    // Every statement passes here: most are not a BEGIN, and are let through without allocating.
    if !starts_with_keyword(statement, &["BEGIN"]) {
        return None;
    }
    let words = upper_words(statement);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["BEGIN"] | ["BEGIN", "TRANSACTION"] => Some(Mode::Default),
        ["BEGIN", "DEFERRED"] | ["BEGIN", "DEFERRED", "TRANSACTION"] => Some(Mode::Deferred),
        ["BEGIN", "IMMEDIATE"] | ["BEGIN", "IMMEDIATE", "TRANSACTION"] => Some(Mode::Immediate),
        _ => None,
    }
}

/// Whether `statement` holds a second statement after its first `;` (anything but whitespace and
/// comments), which `execute` refuses as Spin's rusqlite does ("Multiple statements provided")
/// instead of running only the first. Quotes (`'…'`, `"…"`, `` `…` ``, `[…]`) and comments are
/// skipped; a `CREATE TRIGGER`, whose body holds `;`s, is left to SQLite.
pub fn more_than_one_statement(statement: &str) -> bool {
    if !statement.contains(';') || starts_with_create_trigger(statement) {
        return false;
    }
    let bytes = statement.as_bytes();
    let mut i = 0;
    let mut ended = false;
    while i < bytes.len() {
        let c = bytes[i];
        let closing = match c {
            b'\'' | b'"' | b'`' => Some(c),
            b'[' => Some(b']'),
            _ => None,
        };
        if let Some(close) = closing {
            if ended {
                return true;
            }
            i += 1;
            while i < bytes.len() && bytes[i] != close {
                i += 1;
            }
            i += 1;
        } else if bytes[i..].starts_with(b"--") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            i += 2;
            while i < bytes.len() && !bytes[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
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

fn starts_with_create_trigger(statement: &str) -> bool {
    let mut words = statement
        .split_ascii_whitespace()
        .map(str::to_ascii_uppercase);
    words.next().as_deref() == Some("CREATE") && words.take(2).any(|w| w == "TRIGGER")
}

/// A buffered result's size, counted row by row against [`MAX_RESULT_BYTES`] (16 bytes a value,
/// plus a text's or blob's length), the same way on both backends.
#[derive(Default)]
pub struct ResultBudget {
    bytes: usize,
}

impl ResultBudget {
    /// Counts one row; `io` once the result is over the cap.
    pub fn add(&mut self, values: &[Value]) -> Result<(), Error> {
        self.bytes += values
            .iter()
            .map(|value| {
                16 + match value {
                    Value::Text(t) => t.len(),
                    Value::Blob(b) => b.len(),
                    _ => 0,
                }
            })
            .sum::<usize>();
        if self.bytes > MAX_RESULT_BYTES {
            return Err(Error::Io(format!(
                "query result exceeds limit of {MAX_RESULT_BYTES} bytes"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_timeout_pragmas_are_told_apart() {
        assert!(is_busy_timeout("PRAGMA busy_timeout = 0"));
        assert!(is_busy_timeout("pragma BUSY_TIMEOUT=5000;"));
        assert!(is_busy_timeout("PRAGMA busy_timeout(100)"));
        assert!(is_busy_timeout("PRAGMA main.busy_timeout = 1"));
        assert!(!is_busy_timeout("PRAGMA busy_timeout"));
        assert!(!is_busy_timeout("PRAGMA synchronous = NORMAL"));
        assert!(!is_busy_timeout("SELECT 'PRAGMA busy_timeout'"));
    }

    #[test]
    fn a_second_statement_is_seen_past_quotes_and_comments() {
        assert!(more_than_one_statement("SELECT 1; SELECT 2"));
        assert!(more_than_one_statement("SELECT 1;SELECT 2;"));
        assert!(!more_than_one_statement("SELECT 1"));
        assert!(!more_than_one_statement("SELECT 1;  "));
        assert!(!more_than_one_statement(
            "SELECT 1; -- done\n /* really */ "
        ));
        assert!(!more_than_one_statement(
            "SELECT ';x' AS \"a;b\", [c;d] FROM t"
        ));
        assert!(!more_than_one_statement(
            "CREATE TRIGGER t AFTER INSERT ON a BEGIN SELECT 1; END"
        ));
        assert!(more_than_one_statement("SELECT 1; 'x'"));
    }

    #[test]
    fn begin_is_immediate() {
        assert_eq!(upgrade_begin(" begin ;"), Some("BEGIN IMMEDIATE"));
        assert_eq!(upgrade_begin("BEGIN TRANSACTION"), Some("BEGIN IMMEDIATE"));
        assert_eq!(upgrade_begin("BEGIN EXCLUSIVE"), None);
        assert_eq!(upgrade_begin("BEGIN IMMEDIATE"), None);
        assert_eq!(upgrade_begin("SELECT 1"), None);
        assert_eq!(upgrade_begin("beginning"), None);
        assert_eq!(upgrade_begin("é"), None);
    }

    #[test]
    fn only_plain_transactions_are_held_back() {
        assert!(opens_plain_transaction("BEGIN"));
        assert!(opens_plain_transaction("begin immediate;"));
        assert!(opens_plain_transaction("BEGIN DEFERRED TRANSACTION"));
        assert!(!opens_plain_transaction("BEGIN EXCLUSIVE"));
        assert!(!opens_plain_transaction("SAVEPOINT s"));
    }
}
