//! The `connection` resource's local form, and one statement run on a pooled SQLite connection.

use std::sync::Arc;

use anyhow::{Context, Result};
use rusqlite::types::{Value as SqlValue, ValueRef};

use crate::capability::sqlite::bindings::{Error, QueryResult, RowResult, Value};
use crate::capability::sqlite::local::pool::{Database, RESET_PRAGMAS};
use crate::capability::sqlite::result::ResultBudget;
use crate::capability::sqlite::statement::{Kind, Statement};
use crate::capability::sqlite::turn::{BUSY_TIMEOUT, Turn};

/// The `connection` resource's local form: one pooled SQLite connection owned by a guest.
pub struct Connection {
    conn: Option<rusqlite::Connection>,
    db: Arc<Database>,
    /// Held while this connection writes (dropped after `conn` is back in the pool).
    turn: Turn,
    /// Whether its user ran a `PRAGMA` (reset before the pool lends it again).
    pragmas: bool,
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if self.pragmas && conn.execute_batch(RESET_PRAGMAS).is_err() {
                return; // dropped: a fresh one will be opened
            }
            self.db.release(conn);
        }
    }
}

impl Connection {
    /// A connection of `db`: an idle one (no I/O), or a new one.
    pub fn open(db: Arc<Database>) -> Result<Self> {
        let conn = match db.idle() {
            Some(conn) => conn,
            // Opening a new connection touches the file.
            None => blocking(|| db.acquire())?,
        };
        Ok(Self {
            conn: Some(conn),
            db,
            turn: Turn::default(),
            pragmas: false,
        })
    }

    /// Runs one statement, waiting for this host's writer turn first when it writes.
    pub async fn execute(
        &mut self,
        statement: &Statement,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        let Some(conn) = self.conn.as_ref() else {
            return Err(Error::InvalidConnection);
        };
        self.pragmas |= matches!(statement.kind(), Kind::Pragma { .. });
        // A statement that may wait for a lock or flush (one taking the write lock outside a
        // transaction, a transaction's end) leaves the async worker thread (`blocking`). A
        // read-only statement outside a transaction never waits in WAL mode: it takes
        // microseconds and runs inline, like the guest's own code, since handing the worker to
        // another thread (`block_in_place`) around every statement cost more than most statements.
        let writes = statement.takes_write_lock();
        // Inside a transaction this connection already writes in, a statement never waits for a
        // lock (it holds SQLite's and this host's): only its end (the commit's `fsync`) may block.
        let autocommit = conn.is_autocommit();
        let writing = self.turn.held() && !autocommit;
        let writers = &self.db.writers;
        self.turn
            .before(writers, statement, autocommit, BUSY_TIMEOUT)
            .await;
        let Some(conn) = self.conn.as_mut() else {
            return Err(Error::InvalidConnection);
        };
        let inline = if writing {
            !statement.ends_transaction()
        } else {
            !writes && conn.is_autocommit()
        };
        let result = if inline {
            execute(conn, statement, parameters)
        } else {
            blocking(|| execute(conn, statement, parameters))
        };
        self.turn.after(conn.is_autocommit());
        result
    }

    /// Runs several statements (migrations, `--sqlite`), as this host's writer.
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        self.turn.take(&self.db.writers).await;
        let conn = self.conn.as_mut().context("the connection is closed")?;
        let result = blocking(|| conn.execute_batch(sql));
        self.turn.after(conn.is_autocommit());
        Ok(result?)
    }

    /// SQLite's `last_insert_rowid`.
    pub fn last_insert_rowid(&self) -> i64 {
        self.conn.as_ref().map_or(0, |c| c.last_insert_rowid())
    }

    /// SQLite's `changes`.
    pub fn changes(&self) -> u64 {
        self.conn.as_ref().map_or(0, |c| c.changes())
    }

    /// Gives the connection back; rolling back what the guest left open may wait.
    pub fn close(self) {
        if self.conn.as_ref().is_some_and(|c| !c.is_autocommit()) {
            blocking(move || drop(self));
        } else {
            drop(self);
        }
    }
}

/// A text value as a `String`. Valid UTF-8 (all the app stores) is checked by `str::from_utf8`,
/// whose ASCII fast path made `from_utf8_lossy`'s scan ~1.5% of a search's CPU; anything else
/// still reads with U+FFFD in place of the bad bytes.
fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Runs blocking SQLite work without stalling the async runtime's other tasks.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// One statement, whole result buffered; every SQLite error is `io(message)`.
fn execute(
    conn: &mut rusqlite::Connection,
    statement: &Statement,
    parameters: Vec<Value>,
) -> Result<QueryResult, Error> {
    let io = |e: rusqlite::Error| Error::Io(e.to_string());
    if statement.multiple() {
        return Err(Error::Io("Multiple statements provided".to_string()));
    }
    let mut stmt = conn.prepare_cached(statement.to_run()).map_err(io)?;
    let columns: Vec<String> = stmt.column_names().into_iter().map(String::from).collect();
    let params = parameters.into_iter().map(|v| match v {
        Value::Integer(i) => SqlValue::Integer(i),
        Value::Real(r) => SqlValue::Real(r),
        Value::Text(t) => SqlValue::Text(t),
        Value::Blob(b) => SqlValue::Blob(b),
        Value::Null => SqlValue::Null,
    });
    let mut rows = stmt.query(rusqlite::params_from_iter(params)).map_err(io)?;
    let mut out = Vec::new();
    let mut budget = ResultBudget::default();
    while let Some(row) = rows.next().map_err(io)? {
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            let value = match row.get_ref(i).map_err(io)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(i) => Value::Integer(i),
                ValueRef::Real(r) => Value::Real(r),
                ValueRef::Text(t) => Value::Text(text(t)),
                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
            };
            values.push(value);
        }
        budget.add(&values)?;
        out.push(RowResult { values });
    }
    Ok(QueryResult { columns, rows: out })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::sqlite::config::Location;

    /// `execute` on the text `sql`.
    fn run(
        conn: &mut rusqlite::Connection,
        sql: &str,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        execute(conn, &Statement::parse(sql), parameters)
    }

    #[test]
    fn text_reads_utf8_and_replaces_what_is_not() {
        assert_eq!(text("Pérez".as_bytes()), "Pérez");
        assert_eq!(text(b"a\xffb"), "a\u{fffd}b");
    }

    fn db() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::new("default", Location::File(dir.path().join("t.db"))).unwrap();
        (dir, db)
    }

    #[test]
    fn execute_round_trip_and_errors() {
        let (_dir, db) = db();
        let mut conn = db.acquire().unwrap();
        run(
            &mut conn,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)",
            vec![],
        )
        .unwrap();
        run(
            &mut conn,
            "INSERT INTO t (name) VALUES (?)",
            vec![Value::Text("a".into())],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 1);
        let err = run(
            &mut conn,
            "INSERT INTO t (name) VALUES (?)",
            vec![Value::Text("a".into())],
        )
        .unwrap_err();
        let Error::Io(message) = err else {
            panic!("{err:?}")
        };
        assert!(message.contains("UNIQUE constraint failed"), "{message}");
        let result = run(&mut conn, "SELECT id, name, NULL, 1.5 FROM t", vec![]).unwrap();
        assert_eq!(result.columns.len(), 4);
        assert_eq!(result.rows.len(), 1);
        let err = run(&mut conn, "ATTACH DATABASE ':memory:' AS x", vec![]).unwrap_err();
        assert!(matches!(err, Error::Io(_)));
        let err = run(&mut conn, "SELECT 1; SELECT 2", vec![]).unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
    }

    #[test]
    fn released_connection_loses_its_open_transaction() {
        let (_dir, db) = db();
        let mut conn = db.acquire().unwrap();
        run(&mut conn, "CREATE TABLE t (x)", vec![]).unwrap();
        run(&mut conn, "BEGIN", vec![]).unwrap();
        run(&mut conn, "INSERT INTO t VALUES (1)", vec![]).unwrap();
        db.release(conn);
        let mut conn = db.acquire().unwrap();
        assert!(conn.is_autocommit());
        assert_eq!(conn.last_insert_rowid(), 0);
        let result = run(&mut conn, "SELECT count(*) FROM t", vec![]).unwrap();
        assert!(matches!(result.rows[0].values[0], Value::Integer(0)));
    }

    fn synchronous(conn: &mut rusqlite::Connection) -> i64 {
        let result = run(conn, "PRAGMA synchronous", vec![]).unwrap();
        let Value::Integer(level) = result.rows[0].values[0] else {
            panic!("{:?}", result.rows[0].values)
        };
        level
    }

    #[test]
    fn a_lowered_synchronous_takes_effect_every_time_and_is_reset_for_the_next_user() {
        let (_dir, db) = db();
        let db = Arc::new(db);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for _ in 0..2 {
            let mut conn = Connection::open(db.clone()).unwrap();
            runtime
                .block_on(conn.execute(&Statement::parse("PRAGMA synchronous = NORMAL"), vec![]))
                .unwrap();
            assert_eq!(synchronous(conn.conn.as_mut().unwrap()), 1, "NORMAL");
            conn.close();
            let mut next = db.acquire().unwrap();
            assert_eq!(synchronous(&mut next), 2, "FULL again");
            db.release(next);
        }
    }

    #[test]
    fn a_limit_parameter_does_not_prepare_again() {
        let (_dir, db) = db();
        let mut conn = db.acquire().unwrap();
        run(
            &mut conn,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, x)",
            vec![],
        )
        .unwrap();
        let sql = "SELECT id FROM t WHERE x = ?1 ORDER BY id LIMIT ?2 OFFSET ?3";
        for limit in [20, 10, 20] {
            let params = vec![Value::Integer(1), Value::Integer(limit), Value::Integer(0)];
            run(&mut conn, sql, params).unwrap();
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }

    #[test]
    fn the_statement_cache_survives_release() {
        let (_dir, db) = db();
        let mut conn = db.acquire().unwrap();
        run(&mut conn, "CREATE TABLE t (x)", vec![]).unwrap();
        let sql = "SELECT x FROM t WHERE x = ?";
        for _ in 0..3 {
            run(&mut conn, sql, vec![Value::Integer(1)]).unwrap();
            db.release(conn);
            conn = db.acquire().unwrap();
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
        drop(stmt);
        // A guest that turned foreign keys off gets them back on.
        run(&mut conn, "PRAGMA foreign_keys = OFF", vec![]).unwrap();
        db.release(conn);
        let mut conn = db.acquire().unwrap();
        let on = run(&mut conn, "PRAGMA foreign_keys", vec![]).unwrap();
        assert!(matches!(on.rows[0].values[0], Value::Integer(1)));
    }
}
