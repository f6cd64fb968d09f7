//! Writers of this host take turns, whichever backend serves the database: a FIFO lock per
//! database, held from a connection's first writing statement (`BEGIN` included) until it is back
//! in autocommit mode.
//!
//! Locally, instead of meeting in SQLite's busy handler, which sleeps 1, 2, 5, 10 … 100 ms between
//! tries (with 8 concurrent creates that made the p99 ~0.8 s, `cargo xtask bench`); remotely,
//! before they reach the server (sqld 0.24 wedged with 8 of one node's writers waiting in it at
//! once; docs/scale-out.md). A turn not given in time lets the statement go anyway, and the
//! database's own locking applies, as it does for another process or node.
//!
//! Which statement writes is decided here, once, from its text ([`writes`]): both backends use it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::capability::sqlite::semantics::starts_with_keyword;

/// A database's writers on this host, shared by all its connections.
#[derive(Clone, Default)]
pub struct Writers(Arc<Mutex<()>>);

/// One connection's turn to write, if it holds it.
#[derive(Default)]
pub struct Turn(Option<OwnedMutexGuard<()>>);

impl Turn {
    /// Whether this connection holds its database's writer turn.
    pub fn held(&self) -> bool {
        self.0.is_some()
    }

    /// Before `statement` runs on a connection outside a transaction (`autocommit`): when it takes
    /// the write lock ([`takes_write_lock`]), waits up to `wait` for the turn.
    pub async fn before(
        &mut self,
        writers: &Writers,
        statement: &str,
        autocommit: bool,
        wait: Duration,
    ) {
        if self.0.is_none() && autocommit && takes_write_lock(statement) {
            self.0 = tokio::time::timeout(wait, writers.0.clone().lock_owned())
                .await
                .ok();
        }
    }

    /// Waits for the turn however long it takes (a migration batch).
    pub async fn take(&mut self, writers: &Writers) {
        if self.0.is_none() {
            self.0 = Some(writers.0.clone().lock_owned().await);
        }
    }

    /// After a statement: the turn ends with the transaction.
    pub fn after(&mut self, autocommit: bool) {
        if autocommit {
            self.0 = None;
        }
    }
}

/// Whether `statement`, run outside a transaction, takes the database's write lock: a write
/// ([`writes`]), or a `BEGIN` (always run as `BEGIN IMMEDIATE`) or `SAVEPOINT` that opens a
/// transaction.
pub fn takes_write_lock(statement: &str) -> bool {
    writes(statement) || starts_with_keyword(statement, &["BEGIN", "SAVEPOINT"])
}

/// Whether `statement` writes: its verb (after a `WITH …` clause, the verb of the statement the
/// clause belongs to) is `INSERT`, `UPDATE`, `DELETE` or `REPLACE`; or it changes the schema or the
/// file (`CREATE`, `DROP`, `ALTER`, `VACUUM`, `REINDEX`, `ANALYZE`). A `PRAGMA` is not: a
/// connection's own setting (a log-grade `synchronous = NORMAL`) must not wait for the writers.
pub fn writes(statement: &str) -> bool {
    const WRITES: [&str; 10] = [
        "INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER", "VACUUM", "REINDEX",
        "ANALYZE",
    ];
    let verb = verb(statement);
    WRITES.iter().any(|w| verb.eq_ignore_ascii_case(w))
}

/// The statement's verb: its first word, or for a `WITH` clause the first word after it (outside
/// parentheses and quotes) that begins a statement.
fn verb(statement: &str) -> &str {
    let mut words = TopLevelWords::new(statement);
    let first = words.next().unwrap_or("");
    if !first.eq_ignore_ascii_case("WITH") {
        return first;
    }
    const MAIN: [&str; 6] = ["SELECT", "VALUES", "INSERT", "UPDATE", "DELETE", "REPLACE"];
    words
        .find(|w| MAIN.iter().any(|m| w.eq_ignore_ascii_case(m)))
        .unwrap_or(first)
}

/// The words of a statement outside parentheses, string literals and quoted identifiers.
struct TopLevelWords<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> TopLevelWords<'a> {
    fn new(text: &'a str) -> Self {
        Self { text, at: 0 }
    }
}

impl<'a> Iterator for TopLevelWords<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        while self.at < bytes.len() {
            let b = bytes[self.at];
            match b {
                b'(' => depth += 1,
                b')' => depth = depth.saturating_sub(1),
                b'\'' | b'"' | b'`' | b'[' => {
                    let close = if b == b'[' { b']' } else { b };
                    self.at += 1;
                    while self.at < bytes.len() && bytes[self.at] != close {
                        self.at += 1;
                    }
                }
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
    fn writes_are_told_from_reads_by_their_verb() {
        assert!(!writes("SELECT x FROM t WHERE x = ?"));
        assert!(!writes(" values (1)"));
        assert!(writes("INSERT INTO t VALUES (1)"));
        assert!(writes("update t SET a = 1"));
        assert!(writes("REPLACE INTO t VALUES (1)"));
        assert!(writes("CREATE TABLE t (x)"));
        assert!(!writes("PRAGMA synchronous = NORMAL"));
        assert!(
            !writes("BEGIN IMMEDIATE"),
            "a transaction's start, not a write"
        );
    }

    #[test]
    fn a_with_clause_is_read_to_the_statement_it_belongs_to() {
        assert!(!writes("WITH x AS (SELECT 1) SELECT * FROM x"));
        assert!(writes(
            "WITH due AS (SELECT id FROM outbox WHERE a < ?) INSERT INTO done SELECT id FROM due"
        ));
        assert!(writes(
            "with recursive n(i) as (select 1 union all select i + 1 from n where i < 3) \
             delete from t where x in n"
        ));
        // Keywords inside the clause's parentheses or quotes are not the verb.
        assert!(!writes(
            "WITH \"insert\" AS (SELECT 'delete' AS d) SELECT d FROM \"insert\""
        ));
        assert!(writes("WITH a(x) AS (VALUES ('(')) UPDATE t SET y = 1"));
    }

    #[test]
    fn transactions_and_writes_take_the_turn() {
        assert!(takes_write_lock("BEGIN"));
        assert!(takes_write_lock(" begin immediate"));
        assert!(takes_write_lock("SAVEPOINT s"));
        assert!(takes_write_lock("DELETE FROM t"));
        assert!(takes_write_lock(
            "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x"
        ));
        assert!(!takes_write_lock("SELECT 1"));
        assert!(!takes_write_lock("COMMIT"));
    }

    #[tokio::test]
    async fn the_turn_is_held_until_the_transaction_ends() {
        let writers = Writers::default();
        let (mut a, mut b) = (Turn::default(), Turn::default());
        let wait = Duration::from_millis(20);
        a.before(&writers, "BEGIN", true, wait).await;
        assert!(a.held());
        a.after(false);
        assert!(a.held(), "still in the transaction");
        b.before(&writers, "INSERT INTO t VALUES (1)", true, wait)
            .await;
        assert!(
            !b.held(),
            "not given in time: the statement goes ahead anyway"
        );
        b.before(&writers, "SELECT 1", true, wait).await;
        assert!(!b.held(), "a read takes no turn");
        a.after(true);
        assert!(!a.held());
        b.before(&writers, "INSERT INTO t VALUES (1)", true, wait)
            .await;
        assert!(b.held());
    }
}
