//! A local database and its pool of idle connections, each with this host's settings.

use std::sync::Mutex;

use anyhow::{Context, Result};
use rusqlite::config::DbConfig;

use crate::capability::sqlite::config::Location;
use crate::capability::sqlite::local::flush::Flusher;
use crate::capability::sqlite::turn::{BUSY_TIMEOUT, Writers};

/// Idle connections kept per database: a few more than the requests a node runs at once (each
/// idle connection keeps its page cache, its schema and its prepared statements: ~2-4 MiB).
const MAX_IDLE: usize = 16;
/// Every connection's settings. `mmap_size`: reads use the OS page cache in place (memory-mapped,
/// up to 256 GiB, the cap this host's SQLite is built with in `.cargo/config.toml`) instead of a
/// `pread` into each connection's own page cache (docs/bench.md, findings). The price is on
/// writes: SQLite unmaps a connection's whole window whenever another connection committed since
/// its last read (each pooled connection has its own), so a read after a commit pays a `munmap`
/// and page faults. Measured both ways (findings, "The mapped file under writes"): unmapped,
/// detail and create at once cost ~17% less CPU per request, but the full bench's read rows
/// 10-40% more; kept mapped.
///
/// `cache_size`: 1 MiB of page cache per connection (SQLite's default is 2 MiB). With the file
/// mapped, the cache holds only the pages a connection wrote or read from the WAL; measured on the
/// bench's database, a connection's memory after the detail and search reads fell from 2.1 to 0.7
/// MiB at 512 KiB, and the pooled connections are most of the host's heap (docs/bench.md, "Memory").
const CONNECTION_PRAGMAS: &str = "PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; \
    PRAGMA mmap_size = 274877906944; PRAGMA cache_size = -1024;";
/// What a pooled connection is reset to when its user ran a `PRAGMA` (the one a guest may lower).
pub(super) const RESET_PRAGMAS: &str = "PRAGMA synchronous = FULL;";
/// Prepared statements cached per connection: the app runs fewer distinct ones per kind of
/// request; a prepared detail `SELECT` takes ~55 KiB, so 128 a connection was tens of MiB a node.
const STATEMENT_CACHE: usize = 64;
/// One configured database label with its pool of idle connections.
pub struct Database {
    label: String,
    location: Location,
    /// Opened read-only (an embedded replica's file, which only its `libsql` replicator writes).
    read_only: bool,
    idle: Mutex<Vec<rusqlite::Connection>>,
    /// Whose turn it is to write (`turn`).
    pub(super) writers: Writers,
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
    pub(super) fn idle(&self) -> Option<rusqlite::Connection> {
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
