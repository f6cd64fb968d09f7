//! The local backend: SQLite files through rusqlite, with Spin's semantics:
//!
//! - Each `open` hands out its own connection; `execute` runs one statement with
//!   `prepare_cached` and positional parameters and buffers the whole result (capped at 128 MiB);
//!   every SQLite error is `io(message)` with SQLite's text (e.g. `UNIQUE constraint failed: ...`).
//!   `BEGIN`/`COMMIT`/`ROLLBACK` through `execute` work since a connection is one SQLite connection.
//!
//! Where `receta` goes further than Spin (documented for the app's authors):
//! - Connections are pooled per label and reused across requests; a connection comes back to the
//!   pool only after any open transaction is rolled back.
//! - Every connection has `busy_timeout` = 5 s and `foreign_keys = ON`, and the database runs in
//!   WAL mode with `synchronous = FULL`: every commit is flushed to disk (one `fsync` of the WAL)
//!   before it returns, so a transaction that committed (a prescription that answered 200)
//!   survives a crash of the process and of the machine, as with Spin's own SQLite (rollback
//!   journal, SQLite's default `FULL`). Readers never block the writer. A guest may lower its own
//!   connection to `PRAGMA synchronous = NORMAL` (log-grade commits); the WAL is then flushed
//!   within a second (`flush`), and a pooled connection goes back to `FULL` before its next user.
//! - Reads use the memory-mapped file (`mmap_size`, see `CONNECTION_PRAGMAS`).
//! - A plain `BEGIN` runs as `BEGIN IMMEDIATE` (see `upgrade_begin` in `mod.rs`).
//! - Writers of this host take turns (`turn`), waiting up to `busy_timeout` for it; then SQLite's
//!   own timeout applies, as it does for another process writing the same file.
//! - `ATTACH` is denied (the attached-database limit is 0).

use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use rusqlite::config::DbConfig;
use rusqlite::types::{Value as SqlValue, ValueRef};

use crate::capability::sqlite::bindings::{Error, QueryResult, RowResult, Value};
use crate::capability::sqlite::config::Location;
use crate::capability::sqlite::flush::Flusher;
use crate::capability::sqlite::semantics::{
    BUSY_TIMEOUT, ResultBudget, more_than_one_statement, starts_with_keyword, upgrade_begin,
};
use crate::capability::sqlite::turn::{Turn, Writers, takes_write_lock};
/// Idle connections kept per database.
const MAX_IDLE: usize = 32;
/// Every connection's settings. `mmap_size`: reads use the OS page cache in place (memory-mapped,
/// up to 256 GiB, the cap this host's SQLite is built with in `.cargo/config.toml`) instead of a
/// `pread` into each connection's own page cache (docs/bench.md, findings). The price is on
/// writes: SQLite unmaps a connection's whole window whenever another connection committed since
/// its last read (each pooled connection has its own), so a read after a commit pays a `munmap`
/// and page faults. Measured both ways (findings, "The mapped file under writes"): unmapped,
/// detail and create at once cost ~17% less CPU per request, but the full bench's read rows
/// 10-40% more; kept mapped.
const CONNECTION_PRAGMAS: &str =
    "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA mmap_size = 274877906944;";
/// What a pooled connection is reset to when its user ran a `PRAGMA` (the one a guest may lower).
const RESET_PRAGMAS: &str = "PRAGMA synchronous = FULL;";
/// Prepared statements cached per connection.
const STATEMENT_CACHE: usize = 128;
/// One configured database label with its pool of idle connections.
pub struct Database {
    label: String,
    location: Location,
    /// Opened read-only (an embedded replica's file, which only its `libsql` replicator writes).
    read_only: bool,
    idle: Mutex<Vec<rusqlite::Connection>>,
    /// Whose turn it is to write (`turn`).
    writers: Writers,
    /// Keeps a shared in-memory database alive while the host runs.
    _keepalive: Option<Mutex<rusqlite::Connection>>,
    /// Flushes a file's WAL each second (log-grade commits).
    _flusher: Option<Flusher>,
}

impl Database {
    /// Opens (creating) the database at `location`, a file or memory.
    pub fn new(label: &str, location: Location) -> Result<Self> {
        if let Location::File(path) = &location
            && let Some(dir) = path.parent()
        {
            std::fs::create_dir_all(dir).with_context(|| {
                format!(
                    "cannot create the directory of database {label:?}: {}",
                    dir.display()
                )
            })?;
        }
        let mut db = Self::unopened(label, location, false);
        // WAL is a property of the database file: set it once, up front.
        let conn = db.connect()?;
        if let Location::File(path) = db.location.clone() {
            let mode: String = conn
                .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
                .with_context(|| format!("cannot enable WAL on database {label:?}"))?;
            if !mode.eq_ignore_ascii_case("wal") {
                eprintln!(
                    "receta: warning: database {label:?} runs in journal mode {mode}, not WAL"
                );
            }
            db.release(conn);
            db._flusher = Some(Flusher::start(label, &path)?);
        } else {
            db._keepalive = Some(Mutex::new(conn));
        }
        Ok(db)
    }

    /// A read-only view of the database file at `path`, which another writer keeps (an embedded
    /// replica's file, `remote`): pooled connections with the same settings, no WAL switch, no
    /// flusher. Every statement that writes fails with SQLite's "attempt to write a readonly
    /// database".
    pub fn reader(label: &str, path: &std::path::Path) -> Self {
        Self::unopened(label, Location::File(path.to_path_buf()), true)
    }

    /// `location` with no connection open yet, nothing kept alive and no flusher.
    fn unopened(label: &str, location: Location, read_only: bool) -> Self {
        Self {
            label: label.to_string(),
            location,
            read_only,
            idle: Mutex::new(Vec::new()),
            writers: Writers::default(),
            _keepalive: None,
            _flusher: None,
        }
    }

    fn connect(&self) -> Result<rusqlite::Connection> {
        let conn = match &self.location {
            Location::File(path) if self.read_only => rusqlite::Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .with_context(|| {
                format!(
                    "cannot read database {:?} at {}",
                    self.label,
                    path.display()
                )
            })?,
            Location::File(path) => rusqlite::Connection::open(path).with_context(|| {
                format!(
                    "cannot open database {:?} at {}",
                    self.label,
                    path.display()
                )
            })?,
            Location::Memory(name) => rusqlite::Connection::open_with_flags(
                format!("file:{name}?mode=memory&cache=shared"),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE
                    | rusqlite::OpenFlags::SQLITE_OPEN_CREATE
                    | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .with_context(|| format!("cannot open in-memory database {:?}", self.label))?,
            Location::Remote { .. } => {
                anyhow::bail!("database {:?} is remote, not a local file", self.label)
            }
        };
        conn.busy_timeout(BUSY_TIMEOUT)
            .context("cannot set busy_timeout")?;
        conn.execute_batch(CONNECTION_PRAGMAS)
            .context("cannot set connection pragmas")?;
        // Answers the previous limit.
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0);
        // Plans never depend on bound values: without this, a statement whose plan looked at a
        // parameter (any `LIMIT ?`, a `LIKE ?`) is prepared again on every execution from the
        // statement cache, which was most of the host's time on a paginated list.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .context("cannot enable the query planner stability guarantee")?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        Ok(conn)
    }

    /// A connection from the pool, or a new one.
    pub fn acquire(&self) -> Result<rusqlite::Connection> {
        if let Some(conn) = self.idle() {
            return Ok(conn);
        }
        self.connect()
    }

    /// An idle connection from the pool, if there is one.
    fn idle(&self) -> Option<rusqlite::Connection> {
        self.idle.lock().expect("pool lock").pop()
    }

    /// Returns a connection to the pool in the state a fresh one has: any transaction its user
    /// left open rolled back, `foreign_keys` on, and `last_insert_rowid` 0. (`changes` keeps its
    /// value: SQLite has no way to reset it.)
    pub fn release(&self, conn: rusqlite::Connection) {
        if !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err() {
            return; // dropped: a fresh one will be opened
        }
        // Only when the guest turned it off: `PRAGMA foreign_keys = ON` expires every prepared
        // statement of the connection, so running it at each release emptied the statement
        // cache (every statement of the next request was compiled again).
        match conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY) {
            Ok(true) => {}
            Ok(false) => {
                if conn
                    .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY, true)
                    .is_err()
                {
                    return;
                }
            }
            Err(_) => return,
        }
        // SAFETY: the handle belongs to `conn`, which is alive and used by no one else here.
        unsafe { rusqlite::ffi::sqlite3_set_last_insert_rowid(conn.handle(), 0) };
        let mut idle = self.idle.lock().expect("pool lock");
        if idle.len() < MAX_IDLE {
            idle.push(conn);
        }
    }
}

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
        statement: &str,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        let Some(conn) = self.conn.as_ref() else {
            return Err(Error::InvalidConnection);
        };
        self.pragmas |= is_pragma(statement);
        // A statement that may wait for a lock or flush (one taking the write lock outside a
        // transaction, a transaction's end) leaves the async worker thread (`blocking`). A
        // read-only statement outside a transaction never waits in WAL mode: it takes
        // microseconds and runs inline, like the guest's own code, since handing the worker to
        // another thread (`block_in_place`) around every statement cost more than most statements.
        let writes = takes_write_lock(statement);
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
            !ends_transaction(statement)
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

/// Whether `statement` is a `PRAGMA` (its connection is reset before the pool lends it again).
fn is_pragma(statement: &str) -> bool {
    starts_with_keyword(statement, &["PRAGMA"])
}

/// Whether `statement` may end a transaction (and so flush it): `COMMIT`, `END`, or the `RELEASE` of
/// what may be the outermost savepoint.
fn ends_transaction(statement: &str) -> bool {
    starts_with_keyword(statement, &["COMMIT", "END", "RELEASE"])
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
    statement: &str,
    parameters: Vec<Value>,
) -> Result<QueryResult, Error> {
    let statement = upgrade_begin(statement).unwrap_or(statement);
    let io = |e: rusqlite::Error| Error::Io(e.to_string());
    if more_than_one_statement(statement) {
        return Err(Error::Io("Multiple statements provided".to_string()));
    }
    let mut stmt = conn.prepare_cached(statement).map_err(io)?;
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

    #[test]
    fn text_reads_utf8_and_replaces_what_is_not() {
        assert_eq!(text("Pérez".as_bytes()), "Pérez");
        assert_eq!(text(b"a\xffb"), "a\u{fffd}b");
    }

    #[test]
    fn only_a_transactions_end_may_flush_it() {
        for end in [
            "COMMIT",
            " commit;",
            "END TRANSACTION",
            "release sp1",
            "COMMIT\n",
        ] {
            assert!(ends_transaction(end), "{end:?}");
        }
        for other in [
            "INSERT INTO t VALUES (1)",
            "SELECT 1",
            "ROLLBACK",
            "ENDX",
            "UPDATE t SET x=1",
        ] {
            assert!(!ends_transaction(other), "{other:?}");
        }
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
        execute(
            &mut conn,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)",
            vec![],
        )
        .unwrap();
        execute(
            &mut conn,
            "INSERT INTO t (name) VALUES (?)",
            vec![Value::Text("a".into())],
        )
        .unwrap();
        assert_eq!(conn.last_insert_rowid(), 1);
        let err = execute(
            &mut conn,
            "INSERT INTO t (name) VALUES (?)",
            vec![Value::Text("a".into())],
        )
        .unwrap_err();
        let Error::Io(message) = err else {
            panic!("{err:?}")
        };
        assert!(message.contains("UNIQUE constraint failed"), "{message}");
        let result = execute(&mut conn, "SELECT id, name, NULL, 1.5 FROM t", vec![]).unwrap();
        assert_eq!(result.columns.len(), 4);
        assert_eq!(result.rows.len(), 1);
        let err = execute(&mut conn, "ATTACH DATABASE ':memory:' AS x", vec![]).unwrap_err();
        assert!(matches!(err, Error::Io(_)));
        let err = execute(&mut conn, "SELECT 1; SELECT 2", vec![]).unwrap_err();
        assert!(matches!(err, Error::Io(_)), "{err:?}");
    }

    #[test]
    fn released_connection_loses_its_open_transaction() {
        let (_dir, db) = db();
        let mut conn = db.acquire().unwrap();
        execute(&mut conn, "CREATE TABLE t (x)", vec![]).unwrap();
        execute(&mut conn, "BEGIN", vec![]).unwrap();
        execute(&mut conn, "INSERT INTO t VALUES (1)", vec![]).unwrap();
        db.release(conn);
        let mut conn = db.acquire().unwrap();
        assert!(conn.is_autocommit());
        assert_eq!(conn.last_insert_rowid(), 0);
        let result = execute(&mut conn, "SELECT count(*) FROM t", vec![]).unwrap();
        assert!(matches!(result.rows[0].values[0], Value::Integer(0)));
    }

    fn synchronous(conn: &mut rusqlite::Connection) -> i64 {
        let result = execute(conn, "PRAGMA synchronous", vec![]).unwrap();
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
                .block_on(conn.execute("PRAGMA synchronous = NORMAL", vec![]))
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
        execute(
            &mut conn,
            "CREATE TABLE t (id INTEGER PRIMARY KEY, x)",
            vec![],
        )
        .unwrap();
        let sql = "SELECT id FROM t WHERE x = ?1 ORDER BY id LIMIT ?2 OFFSET ?3";
        for limit in [20, 10, 20] {
            let params = vec![Value::Integer(1), Value::Integer(limit), Value::Integer(0)];
            execute(&mut conn, sql, params).unwrap();
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
    }

    #[test]
    fn the_statement_cache_survives_release() {
        let (_dir, db) = db();
        let mut conn = db.acquire().unwrap();
        execute(&mut conn, "CREATE TABLE t (x)", vec![]).unwrap();
        let sql = "SELECT x FROM t WHERE x = ?";
        for _ in 0..3 {
            execute(&mut conn, sql, vec![Value::Integer(1)]).unwrap();
            db.release(conn);
            conn = db.acquire().unwrap();
        }
        let stmt = conn.prepare_cached(sql).unwrap();
        assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0);
        drop(stmt);
        // A guest that turned foreign keys off gets them back on.
        execute(&mut conn, "PRAGMA foreign_keys = OFF", vec![]).unwrap();
        db.release(conn);
        let mut conn = db.acquire().unwrap();
        let on = execute(&mut conn, "PRAGMA foreign_keys", vec![]).unwrap();
        assert!(matches!(on.rows[0].values[0], Value::Integer(1)));
    }
}
