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
//! Which statement takes the write lock is the statement's to say ([`Statement::takes_write_lock`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::capability::sqlite::statement::Statement;

/// How long a statement waits for another connection's write lock (locally), or for a libSQL
/// server's answer (remotely) before it fails with `io`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

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
    /// the write lock, waits up to `wait` for the turn.
    pub async fn before(
        &mut self,
        writers: &Writers,
        statement: &Statement,
        autocommit: bool,
        wait: Duration,
    ) {
        if self.0.is_none() && autocommit && statement.takes_write_lock() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_turn_is_held_until_the_transaction_ends() {
        let writers = Writers::default();
        let (mut a, mut b) = (Turn::default(), Turn::default());
        let wait = Duration::from_millis(20);
        let parse = Statement::parse;
        a.before(&writers, &parse("BEGIN"), true, wait).await;
        assert!(a.held());
        a.after(false);
        assert!(a.held(), "still in the transaction");
        b.before(&writers, &parse("INSERT INTO t VALUES (1)"), true, wait)
            .await;
        assert!(
            !b.held(),
            "not given in time: the statement goes ahead anyway"
        );
        b.before(&writers, &parse("SELECT 1"), true, wait).await;
        assert!(!b.held(), "a read takes no turn");
        a.after(true);
        assert!(!a.held());
        b.before(&writers, &parse("INSERT INTO t VALUES (1)"), true, wait)
            .await;
        assert!(b.held());
    }
}
