//! An embedded replica of a libSQL database (`replica_path`, this host's extension; docs/scale-out.md,
//! "Nodes with embedded replicas"): its set-up and first pull, the pool of its connections, the pull
//! after each of the node's writes, `remote` uses it (which statements its file answers is `Statement::reads`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::capability::sqlite::config::Replica;
use crate::capability::sqlite::local;
use crate::capability::sqlite::turn::BUSY_TIMEOUT;

/// How long a replica keeps trying to pull a write of its own before leaving it to the periodic
/// pull.
const OWN_WRITE_PULL: Duration = Duration::from_secs(1);
/// Longest a replica's first pull may take at start-up.
const FIRST_SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a replica that could not pull a write of its own tries again ([`Parts::fell_behind`]).
const CATCH_UP_EVERY: Duration = Duration::from_millis(200);

/// Idle connections of one replica.
pub type Pool = Arc<Mutex<Vec<libsql::Connection>>>;

/// The most idle connections a replica keeps (more are closed when given back).
const MAX_IDLE: usize = 32;

/// What a database with an embedded replica adds to the remote one.
pub struct Parts {
    /// Idle connections, lent to later `open`s. Each connection of a replica is its own session
    /// on the primary for the writes it sends, and the server keeps a session until it expires (at
    /// most 128 at once by default): a new one per `open` ran sqld out of them under load ("Timed
    /// out while opening database connection").
    pub pool: Pool,
    /// The replica's file, read directly: a read outside a transaction runs there with this host's
    /// local backend (statements prepared once per connection), not through the crate's
    /// connection, which parses and prepares every statement again to choose where it runs
    /// (~3,600 against ~6,000 details a second on a local file, by hand).
    pub reader: Arc<local::Database>,
    /// A client of the primary alone, for the reads of a node whose replica is behind its own
    /// writes ([`Parts::behind`]).
    pub primary: libsql::Database,
    /// Whether a write of this node is on the primary but not yet in its replica (its pull
    /// failed): until a pull succeeds, reads outside a transaction go to the primary, so that a
    /// request reads back what it wrote (a create's new ids: issue 70, a pull refused through
    /// sqld's 16.7 s log compaction).
    behind: Arc<AtomicBool>,
}

impl Parts {
    /// An empty pool, a reader of `replica`'s file and `primary`, a client of the primary.
    pub fn new(label: &str, replica: &Replica, primary: libsql::Database) -> Self {
        Self {
            pool: Pool::default(),
            reader: Arc::new(local::Database::reader(label, &replica.path)),
            primary,
            behind: Arc::default(),
        }
    }

    /// Whether reads outside a transaction go to the primary (see `behind`).
    pub fn behind(&self) -> bool {
        self.behind.load(Ordering::Acquire)
    }

    /// After a write of this node its replica could not pull: reads go to the primary, and the
    /// replica tries to pull every [`CATCH_UP_EVERY`] until it can (one task at a time).
    pub fn fell_behind(&self, replica: &Arc<libsql::Database>, label: &str) {
        if self.behind.swap(true, Ordering::AcqRel) {
            return;
        }
        let (behind, replica, label) = (self.behind.clone(), replica.clone(), label.to_string());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(CATCH_UP_EVERY).await;
                if let Ok(Ok(_)) = tokio::time::timeout(BUSY_TIMEOUT, replica.sync()).await {
                    behind.store(false, Ordering::Release);
                    eprintln!(
                        "sqlite: {label:?}: the replica has caught up with this node's writes"
                    );
                    return;
                }
            }
        });
    }

    /// An idle connection, if there is one.
    pub fn lend(&self) -> Option<libsql::Connection> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }
}

/// Gives `conn` (in autocommit mode) back to `pool`, unless the pool is full.
pub fn give_back(pool: &Pool, conn: libsql::Connection) {
    let mut idle = pool.lock().unwrap_or_else(|e| e.into_inner());
    if idle.len() < MAX_IDLE {
        idle.push(conn);
    }
}

/// The replica of `url` in `replica.path`, brought up to date with the server (a minute at most).
/// A pull the server refuses for a while (sqld answers "snapshot not found" while it compacts its
/// log, as it does when it starts on a large log) is tried again until the minute is over.
pub async fn open(
    label: &str,
    replica: &Replica,
    url: &str,
    token: &str,
) -> Result<libsql::Database> {
    let db = build(replica, url, token).await?;
    let started = std::time::Instant::now();
    let mut told = false;
    let synced = loop {
        let left = FIRST_SYNC_TIMEOUT.saturating_sub(started.elapsed());
        let failure = match tokio::time::timeout(left, db.sync()).await {
            Ok(Ok(synced)) => break synced,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "the first pull took over a minute".to_string(),
        };
        if started.elapsed() >= FIRST_SYNC_TIMEOUT {
            anyhow::bail!(
                "cannot bring the replica {} of {label:?} up to date with {url}: {failure}",
                replica.path.display()
            );
        }
        if !told {
            eprintln!(
                "sqlite: {label:?}: the replica's first pull failed, trying again: {failure}"
            );
            told = true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eprintln!(
        "sqlite: {label:?} replica {} at frame {:?} of {url} ({} frames pulled), \
         pulled every {} ms",
        replica.path.display(),
        synced.frame_no(),
        synced.frames_synced(),
        replica.sync_interval.as_millis()
    );
    Ok(db)
}

/// The embedded replica of `url` in `replica.path` (its directory made if missing), pulled every
/// `replica.sync_interval` (and after each of the node's writes, [`pull_own_write`]).
async fn build(replica: &Replica, url: &str, token: &str) -> Result<libsql::Database> {
    if let Some(dir) = replica.path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    init_libsql().await;
    let db = libsql::Builder::new_remote_replica(&replica.path, url.to_string(), token.to_string())
        .sync_interval(replica.sync_interval)
        // This host pulls after each of its writes itself (`pull_own_write`): the crate's own
        // pull fails the write that succeeded when the pull fails.
        .read_your_writes(false)
        .build()
        .await?;
    Ok(db)
}

/// After a write of a replica's connection reached the primary, pulls the replica up to it, so this
/// node reads its own write at once. The write stands whatever the pull gives: a pull that
/// fails (sqld answers "snapshot not found" for the seconds it compacts its log) is tried
/// again for up to [`OWN_WRITE_PULL`], then left to [`Parts::fell_behind`], and logged (`false`). Always a whole
/// pull, not the crate's `sync_until(<the write's frame>)`, which skips the pull when the replica's
/// frame number is already past the write's: tried, the replicas test of a primary that comes back
/// failed with it (the node's own write unread, 404), likely because the restarted primary's
/// numbers are not comparable with the frames the replica pulled before.
pub async fn pull_own_write(replica: &libsql::Database, label: &str) -> bool {
    let started = std::time::Instant::now();
    loop {
        let failure = match tokio::time::timeout(BUSY_TIMEOUT, replica.sync()).await {
            Ok(Ok(_)) => return true,
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no answer".to_string(),
        };
        if started.elapsed() >= OWN_WRITE_PULL {
            eprintln!(
                "sqlite: {label:?}: this node's write is on the primary but its replica could \
                 not pull it ({failure}); its reads go to the primary until it can"
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Lets the `libsql` crate set up SQLite first. Its first local database (an embedded replica's)
/// puts SQLite in serialized mode and stops the process if SQLite was initialized before, which
/// rusqlite's first connection does; so an in-memory libSQL database is opened before any other
/// (`Databases::open` calls this first when a replica is configured). Idempotent.
pub async fn init_libsql() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        if let Err(e) = libsql::Builder::new_local(":memory:").build().await {
            eprintln!("sqlite: libSQL's set-up failed: {e}");
        }
    })
    .await;
}
