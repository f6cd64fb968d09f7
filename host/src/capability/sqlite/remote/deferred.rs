//! A replica connection's transaction, held back until it must reach the primary (this host's
//! extension, replicas only; docs/scale-out.md, "Round trips"). Through the crate's write
//! delegation every statement is one request to the primary. A guest's `BEGIN`, and the writes it
//! marks as *batched* (a trailing [`BATCHED`] comment: writes whose failure it does not handle on
//! its own, `common::db::Db::execute_batched`), need no answer before the next statement, so:
//!
//! - `BEGIN` is answered at once and sent with what follows;
//! - a batched write that returns no rows is answered at once (no rows, as it would be) and kept,
//!   its parameters written in as literals (`literal`);
//! - anything else that needs the server (a read, an unmarked write, a write with `RETURNING`)
//!   first sends what was kept ([`Deferred::flush`]): the first time as
//!   `BEGIN DEFERRED` and the kept writes in one request (a deferred `BEGIN` cannot fail for a
//!   lock, and the first kept write takes the write lock, as `BEGIN IMMEDIATE` would have);
//! - `COMMIT` sends what is kept, then `COMMIT`; a transaction never sent (only kept writes) goes
//!   as one transactional batch (each statement only if the one before succeeded, then `COMMIT`, or
//!   `ROLLBACK` if anything failed).
//!
//! A kept write's error is told at the next call that reaches the server, not at its own: the
//! transaction is then doomed, and its `COMMIT` rolls it back and answers that error, so a
//! transaction with a failed statement never commits. An unmarked statement keeps SQLite's
//! behaviour exactly (its own error, at once), which is why the mark is the guest's to give.

use std::future::Future;
use std::time::{Duration, Instant};

use libsql::Connection;

use crate::capability::sqlite::bindings::Value;
use crate::capability::sqlite::remote::literal;
use crate::capability::sqlite::statement::{Kind, Statement};

/// The transaction a guest opened on a replica connection, as far as the server has seen it.
#[derive(Default)]
pub struct Deferred {
    /// Whether `BEGIN` was sent.
    begun: bool,
    /// Writes answered but not sent yet, with their parameters as literals.
    kept: Vec<String>,
    /// The error of a kept statement, told once; the transaction cannot commit.
    doomed: Option<String>,
}

/// What to do with a statement inside a deferred transaction.
pub enum Step {
    /// Answered at once; sent later.
    Kept,
    /// Ends the transaction: see [`Deferred::commit`].
    Commit,
    /// Ends the transaction without a word to the server if it has not begun there.
    Rollback,
    /// Needs the server: flush, then run it.
    Send,
}

impl Deferred {
    /// Sorts `statement`: a batched write that returns no rows is kept (its parameters written in).
    pub fn step(&mut self, statement: &Statement, parameters: &[Value]) -> Step {
        match statement.kind() {
            Kind::Commit { plain: true } => return Step::Commit,
            Kind::Rollback { plain: true } => return Step::Rollback,
            Kind::Write { returning: false } if statement.batched() => {}
            _ => return Step::Send,
        }
        match literal::inline(statement.text(), parameters) {
            Some(sql) => {
                self.kept.push(sql);
                Step::Kept
            }
            None => Step::Send,
        }
    }

    /// Opens the transaction on the server if it was not yet, and sends the kept statements. An
    /// error (`BEGIN`'s, or a kept statement's, which dooms the transaction) is returned as the
    /// client's text. The first request, which opens the transaction, is tried again until
    /// `deadline` while the server answers "database is locked": the guest has seen nothing of
    /// this transaction from the server yet, and a failed try is rolled back.
    pub async fn flush(&mut self, conn: &Connection, deadline: Instant) -> Result<(), String> {
        if let Some(doomed) = &self.doomed {
            return Err(doomed.clone());
        }
        if !self.begun {
            let script = std::iter::once("BEGIN DEFERRED".to_string())
                .chain(self.kept.iter().cloned())
                .collect::<Vec<_>>()
                .join(";\n");
            let first = if self.kept.is_empty() {
                retried(deadline, || conn.execute("BEGIN IMMEDIATE", ())).await
            } else {
                retried(deadline, || async {
                    let sent = conn.execute_batch(&script).await;
                    if sent.is_err() && !conn.is_autocommit() {
                        let _ = conn.execute("ROLLBACK", ()).await;
                    }
                    sent
                })
                .await
            };
            self.begun = first.is_ok() || !conn.is_autocommit();
            self.kept.clear();
            if let Err(e) = first {
                self.doomed = Some(e.clone());
                return Err(e);
            }
            return Ok(());
        }
        if self.kept.is_empty() {
            return Ok(());
        }
        let script = std::mem::take(&mut self.kept).join(";\n");
        if let Err(e) = conn.execute_batch(&script).await {
            let e = e.to_string();
            self.doomed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Commits: a transaction not begun on the server sends its kept statements as one
    /// transactional batch (nothing at all if there are none; tried again until `deadline` while
    /// the server answers "database is locked", since the batch then ran nothing); one that has
    /// begun sends what is kept, then `COMMIT`. A doomed one is rolled back and answers its error.
    /// On an error the transaction is over either way (rolled back), unlike SQLite's, which stays
    /// open after a failed `COMMIT`; the guest's `ROLLBACK` after it is answered without the
    /// server.
    pub async fn commit(&mut self, conn: &Connection, deadline: Instant) -> Result<(), String> {
        if !self.begun && self.doomed.is_none() {
            if self.kept.is_empty() {
                return Ok(());
            }
            let script = self.kept.join(";\n");
            return retried(deadline, || conn.execute_transactional_batch(&script)).await;
        }
        let result = match self.flush(conn, deadline).await {
            Ok(()) => conn
                .execute("COMMIT", ())
                .await
                .map(drop)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        if result.is_err() && !conn.is_autocommit() {
            let _ = conn.execute("ROLLBACK", ()).await;
        }
        result
    }

    /// Whether the server holds the transaction open (a `ROLLBACK` must reach it).
    pub fn begun(&self) -> bool {
        self.begun
    }
}

/// Runs `send` until the server answers something else than "database is locked" (which means it
/// ran nothing), or `deadline` passes; the error as the client's text.
async fn retried<T, F: Future<Output = libsql::Result<T>>>(
    deadline: Instant,
    mut send: impl FnMut() -> F,
) -> Result<(), String> {
    let mut pause = Duration::from_millis(5);
    loop {
        match send().await {
            Ok(_) => return Ok(()),
            Err(e) => {
                let e = e.to_string();
                if !e.contains("database is locked") || Instant::now() + pause >= deadline {
                    return Err(e);
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::sqlite::statement::BATCHED;

    #[test]
    fn batched_writes_are_kept_with_their_values() {
        let mut tx = Deferred::default();
        let marked = format!("INSERT INTO t VALUES (?) {BATCHED}");
        assert!(matches!(
            tx.step(&Statement::parse(marked), &[Value::Text("a'b".into())]),
            Step::Kept
        ));
        assert_eq!(
            tx.kept,
            [format!("INSERT INTO t VALUES ('a''b') {BATCHED}")]
        );
        // An unmarked write keeps its own error: it is sent at once.
        assert!(matches!(
            tx.step(
                &Statement::parse("INSERT INTO t VALUES (?)"),
                &[Value::Null]
            ),
            Step::Send
        ));
        assert!(matches!(
            tx.step(&Statement::parse("SELECT 1"), &[]),
            Step::Send
        ));
        assert!(matches!(
            tx.step(&Statement::parse("UPDATE t SET a = 1 RETURNING a"), &[]),
            Step::Send
        ));
        let named = format!("INSERT INTO t VALUES (:a) {BATCHED}");
        assert!(matches!(
            tx.step(&Statement::parse(named), &[Value::Null]),
            Step::Send
        ));
        assert!(matches!(
            tx.step(&Statement::parse("SAVEPOINT s"), &[]),
            Step::Send
        ));
        assert!(matches!(
            tx.step(&Statement::parse("ROLLBACK TO s"), &[]),
            Step::Send
        ));
        assert!(matches!(
            tx.step(&Statement::parse("CREATE TABLE x (a)"), &[]),
            Step::Send
        ));
        assert!(matches!(
            tx.step(&Statement::parse("commit;"), &[]),
            Step::Commit
        ));
        assert!(matches!(
            tx.step(&Statement::parse("END TRANSACTION"), &[]),
            Step::Commit
        ));
        assert!(matches!(
            tx.step(&Statement::parse("rollback"), &[]),
            Step::Rollback
        ));
    }
}
