//! The remote backend: a libSQL server (Turso, or a self-hosted `sqld`) through the official
//! `libsql` crate in remote mode (Hrana over HTTP), as Spin's own libSQL backend does, or, where
//! the runtime config names a `replica_path` (this host's extension), as an embedded replica: a
//! local copy of the database that the crate keeps in sync with the server (every
//! `sync_interval_ms`, and by this host right after each write of this node, `pull_own_write`),
//! reads outside a transaction served from it (by the local backend, `local::Database::reader`),
//! writes and everything inside a transaction sent to the server ("write delegation").
//!
//! The same semantics to guests as the local backend: each `open` is one server-side stream, so
//! `BEGIN IMMEDIATE … COMMIT` over it is one transaction (a plain `BEGIN` runs as `BEGIN
//! IMMEDIATE`); values keep their types; a statement's error is `io` with SQLite's own text
//! (`UNIQUE constraint failed: …`, without the server's wrapping). This host's writers take turns
//! before they reach the server (a FIFO lock per database, held from a connection's first writing
//! statement, `BEGIN` included, until it is back in autocommit mode), as on a local file: sqld 0.24
//! wedged with 8 of one node's writers waiting in it at once (every later `BEGIN IMMEDIATE`
//! unanswered while it spun on its lock; docs/scale-out.md), and a node's writers gain nothing from
//! queueing in the server instead. Nodes still meet in the server's lock. A server that is down,
//! refuses the token or does not answer within [`BUSY_TIMEOUT`] gives `io` too, never a hang, with
//! a text that starts [`UNAVAILABLE`] (guests answer 503 for it); a
//! statement that may wait for the server's write lock or flush (a write, `BEGIN`, `COMMIT`,
//! anything inside a transaction) is given [`LOCKED_TIMEOUT`] instead. A connection dropped with a
//! transaction open closes its stream, and the server rolls the transaction back.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::capability::sqlite::bindings::{Error, QueryResult, RowResult, Value};
use crate::capability::sqlite::config::Replica;
use crate::capability::sqlite::local;
use crate::capability::sqlite::result::{ResultBudget, no_rows};
use crate::capability::sqlite::statement::{Kind, Statement};
use crate::capability::sqlite::turn::{BUSY_TIMEOUT, Turn, Writers};
use deferred::{Deferred, Step};
use wire::{UNAVAILABLE, from_libsql, server_message, to_libsql};

mod deferred;
mod literal;
pub mod replica;
#[cfg(test)]
mod replica_tests;
mod wire;

/// How long a statement outside a transaction is tried again while the server says "database is
/// locked", and how long a statement that may wait for the server's write lock or flush waits for
/// its answer. The bench's libSQL seeding (4 concurrent creates) twice saw `BEGIN IMMEDIATE` and
/// `COMMIT` go unanswered for the whole 5 s of [`BUSY_TIMEOUT`] and fail with 500s; the cause was
/// not found (no log compaction in sqld's log then, and a compaction by hand, 5.9 s on 48,566
/// frames, did not hold writers up), so a writer now waits behind a stalled one as long as a
/// locked one is retried.
const LOCKED_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest a migration batch may take on the server.
const BATCH_TIMEOUT: Duration = Duration::from_secs(60);
/// Statements a remote connection keeps prepared ([`Connection::prepared`]); the app has fewer.
const PREPARED_MAX: usize = 256;

/// One configured remote database: its HTTP client, shared by all its connections.
pub struct Database {
    label: Arc<str>,
    url: String,
    db: Arc<libsql::Database>,
    /// Whose turn it is to write, among this host's connections (`turn`).
    writers: Writers,
    /// With an embedded replica: its connection pool and its file's reader.
    replica: Option<replica::Parts>,
}

impl Database {
    /// A client for `url`; nothing is sent until the first statement. With a `replica`, its local
    /// file is brought up to date with the server before this returns.
    pub async fn new(
        label: &str,
        url: &str,
        token: &str,
        replica: Option<&Replica>,
    ) -> Result<Self> {
        let context = || format!("cannot set up libSQL database {label:?} at {url}");
        let db = match replica {
            None => libsql::Builder::new_remote(url.to_string(), token.to_string())
                .build()
                .await
                .with_context(context)?,
            Some(replica) => replica::open(label, replica, url, token)
                .await
                .with_context(context)?,
        };
        Ok(Self {
            label: label.into(),
            url: url.to_string(),
            db: Arc::new(db),
            writers: Writers::default(),
            replica: match replica {
                Some(r) => Some(replica::Parts::new(
                    label,
                    r,
                    libsql::Builder::new_remote(url.to_string(), token.to_string())
                        .build()
                        .await
                        .with_context(context)?,
                )),
                None => None,
            },
        })
    }

    /// The server's address, for logs.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// After a write of one of its connections reached the server: a replica's pull up to it.
    async fn pull_own_write(&self) {
        if let Some(parts) = &self.replica
            && !replica::pull_own_write(&self.db, &self.label).await
        {
            parts.fell_behind(&self.db, &self.label);
        }
    }
}

/// The `connection` resource's remote form: one server-side stream.
pub struct Connection {
    conn: libsql::Connection,
    /// Its database (label, writers, replica).
    db: Arc<Database>,
    /// Held while this connection writes.
    turn: Turn,
    /// A replica's file, where its reads outside a transaction run, once opened.
    reading: Option<local::Connection>,
    /// A replica's stream on the primary for its reads while the replica is behind this node's
    /// writes (`replica::Parts::behind`), once opened.
    primary: Option<libsql::Connection>,
    /// A replica connection's transaction, held back until it must reach the server (`deferred`).
    deferred: Option<Deferred>,
    /// A held-back transaction's `COMMIT` failed, which ended it: the guest's `ROLLBACK` after it
    /// is answered here.
    ended: bool,
    /// Statements with rows this connection has run, prepared, without a replica: the `libsql`
    /// crate (0.9) asks the server to describe a statement before each `query` (a second HTTP
    /// request), where Spin's (0.5) sends the statement alone. Prepared once, a statement is one
    /// request per run, as on Spin; its columns are read from each answer, not from the
    /// description. Bounded by [`PREPARED_MAX`] (emptied when full).
    prepared: HashMap<String, libsql::Statement>,
}

impl Drop for Connection {
    /// A replica's connection goes back to its pool; one left inside a transaction first rolls it
    /// back (holding this node's writer turn until then), so the next `open` starts clean.
    fn drop(&mut self) {
        let Some(pool) = self.db.replica.as_ref().map(|r| r.pool.clone()) else {
            return;
        };
        let conn = self.conn.clone();
        if conn.is_autocommit() {
            replica::give_back(&pool, conn);
            return;
        }
        let turn = std::mem::take(&mut self.turn);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let rolled_back =
                    tokio::time::timeout(BUSY_TIMEOUT, conn.execute("ROLLBACK", ())).await;
                drop(turn);
                if matches!(rolled_back, Ok(Ok(_))) && conn.is_autocommit() {
                    replica::give_back(&pool, conn);
                }
            });
        }
    }
}

impl Connection {
    /// A new stream of `db` (opened on the server at its first statement), or an idle connection
    /// of its replica.
    pub fn open(db: &Arc<Database>) -> Result<Self> {
        let reused = db.replica.as_ref().and_then(|r| r.lend());
        let conn = match reused {
            Some(conn) => conn,
            None => db
                .db
                .connect()
                .with_context(|| format!("cannot connect to libSQL database {:?}", db.label))?,
        };
        Ok(Self {
            conn,
            db: db.clone(),
            turn: Turn::default(),
            reading: None,
            primary: None,
            deferred: None,
            ended: false,
            prepared: HashMap::new(),
        })
    }

    /// Whether the guest sees this connection outside a transaction.
    fn autocommit(&self) -> bool {
        self.deferred.is_none() && self.conn.is_autocommit()
    }

    /// Runs one statement and buffers its whole result. A server that answers "database is
    /// locked" to a statement outside a transaction of ours (a `BEGIN IMMEDIATE`, an autocommit
    /// write) ran nothing: that statement is tried again, as SQLite's busy handler would, for up
    /// to [`LOCKED_TIMEOUT`] (sqld holds its lock through a log compaction: 5.8 s measured on a
    /// 48,000-frame log).
    pub async fn execute(
        &mut self,
        statement: &Statement,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        if std::mem::take(&mut self.ended)
            && self.autocommit()
            && statement.kind() == (Kind::Rollback { plain: true })
        {
            return Ok(no_rows());
        }
        // Inside a held-back transaction: answered here, or sent as below, inside the
        // transaction now open on the server.
        if self.deferred.is_some()
            && let Some(answer) = self.deferred_step(statement, &parameters).await
        {
            return self.logged(answer);
        }
        // A turn not given in time lets the statement go to the server anyway, whose own waiting
        // then applies, as for another node's writer.
        let autocommit = self.autocommit();
        if autocommit
            && statement.reads()
            && let Some(replica) = &self.db.replica
        {
            if replica.behind() {
                let primary = match &self.primary {
                    Some(conn) => conn.clone(),
                    None => {
                        let conn = replica.primary.connect().map_err(|e| {
                            Error::Io(format!("{UNAVAILABLE}{}", server_message(&e.to_string())))
                        })?;
                        self.primary.insert(conn).clone()
                    }
                };
                let result = query(&primary, None, statement, parameters, false).await;
                return self.logged(result);
            }
            if self.reading.is_none() {
                match local::Connection::open(replica.reader.clone()) {
                    Ok(conn) => self.reading = Some(conn),
                    Err(e) => return Err(Error::Io(format!("{e:#}"))),
                }
            }
            if let Some(reading) = &mut self.reading {
                return reading.execute(statement, parameters).await;
            }
        }
        if autocommit && self.db.replica.is_some() && statement.opens_plain_transaction() {
            self.turn
                .before(&self.db.writers, statement, true, LOCKED_TIMEOUT)
                .await;
            self.deferred = Some(Deferred::default());
            return Ok(no_rows());
        }
        self.turn
            .before(&self.db.writers, statement, autocommit, LOCKED_TIMEOUT)
            .await;
        let result = self.execute_retried(statement, parameters).await;
        if self.conn.is_autocommit() {
            // A held-back transaction the server ended (a conflict clause's `ROLLBACK`) is over.
            self.deferred = None;
        }
        self.turn.after(self.conn.is_autocommit());
        let result = self.logged(result);
        match &result {
            // A write outside a transaction, or a transaction's end, reached the primary.
            Ok(_)
                if self.conn.is_autocommit()
                    && (statement.writes() || matches!(statement.kind(), Kind::Commit { .. })) =>
            {
                self.db.pull_own_write().await;
            }
            _ => {}
        }
        result
    }

    /// `result`, its server being unreachable logged.
    fn logged(&self, result: Result<QueryResult, Error>) -> Result<QueryResult, Error> {
        if let Err(Error::Io(message)) = &result
            && message.starts_with(UNAVAILABLE)
        {
            eprintln!("sqlite: {:?}: {message}", self.db.label);
        }
        result
    }

    /// A statement inside a held-back transaction: its answer, or `None` when it is to be sent
    /// (the transaction then open on the server, with what was kept).
    async fn deferred_step(
        &mut self,
        statement: &Statement,
        parameters: &[Value],
    ) -> Option<Result<QueryResult, Error>> {
        let tx = self.deferred.as_mut()?;
        let deadline = std::time::Instant::now() + LOCKED_TIMEOUT;
        match tx.step(statement, parameters) {
            Step::Kept => Some(Ok(no_rows())),
            Step::Rollback => {
                let begun = tx.begun();
                self.deferred = None;
                let result = if begun {
                    self.execute_once(statement, Vec::new()).await
                } else {
                    Ok(no_rows())
                };
                self.turn.after(self.conn.is_autocommit());
                Some(result)
            }
            Step::Commit => {
                let mut tx = self.deferred.take()?;
                let committed = within(LOCKED_TIMEOUT, tx.commit(&self.conn, deadline)).await;
                self.turn.after(self.conn.is_autocommit());
                match committed {
                    Ok(()) => {
                        self.db.pull_own_write().await;
                        Some(Ok(no_rows()))
                    }
                    Err(e) => {
                        self.ended = true;
                        Some(Err(e))
                    }
                }
            }
            Step::Send => {
                if let Err(e) = self.flush(deadline).await {
                    return Some(Err(e));
                }
                None
            }
        }
    }

    /// Sends what a held-back transaction kept (opening it on the server first), so that the
    /// next answer sees it.
    async fn flush(&mut self, deadline: std::time::Instant) -> Result<(), Error> {
        let Some(tx) = self.deferred.as_mut() else {
            return Ok(());
        };
        let flushed = within(LOCKED_TIMEOUT, tx.flush(&self.conn, deadline)).await;
        if self.conn.is_autocommit() && tx.begun() {
            // The server ended the transaction (a conflict clause's `ROLLBACK`).
            self.deferred = None;
            self.turn.after(true);
        }
        flushed
    }

    async fn execute_retried(
        &mut self,
        statement: &Statement,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        let started = std::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let outside = self.conn.is_autocommit();
            let result = self.execute_once(statement, parameters.clone()).await;
            match result {
                Err(Error::Io(message))
                    if outside
                        && message.contains("database is locked")
                        && started.elapsed() + pause < LOCKED_TIMEOUT =>
                {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                other => return other,
            }
        }
    }

    async fn execute_once(
        &mut self,
        statement: &Statement,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        let waits = statement.waits_for_writer(!self.conn.is_autocommit());
        let prepared = match self.db.replica {
            Some(_) => None,
            None => Some(&mut self.prepared),
        };
        query(&self.conn, prepared, statement, parameters, waits).await
    }

    /// Runs several statements (migrations, `--sqlite`) in one request to the server.
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        match tokio::time::timeout(BATCH_TIMEOUT, self.conn.execute_batch(sql)).await {
            Ok(Ok(_)) => {
                self.db.pull_own_write().await;
                Ok(())
            }
            Ok(Err(e)) => anyhow::bail!("{}", server_message(&e.to_string())),
            Err(_) => anyhow::bail!(
                "the libSQL server did not answer within {} s",
                BATCH_TIMEOUT.as_secs()
            ),
        }
    }
}

/// Runs `statement` on `conn` and buffers its whole result, within [`LOCKED_TIMEOUT`] if it
/// `waits` for the writer's lock, else [`BUSY_TIMEOUT`]. With `prepared` (a connection without a
/// replica), a statement with rows is prepared once there (see [`Connection::prepared`]).
async fn query(
    conn: &libsql::Connection,
    prepared: Option<&mut HashMap<String, libsql::Statement>>,
    statement: &Statement,
    parameters: Vec<Value>,
    waits: bool,
) -> Result<QueryResult, Error> {
    let sql = statement.to_run();
    let parameters: Vec<libsql::Value> = parameters.into_iter().map(to_libsql).collect();
    let run = async {
        // The client keeps the transaction state only for statements sent with `execute`;
        // rows come back only from `query`.
        if !statement.returns_rows() {
            conn.execute(sql, parameters).await?;
            return Ok(Ok(no_rows()));
        }
        let mut rows = match prepared {
            None => conn.query(sql, parameters).await?,
            Some(prepared) => {
                if !prepared.contains_key(sql) {
                    if prepared.len() >= PREPARED_MAX {
                        prepared.clear();
                    }
                    let statement = conn.prepare(sql).await?;
                    prepared.insert(sql.to_string(), statement);
                }
                prepared[sql].query(parameters).await?
            }
        };
        let count = rows.column_count();
        let columns = (0..count)
            .map(|i| rows.column_name(i).unwrap_or("").to_string())
            .collect();
        let mut out = Vec::new();
        let mut budget = ResultBudget::default();
        while let Some(row) = rows.next().await? {
            let mut values = Vec::with_capacity(count as usize);
            for i in 0..count {
                values.push(from_libsql(row.get_value(i)?));
            }
            if let Err(over) = budget.add(&values) {
                return Ok(Err(over));
            }
            out.push(RowResult { values });
        }
        Ok::<_, libsql::Error>(Ok(QueryResult { columns, rows: out }))
    };
    let limit = if waits { LOCKED_TIMEOUT } else { BUSY_TIMEOUT };
    match tokio::time::timeout(limit, run).await {
        Ok(Ok(result)) => result,
        Ok(Err(e)) => Err(Error::Io(server_message(&e.to_string()))),
        Err(_) => Err(Error::Io(format!(
            "{UNAVAILABLE}the libSQL server did not answer within {} s",
            limit.as_secs()
        ))),
    }
}

/// `work` given `limit` to finish; its error, or the server's silence, as the guest's `io` error.
async fn within(
    limit: Duration,
    work: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), Error> {
    match tokio::time::timeout(limit, work).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Error::Io(server_message(&e))),
        Err(_) => Err(Error::Io(format!(
            "{UNAVAILABLE}the libSQL server did not answer within {} s",
            limit.as_secs()
        ))),
    }
}
