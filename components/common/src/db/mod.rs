//! The one door to the database: open, query with positional parameters, map rows by column name,
//! and run a closure inside a transaction. Two backends, chosen by configuration and invisible to
//! every caller: Spin's SQLite (`spin:sqlite/sqlite@3.0.0`: a local file, or Spin's own libSQL
//! backend through a runtime config) when the `database_url` variable is empty, the default; with it
//! set, libSQL/Turso over HTTP spoken by the component itself ([`hrana`], issue 87).
//!
//! What works on every database Spin serves, so nothing here offers more: a new row's id is read
//! with `INSERT … RETURNING id` (Spin's libSQL backend answers 0 for `last-insert-rowid` and
//! `changes`: its client counts only statements run without rows, and Spin runs every statement
//! as a query), and a connection setting a libSQL server refuses is not sent again
//! (`SETTINGS_REFUSED`).
//!
//! One file (over 500 lines): the connection, its lending across components and its transactions are one lifetime, read together.

mod hrana;
mod together;

use std::cell::{Cell, OnceCell, Ref, RefCell};
use std::mem::ManuallyDrop;
use std::rc::{Rc, Weak};

use anyhow::{Context, Result, anyhow};
use spin_sdk::sqlite3::{Connection, QueryResult, Value};

pub use spin_sdk::sqlite3::Value as Param;

/// The variables naming a libSQL/Turso database reached over HTTP ([`hrana`]); empty, the default,
/// means Spin's SQLite `default`.
const DATABASE_URL: &str = "database_url";
const DATABASE_TOKEN: &str = "database_token";

/// The database every component uses (Spin's `default`, `.spin/sqlite_db.db` locally).
pub const DATABASE: &str = "default";

/// See [`Db::execute_batched`]; the host's `capability/sqlite/statement/` reads it.
const BATCHED: &str = "/* receta:batched */";

/// Around `BEGIN IMMEDIATE` ([`Db::transaction`]): SQLite's busy handler sleeps 1, 2, 5 … 100 ms
/// between tries, so on a host without writer turns (Spin) a writer that missed the lock once
/// could sleep past many chances while others took it (Spin's creates at 8 connections: p99
/// 0.84-1.42 s; asked again every millisecond instead, 132-159 ms; docs/bench-findings.md).
const NO_BUSY_WAIT: &str = "PRAGMA busy_timeout = 0";
/// Both hosts' default (5 s), back once the transaction has begun.
const BUSY_WAIT: &str = "PRAGMA busy_timeout = 5000";
/// How often `BEGIN IMMEDIATE` is asked again while another writer holds the lock.
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(1);
/// How long it is asked for in all (as long as the busy handler waited).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How many times in all [`Db::transaction`] runs a transaction a libSQL server interrupted, and
/// [`Db::execute`] a statement outside one.
const INTERRUPTED_TRIES: u32 = 5;
/// The pause before the n-th try again is n times this (10, 20, 30, 40 ms: 100 ms in all).
const INTERRUPTED_PAUSE: std::time::Duration = std::time::Duration::from_millis(10);

/// See [`Db::execute_log_grade`].
const LOG_GRADE: &str = "PRAGMA synchronous = NORMAL";
/// Back to durable commits after a log-grade one (the default of both hosts).
const DURABLE: &str = "PRAGMA synchronous = FULL";

/// Idle connections an instance keeps for its next calls: enough for the few a request holds at
/// once (the gateway's, and a dependency's own when it is not lent one).
const IDLE_MAX: usize = 2;

/// How long a kept connection stays usable: one idle longer is closed instead of reused. On a
/// libSQL server a connection is a Hrana stream, which the server drops once idle for 10 s (sqld's
/// `EXPIRATION`), after which its every statement fails ("The stream has expired due to
/// inactivity"); a reused instance that waited longer would answer 500 (issue 70). On a local file
/// the cost is one reopen (~1 ms) after an idle instance's pause.
const KEPT_FOR: std::time::Duration = std::time::Duration::from_secs(5);

thread_local! {
    /// The connection a live [`Db`] of this instance holds, if any: an `open` while another `Db`
    /// is alive shares its connection instead of opening a second one. During a call that was lent
    /// the gateway's connection ([`lent`]), that one. A `Db` lives within one request and never
    /// across an `await` (the gateway drops its request before answering), so this only ever names
    /// the running request's connection.
    static OPEN: RefCell<Weak<Handle>> = const { RefCell::new(Weak::new()) };

    /// Clean connections this instance keeps between requests (docs/architecture.md, "What an
    /// instance keeps"): on Spin each `open` is a new SQLite connection that parses the whole
    /// schema (~1 ms of CPU), and Spin reuses a WASIp3 instance for many requests. A connection
    /// comes back here only with no transaction open and every pragma a request changed restored
    /// ([`Handle::dirty`]); any other is closed.
    /// Each with when it came back ([`KEPT_FOR`]).
    static IDLE: RefCell<Vec<(Connection, std::time::Instant)>> = const { RefCell::new(Vec::new()) };

    /// Whether the database refused a connection setting (`PRAGMA busy_timeout = …`, `PRAGMA
    /// synchronous = …`): a libSQL server does ("unsupported statement"), on Spin and on this
    /// project's host alike. A fact of the configured database, not of any request, learnt by the
    /// first statement that meets it: after it this instance sends no more settings, which there
    /// would cost a round trip each and change nothing (the server keeps its own lock waits and
    /// commits durably).
    static SETTINGS_REFUSED: Cell<bool> = const { Cell::new(false) };

    /// The database over HTTP the configuration names, if any (`database_url`): configuration,
    /// read once per instance.
    static REMOTE: OnceCell<Result<Option<Rc<hrana::Remote>>, String>> = const { OnceCell::new() };
}

/// The configured database over HTTP, `None` for Spin's SQLite; a `database_url` that is not an
/// `http(s)://` or `libsql://` URL is an error at every request (the log says which).
fn remote() -> Result<Option<Rc<hrana::Remote>>> {
    REMOTE.with(|remote| {
        remote
            .get_or_init(|| {
                let var = |name| spin_sdk::variables::get(name).unwrap_or_default();
                let url = var(DATABASE_URL);
                if url.trim().is_empty() {
                    return Ok(None);
                }
                hrana::Remote::parse(&url, &var(DATABASE_TOKEN)).map(|r| Some(Rc::new(r)))
            })
            .clone()
            .map_err(|e| anyhow!(e))
    })
}

/// Whether the configured database is reached over HTTP ([`hrana`]): then a request's log rows
/// go to it directly, in its own requests, instead of through the key-value store (a host without
/// SQLite, Akamai Functions, allows an app 50 key-value writes a second; issue 87).
pub fn over_http() -> Result<bool> {
    Ok(remote()?.is_some())
}

/// What a [`Handle`] talks to.
enum Link {
    /// A connection of Spin's SQLite interface.
    Local(Connection),
    /// A libSQL server over HTTP.
    Remote(hrana::Stream),
}

/// A connection this instance opened (kept for reuse, or closed, when dropped), or one lent to it
/// for a call, with what the live `Db`s sharing it have learnt of it.
struct Handle {
    /// Replaced, when this instance opened it, by a new one if the server lost its stream
    /// ([`Handle::renew`]).
    conn: RefCell<ManuallyDrop<Link>>,
    /// Whether this instance opened it; a lent one is the caller's, never dropped here (the handle
    /// is a borrow that ends with the call).
    opened: bool,
    /// Whether its state is unknown (a transaction's end or a pragma's restore failed): then it is
    /// closed, never kept.
    dirty: Cell<bool>,
    /// Whether a [`Db::transaction`] of this instance is open on it.
    in_transaction: Cell<bool>,
    /// Whether a libSQL server interrupted a statement on it since the running transaction began
    /// (see [`Db::transaction`]).
    interrupted: Cell<bool>,
}

impl Handle {
    fn new(conn: Link, opened: bool) -> Handle {
        Handle {
            conn: RefCell::new(ManuallyDrop::new(conn)),
            opened,
            dirty: Cell::new(false),
            in_transaction: Cell::new(false),
            interrupted: Cell::new(false),
        }
    }

    /// Marks the connection's state as unknown: it is closed once the request is done with it.
    fn taint(&self) {
        self.dirty.set(true);
    }

    /// Spin's connection, `None` over HTTP.
    fn local(&self) -> Option<Ref<'_, Connection>> {
        Ref::filter_map(self.conn.borrow(), |link| match &**link {
            Link::Local(conn) => Some(conn),
            Link::Remote(_) => None,
        })
        .ok()
    }

    fn is_remote(&self) -> bool {
        matches!(&**self.conn.borrow(), Link::Remote(_))
    }

    /// Runs one statement; over HTTP, `keep` lets a write inside a transaction wait for the next
    /// statement that needs the server ([`hrana`]).
    fn execute(
        &self,
        sql: &str,
        params: &[Value],
        keep: bool,
    ) -> Result<QueryResult, spin_sdk::sqlite3::Error> {
        match &mut **self.conn.borrow_mut() {
            Link::Local(conn) => conn.execute(sql, params),
            Link::Remote(stream) => stream.execute(sql, params, keep),
        }
    }

    /// Replaces a connection whose server-side stream is gone ([`lost_stream`]) with a new one:
    /// only one this instance opened, and only outside a transaction (inside one, the transaction
    /// went with the stream, and the connection is marked to be closed instead). Whether it did.
    fn renew(&self) -> bool {
        if !self.opened || self.in_transaction.get() || self.is_remote() {
            self.taint();
            return false;
        }
        let Ok(fresh) = Connection::open(DATABASE) else {
            self.taint();
            return false;
        };
        let old = std::mem::replace(
            &mut *self.conn.borrow_mut(),
            ManuallyDrop::new(Link::Local(fresh)),
        );
        drop(ManuallyDrop::into_inner(old));
        true
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.opened {
            // SAFETY: taken once, here, and never used again.
            let link = unsafe { ManuallyDrop::take(self.conn.get_mut()) };
            if let (Link::Local(conn), false) = (link, self.dirty.get()) {
                IDLE.with_borrow_mut(|idle| {
                    if idle.len() < IDLE_MAX {
                        idle.push((conn, std::time::Instant::now()));
                    }
                });
            }
        }
    }
}

/// An open connection (shared by the live `Db`s of an instance: see `OPEN`).
pub struct Db {
    conn: Rc<Handle>,
}

/// Runs `f` with `db` as the instance's connection: every [`Db::open`] inside it shares `db`
/// instead of opening one. For the exports that take the gateway's connection (`db:
/// option<borrow<connection>>` in `wit/`): a request then makes one SQLite connection instead of
/// one per component. `None` (the database is over HTTP, where a connection holds nothing between
/// statements outside a transaction): `f` opens its own.
pub fn lent<T>(db: Option<&Connection>, f: impl FnOnce() -> T) -> T {
    let Some(db) = db else {
        return f();
    };
    // SAFETY: the handle is the caller's borrow, valid until this export returns, which outlives
    // `f`; `ManuallyDrop` keeps this copy from dropping the handle it does not own.
    let copy = unsafe { Connection::from_handle(db.handle()) };
    let conn = Rc::new(Handle::new(Link::Local(copy), false));
    let before = OPEN.replace(Rc::downgrade(&conn));
    let result = f();
    OPEN.set(before);
    drop(conn);
    result
}

/// Every row of `result` mapped: for the results of [`Db::together`].
pub fn rows<T>(result: &QueryResult, map: impl Fn(&Row) -> Result<T>) -> Result<Vec<T>> {
    result
        .rows
        .iter()
        .map(|r| {
            map(&Row {
                columns: &result.columns,
                values: &r.values,
                next: Cell::new(0),
            })
        })
        .collect()
}

/// How far a statement outside a transaction has been asked again ([`Db::again`]).
struct Retry {
    started: std::time::Instant,
    /// The next pause after a lock.
    pause: std::time::Duration,
    /// Tries so far after interruptions, counting the first.
    tries: u32,
}

impl Retry {
    fn new() -> Retry {
        Retry {
            started: std::time::Instant::now(),
            pause: LOCK_RETRY,
            tries: 1,
        }
    }
}

/// One result row, read by column name.
pub struct Row<'a> {
    columns: &'a [String],
    values: &'a [Value],
    /// Where the next column is looked for first: a row is mostly read in its columns' order, so
    /// a lookup is usually one comparison instead of a scan (it was ~5% of a 20-prescription list).
    next: Cell<usize>,
}

impl Db {
    /// The `default` database: the connection of a live `Db` of this instance, else one it kept
    /// from an earlier request less than [`KEPT_FOR`] ago, else a new one.
    pub fn open() -> Result<Db> {
        if let Some(conn) = OPEN.with_borrow(Weak::upgrade) {
            return Ok(Db::on(conn));
        }
        if let Some(remote) = remote()? {
            // A libSQL server refuses connection settings; none is sent.
            SETTINGS_REFUSED.set(true);
            let conn = Rc::new(Handle::new(Link::Remote(hrana::Stream::new(remote)), true));
            OPEN.set(Rc::downgrade(&conn));
            return Ok(Db::on(conn));
        }
        let kept = IDLE.with_borrow_mut(|idle| {
            idle.retain(|(_, since)| since.elapsed() < KEPT_FOR);
            idle.pop()
        });
        let conn = match kept {
            Some((conn, _)) => conn,
            None => Connection::open(DATABASE)
                .map_err(|e| anyhow!("{e:?}"))
                .context("opening the database")?,
        };
        let conn = Rc::new(Handle::new(Link::Local(conn), true));
        OPEN.set(Rc::downgrade(&conn));
        Ok(Db::on(conn))
    }

    fn on(conn: Rc<Handle>) -> Db {
        Db { conn }
    }

    /// Marks this connection's state as unknown, so it is closed rather than kept once the
    /// request is done with it: for a caller that lent it to a call that failed in a way the
    /// caller cannot see into (a dependency's internal error).
    pub fn forget(&self) {
        self.conn.taint();
    }

    /// The connection, to lend to a component's export that takes one (see [`lent`]); `None`
    /// over HTTP. Passed as `db.lend().as_deref()`.
    pub fn lend(&self) -> Option<Ref<'_, Connection>> {
        self.conn.local()
    }

    /// Runs one statement as it is, except that on a connection whose server-side stream is gone
    /// (a libSQL server restarted, or dropped the stream: [`lost_stream`]) it is run once more on
    /// a new connection, outside a transaction ([`Handle::renew`]): the server refused the
    /// statement before running it.
    fn run(
        &self,
        sql: &str,
        params: &[Value],
        keep: bool,
    ) -> Result<QueryResult, spin_sdk::sqlite3::Error> {
        let result = self.conn.execute(sql, params, keep);
        match result {
            Err(e) if lost_stream(&e) && self.conn.renew() => self.conn.execute(sql, params, keep),
            other => other,
        }
    }

    /// Runs a connection setting (a `PRAGMA … = …`) unless the database is known to refuse them:
    /// `Ok(true)` when it ran, `Ok(false)` when the database refuses settings (remembered, see
    /// `SETTINGS_REFUSED`), any other error as it is.
    fn setting(&self, sql: &str) -> Result<bool> {
        if SETTINGS_REFUSED.get() {
            return Ok(false);
        }
        match self.run(sql, &[], false) {
            Ok(_) => Ok(true),
            Err(e) if refuses_settings(&e) => {
                SETTINGS_REFUSED.set(true);
                Ok(false)
            }
            Err(e) => Err(anyhow!("{}", describe(&e))).with_context(|| format!("running `{sql}`")),
        }
    }

    /// Runs one statement. Outside a transaction, one a libSQL server interrupted is run again,
    /// up to [`INTERRUPTED_TRIES`] times in all, after a growing pause ([`INTERRUPTED_PAUSE`]):
    /// interrupted, it did nothing (SQLite ends an autocommit statement's own transaction with it).
    /// On real Spin over libSQL reads outside any transaction meet it: a pharmacy's once in CI, and
    /// a detail under the bench's load while sqld compacted its log (docs/scale-out.md, "Writers
    /// meet in the server"). A lent connection is retried too: only the gateway lends, and it never
    /// opens a transaction (the components do, on their own `Db`, which this one then is). Inside
    /// a transaction the whole transaction is run again instead ([`Db::transaction`]).
    ///
    /// Outside a transaction a statement the database answered "database is locked" did nothing
    /// either: it is asked again, 1 ms then up to 16 ms apart, for up to [`LOCK_WAIT`], as
    /// `BEGIN IMMEDIATE` is. A local file's busy handler waits inside SQLite; a libSQL server
    /// answers at once, and issuing is one write statement without a transaction (migration
    /// 0031): eight creates at once on one Spin node met it in the bench.
    pub fn execute(&self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        self.execute_as(sql, params, false)
    }

    /// [`Db::execute`]; `keep` as [`Handle::execute`] says.
    fn execute_as(&self, sql: &str, params: &[Value], keep: bool) -> Result<QueryResult> {
        let mut retry = Retry::new();
        loop {
            let e = match self.run(sql, params, keep) {
                Ok(result) => return Ok(result),
                Err(e) => e,
            };
            if self.again(&e, &mut retry, true) {
                continue;
            }
            return Err(anyhow!("{}", describe(&e)))
                .with_context(|| format!("running `{}`", first_line(sql)));
        }
    }

    /// Whether a statement that failed with `e` is asked again ([`Db::execute`]'s rules), after
    /// its pause: only outside a transaction, and only when `did_nothing` (it was the first
    /// statement to fail, or on its own). Otherwise an interruption, or a lock met over HTTP
    /// inside a transaction, marks the transaction to be run again ([`Db::transaction`]): over HTTP
    /// `BEGIN IMMEDIATE` reaches the server with the transaction's first statement, so a lock
    /// held elsewhere is met there, and the transaction did nothing.
    fn again(&self, e: &spin_sdk::sqlite3::Error, retry: &mut Retry, did_nothing: bool) -> bool {
        let outside = !self.conn.in_transaction.get();
        let may = outside && did_nothing;
        if may && is_busy(e) && retry.started.elapsed() < LOCK_WAIT {
            std::thread::sleep(retry.pause);
            retry.pause = (retry.pause * 2).min(LOCK_RETRY * 16);
            return true;
        }
        if is_interrupt(e) || (is_busy(e) && !outside && self.conn.is_remote()) {
            if may && retry.tries < INTERRUPTED_TRIES {
                std::thread::sleep(INTERRUPTED_PAUSE * retry.tries);
                retry.tries += 1;
                return true;
            }
            self.conn.interrupted.set(true);
        }
        false
    }

    /// Runs a query and maps every row.
    pub fn query<T>(
        &self,
        sql: &str,
        params: &[Value],
        map: impl Fn(&Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        rows(&self.execute(sql, params)?, map)
    }

    /// Runs a query expected to return at most one row.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        params: &[Value],
        map: impl Fn(&Row) -> Result<T>,
    ) -> Result<Option<T>> {
        Ok(self.query(sql, params, map)?.into_iter().next())
    }

    /// A single integer (e.g. `SELECT COUNT(*)`).
    pub fn scalar_i64(&self, sql: &str, params: &[Value]) -> Result<i64> {
        first_i64(&self.execute(sql, params)?, sql)
    }

    /// A single integer of a batched write (`… RETURNING id`, see [`Db::execute_batched`]).
    pub fn scalar_i64_batched(&self, sql: &str, params: &[Value]) -> Result<i64> {
        // Its rows are needed at once: over HTTP it is not kept.
        let sql = format!("{sql} {BATCHED}");
        first_i64(&self.execute(&sql, params)?, &sql)
    }

    /// Runs one statement as a log-grade commit: written to the operating system before it
    /// returns, so it survives the process being killed, but not flushed to the disk (`PRAGMA
    /// synchronous = NORMAL`, in WAL mode, for this statement only). The next durable commit of
    /// any connection flushes it, and the host within a second; a power cut before that may lose
    /// it (docs/lifecycle.md, "What a crash can lose"). For the rows a read writes (access and call
    /// logs), so that a read does not wait for a disk flush. Best effort: a database that refuses
    /// the pragma keeps its commits durable.
    pub fn execute_log_grade(&self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        let changed = self.setting(LOG_GRADE).unwrap_or(false);
        let result = self.execute(sql, params);
        if changed && self.run(DURABLE, &[], false).is_err() {
            self.conn.taint();
        }
        result
    }

    /// Runs a write inside a transaction whose failure the caller does not handle on its own: its
    /// error may be told as late as the transaction's `COMMIT` (which then fails and rolls the
    /// transaction back). On this host's libSQL replicas such writes are sent to the primary
    /// together, one request for several (docs/scale-out.md, "Round trips"); elsewhere the mark
    /// (a trailing comment) changes nothing and the write runs at once. Over HTTP ([`hrana`]) it is
    /// sent with the transaction's next statement or its `COMMIT`. Not for a write whose
    /// constraint violation the caller maps to an answer, nor one whose rows the caller reads.
    pub fn execute_batched(&self, sql: &str, params: &[Value]) -> Result<QueryResult> {
        self.execute_as(&format!("{sql} {BATCHED}"), params, true)
    }

    /// `BEGIN IMMEDIATE`, asked for without SQLite's busy handler and asked again every
    /// [`LOCK_RETRY`] for up to [`LOCK_WAIT`] while another writer holds the lock. On a database
    /// that refuses connection settings (a libSQL server, whose own lock waits apply) it is asked
    /// for the same way, with nothing set around it. A server's "interrupted" (see [`Db::execute`]) is
    /// asked again the same way.
    fn begin_immediate(&self) -> Result<()> {
        let set = self.setting(NO_BUSY_WAIT)?;
        let started = std::time::Instant::now();
        let begun = loop {
            match self.run("BEGIN IMMEDIATE", &[], false) {
                Err(e) if (is_busy(&e) || is_interrupt(&e)) && started.elapsed() < LOCK_WAIT => {
                    std::thread::sleep(LOCK_RETRY)
                }
                other => break other,
            }
        };
        let restored = match set {
            true => self.execute(BUSY_WAIT, &[]).map(drop),
            false => Ok(()),
        };
        if restored.is_err() {
            self.conn.taint();
        }
        begun
            .map_err(|e| anyhow!("{}", describe(&e)))
            .context("running `BEGIN IMMEDIATE`")?;
        if let Err(e) = restored {
            self.rollback();
            return Err(e);
        }
        Ok(())
    }

    /// Runs `f` inside `BEGIN IMMEDIATE … COMMIT`; any error rolls back. `E` is the caller's error
    /// type. A transaction a libSQL server interrupted is run again, up to [`INTERRUPTED_TRIES`]
    /// times in all: the server rolls back a transaction that has held its write lock for 5 s while
    /// another writer waits (sqld's `TXN_TIMEOUT`) and answers its next statement "interrupted", so
    /// nothing of it was committed (on real Spin, where nodes' writers meet only in the server, a
    /// burst of concurrent creates met it; docs/scale-out.md).
    pub fn transaction<T, E: From<anyhow::Error>>(
        &self,
        mut f: impl FnMut(&Db) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut tries = 1;
        loop {
            self.conn.interrupted.set(false);
            self.begin_immediate()?;
            self.conn.in_transaction.set(true);
            let outcome = match f(self) {
                Ok(value) => match self.execute("COMMIT", &[]) {
                    Ok(_) => Ok(value),
                    Err(e) => {
                        // A failed COMMIT may leave the transaction open (SQLITE_BUSY).
                        self.rollback();
                        Err(e.into())
                    }
                },
                Err(e) => {
                    self.rollback();
                    Err(e)
                }
            };
            self.conn.in_transaction.set(false);
            if outcome.is_err() && self.conn.interrupted.get() && tries < INTERRUPTED_TRIES {
                std::thread::sleep(INTERRUPTED_PAUSE * tries);
                tries += 1;
                continue;
            }
            return outcome;
        }
    }

    /// `ROLLBACK`; when it fails, the connection's state is unknown and it is not kept.
    fn rollback(&self) {
        if self.execute("ROLLBACK", &[]).is_err() {
            self.conn.taint();
        }
    }
}

impl Row<'_> {
    fn value(&self, column: &str) -> Result<&Value> {
        let next = self.next.get();
        let found = if self.columns.get(next).is_some_and(|c| same_name(c, column)) {
            Some(next)
        } else {
            self.columns.iter().position(|c| same_name(c, column))
        };
        let i = found
            .ok_or_else(|| anyhow!("no column `{column}` in the result {:?}", self.columns))?;
        self.next.set(i + 1);
        Ok(&self.values[i])
    }

    pub fn i64(&self, column: &str) -> Result<i64> {
        match self.value(column)? {
            Value::Integer(n) => Ok(*n),
            other => Err(anyhow!(
                "column `{column}`: expected an integer, got {other:?}"
            )),
        }
    }

    pub fn bool(&self, column: &str) -> Result<bool> {
        Ok(self.i64(column)? != 0)
    }

    pub fn string(&self, column: &str) -> Result<String> {
        match self.value(column)? {
            Value::Text(s) => Ok(s.clone()),
            other => Err(anyhow!("column `{column}`: expected text, got {other:?}")),
        }
    }

    /// A stored code of a closed set (`common::codes`); an unknown code is an error.
    pub fn code<T: crate::codes::Coded>(&self, column: &str) -> Result<T> {
        let code = self.string(column)?;
        T::parse(&code).ok_or_else(|| anyhow!("column {column}: unknown code {code:?}"))
    }

    pub fn opt_string(&self, column: &str) -> Result<Option<String>> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            other => Err(anyhow!(
                "column `{column}`: expected text or null, got {other:?}"
            )),
        }
    }

    pub fn opt_i64(&self, column: &str) -> Result<Option<i64>> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(n) => Ok(Some(*n)),
            other => Err(anyhow!(
                "column `{column}`: expected an integer or null, got {other:?}"
            )),
        }
    }

    pub fn f64(&self, column: &str) -> Result<f64> {
        match self.value(column)? {
            Value::Real(x) => Ok(*x),
            Value::Integer(n) => Ok(*n as f64),
            other => Err(anyhow!(
                "column `{column}`: expected a number, got {other:?}"
            )),
        }
    }

    pub fn blob(&self, column: &str) -> Result<Vec<u8>> {
        match self.value(column)? {
            Value::Blob(b) => Ok(b.clone()),
            other => Err(anyhow!("column `{column}`: expected a blob, got {other:?}")),
        }
    }

    /// A blob, or `None` for NULL.
    pub fn opt_blob(&self, column: &str) -> Result<Option<Vec<u8>>> {
        match self.value(column)? {
            Value::Null => Ok(None),
            _ => self.blob(column).map(Some),
        }
    }
}

/// Whether a result column is `column`: without regard to ASCII case, as SQLite names are. A
/// libSQL server runs a statement re-rendered from its parse, so a column written `action` (a
/// keyword) comes back `ACTION` through Spin's libSQL backend.
fn same_name(name: &str, column: &str) -> bool {
    name == column || name.eq_ignore_ascii_case(column)
}

/// `count` positional parameters, `?, ?, …`: the list of an `IN (…)` or one row of a multi-row
/// `VALUES`.
pub fn placeholders(count: usize) -> String {
    vec!["?"; count].join(", ")
}

/// `count` numbered parameters from `?first` on, `?3, ?4, …`: the list of an `IN (…)` in a
/// statement whose other parameters are numbered too (a bare `?` written before `?2` would be
/// `?2`). `NULL` for none, so `IN (NULL)` matches nothing.
pub fn numbered(first: usize, count: usize) -> String {
    if count == 0 {
        return "NULL".into();
    }
    (first..first + count)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parameter helpers, so call sites read `&[text(&name), int(id)]`.
pub fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

pub fn int(n: i64) -> Value {
    Value::Integer(n)
}

pub fn boolean(b: bool) -> Value {
    Value::Integer(b as i64)
}

pub fn blob(bytes: &[u8]) -> Value {
    Value::Blob(bytes.to_vec())
}

pub fn opt_text(s: Option<&str>) -> Value {
    s.map_or(Value::Null, text)
}

pub fn opt_int(n: Option<i64>) -> Value {
    n.map_or(Value::Null, int)
}

/// A `LIKE … ESCAPE '\\'` pattern matching any text that contains `s`: `%`, `_` and `\\` in `s` match
/// themselves. Use it as a bound parameter, never spliced into SQL.
pub fn like_contains(s: &str) -> String {
    let mut pattern = String::with_capacity(s.len() + 2);
    pattern.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Whether an error chain is SQLite's unique-constraint violation (Spin reports errors as text).
pub fn is_unique_violation(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.to_string().contains("UNIQUE constraint failed"))
}

fn describe(e: &spin_sdk::sqlite3::Error) -> String {
    use spin_sdk::sqlite3::Error::*;
    match e {
        NoSuchDatabase => "no such database".into(),
        AccessDenied => "access denied".into(),
        InvalidConnection => "invalid connection".into(),
        DatabaseFull => "database full".into(),
        Io(message) => message.clone(),
    }
}

/// Whether `e` is a libSQL server's refusal of a statement it does not run over its remote
/// protocol (a connection setting): "SQL string could not be parsed: unsupported statement: …".
fn refuses_settings(e: &spin_sdk::sqlite3::Error) -> bool {
    matches!(e, spin_sdk::sqlite3::Error::Io(m) if m.contains("unsupported statement"))
}

/// Whether `e` is a libSQL server's `SQLITE_INTERRUPT`: it took the transaction's write lock away
/// and rolled it back (see [`Db::transaction`]). Spin reports the code; `receta` passes on the
/// server's message alone, "interrupted" (its `server_message`), as the bench's libSQL stage met it.
fn is_interrupt(e: &spin_sdk::sqlite3::Error) -> bool {
    matches!(e, spin_sdk::sqlite3::Error::Io(m)
        if m.contains("SQLITE_INTERRUPT") || m.trim().eq_ignore_ascii_case("interrupted"))
}

/// Whether `e` says the connection's server-side stream is gone: a libSQL server dropped it after
/// 10 s idle (`STREAM_EXPIRED`, "The stream has expired due to inactivity"), or no longer knows it
/// (a restart: "Received an invalid baton"). Spin 4.0.2 passes the server's answer on as text.
fn lost_stream(e: &spin_sdk::sqlite3::Error) -> bool {
    matches!(e, spin_sdk::sqlite3::Error::Io(m)
        if m.contains("STREAM_EXPIRED") || m.contains("stream has expired") || m.contains("invalid baton"))
}

/// Whether `e` is SQLite's `SQLITE_BUSY` (another connection holds the lock).
fn is_busy(e: &spin_sdk::sqlite3::Error) -> bool {
    matches!(e, spin_sdk::sqlite3::Error::Io(m) if m.contains("database is locked"))
}

/// The integer in the first column of `result`'s first row (`sql` names it in the error).
fn first_i64(result: &QueryResult, sql: &str) -> Result<i64> {
    match result.rows.first().and_then(|r| r.values.first()) {
        Some(Value::Integer(n)) => Ok(*n),
        other => Err(anyhow!(
            "expected one integer from `{}`, got {other:?}",
            first_line(sql)
        )),
    }
}

fn first_line(sql: &str) -> &str {
    sql.trim().lines().next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_lock_held_elsewhere_is_waited_for() {
        use spin_sdk::sqlite3::Error::*;
        assert!(is_busy(&Io("database is locked".into())));
        assert!(!is_busy(&Io("no such table: x".into())));
        assert!(!is_busy(&AccessDenied));
    }

    #[test]
    fn a_libsql_servers_refusal_of_a_setting_is_told_from_other_errors() {
        use spin_sdk::sqlite3::Error::*;
        // As Spin 4.0.2 on sqld 0.24 reports it.
        assert!(refuses_settings(&Io(
            "SQL string could not be parsed: unsupported statement: PRAGMA busy_timeout = 0".into()
        )));
        assert!(!refuses_settings(&Io("database is locked".into())));
        assert!(!refuses_settings(&InvalidConnection));
    }

    #[test]
    fn a_transaction_the_server_took_back_is_told_from_other_errors() {
        use spin_sdk::sqlite3::Error::*;
        // As Spin 4.0.2 on sqld 0.24 reports it.
        assert!(is_interrupt(&Io(
            "Hrana: `cursor error: `error at step 0: (error code: SQLITE_INTERRUPT) `SQLite \
             error: interrupted```"
                .into()
        )));
        // As `receta` reports it (the server's message alone).
        assert!(is_interrupt(&Io("interrupted".into())));
        assert!(!is_interrupt(&Io("UNIQUE constraint failed: t.v".into())));
        assert!(!is_interrupt(&Io(
            "the request was interrupted by a timeout".into()
        )));
        assert!(!is_interrupt(&AccessDenied));
    }

    #[test]
    fn a_stream_the_server_dropped_is_told_from_other_errors() {
        use spin_sdk::sqlite3::Error::*;
        // As Spin 4.0.2 on sqld 0.24 reports it after 10 s idle.
        assert!(lost_stream(&Io(
            "Hrana: `api error: `status=400 Bad Request, body={\"message\":\"The stream has \
             expired due to inactivity\",\"code\":\"STREAM_EXPIRED\"}``"
                .into()
        )));
        // After sqld restarted.
        assert!(lost_stream(&Io(
            "Hrana: `api error: `status=400 Bad Request, body=Received an invalid baton``".into()
        )));
        assert!(!lost_stream(&Io("no such table: t".into())));
        assert!(!lost_stream(&InvalidConnection));
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(like_contains("ana"), "%ana%");
        assert_eq!(like_contains("50%_off\\"), "%50\\%\\_off\\\\%");
        assert_eq!(like_contains(""), "%%");
        assert_eq!(like_contains("médico"), "%médico%");
    }

    #[test]
    fn a_row_reads_its_columns_in_any_order() {
        let columns = ["id", "name", "note"].map(String::from);
        let values = [Value::Integer(7), Value::Text("Ana".into()), Value::Null];
        let row = Row {
            columns: &columns,
            values: &values,
            next: Cell::new(0),
        };
        assert_eq!(row.i64("id").unwrap(), 7);
        assert_eq!(row.string("name").unwrap(), "Ana");
        assert_eq!(row.opt_string("note").unwrap(), None);
        // Out of order, again, and a column read twice.
        assert_eq!(row.string("name").unwrap(), "Ana");
        assert_eq!(row.i64("id").unwrap(), 7);
        assert_eq!(row.i64("id").unwrap(), 7);
        assert!(row.i64("missing").is_err());
        // A libSQL server renders a keyword column upper case.
        let columns = ["ACTION", "id"].map(String::from);
        let values = [Value::Text("lookup".into()), Value::Integer(1)];
        let row = Row {
            columns: &columns,
            values: &values,
            next: Cell::new(0),
        };
        assert_eq!(row.string("action").unwrap(), "lookup");
        assert!(row.i64("name").is_err());
    }

    #[test]
    fn numbered_lists_start_where_asked_and_match_nothing_when_empty() {
        assert_eq!(numbered(4, 3), "?4, ?5, ?6");
        assert_eq!(numbered(3, 1), "?3");
        assert_eq!(numbered(3, 0), "NULL");
    }
}
