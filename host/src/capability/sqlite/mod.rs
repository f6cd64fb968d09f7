//! Spin SQLite (`spin:sqlite/sqlite@3.0.0`), as Spin splits it (`factor-sqlite` beside the
//! `sqlite-inproc` and `sqlite-libsql` crates): here the interface (the per-store state and its
//! bindings, the runtime config's labels, a statement as the host reads it, the writers' turn,
//! a buffered result), and each backend in its own folder behind one `Connection`:
//!
//! - `local/`: SQLite files through rusqlite (`type = "spin"`, and `default` unless configured);
//! - `remote/`: a libSQL server through the `libsql` crate (`type = "libsql"`), optionally through
//!   an embedded replica; built with the cargo feature `libsql` (on by default), so a host
//!   without it builds and refuses a `type = "libsql"` label at start-up.
//!
//! With Spin's semantics whichever backend serves a label: `open` checks the component's
//! `sqlite_databases` permission first (`access-denied`), then that the label is configured
//! (`no-such-database`); each `open` hands out its own connection; `execute` parses the statement
//! once (`statement`), runs it, and buffers the whole result; every database error is
//! `io(message)` with SQLite's text. `turn` is how this host's writers of one database take turns
//! on both backends.

pub mod bindings;
pub mod config;
pub mod local;
#[cfg(feature = "libsql")]
mod remote;
mod result;
pub mod statement;
mod turn;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use anyhow::{Context, Result};
use wasmtime::component::{HasSelf, Linker, Resource};

use bindings::{Error, QueryResult, Value, sqlite};
use config::Location;
use statement::{Kind, Statement};

/// One configured database label.
pub enum Database {
    /// A local file (or memory).
    Local(Arc<local::Database>),
    /// A libSQL server.
    #[cfg(feature = "libsql")]
    Remote(Arc<remote::Database>),
}

impl Database {
    /// A new connection.
    pub fn connect(&self) -> Result<Connection> {
        Ok(match self {
            Database::Local(db) => Connection::Local(local::Connection::open(db.clone())?),
            #[cfg(feature = "libsql")]
            Database::Remote(db) => Connection::Remote(remote::Connection::open(db)?),
        })
    }

    /// Where the database lives, for logs.
    pub fn describe(&self) -> String {
        match self {
            Database::Local(_) => "local SQLite".to_string(),
            #[cfg(feature = "libsql")]
            Database::Remote(db) => format!("libSQL at {}", db.url()),
        }
    }
}

/// All configured databases, by label.
#[derive(Default)]
pub struct Databases {
    by_label: HashMap<String, Arc<Database>>,
}

impl Databases {
    /// Opens every label of `locations` (see [`config::locations`]).
    pub async fn open(locations: BTreeMap<String, Location>) -> Result<Self> {
        let mut by_label = HashMap::new();
        #[cfg(feature = "libsql")]
        if locations.values().any(|l| {
            matches!(
                l,
                Location::Remote {
                    replica: Some(_),
                    ..
                }
            )
        }) {
            remote::replica::init_libsql().await;
        }
        for (label, location) in locations {
            let db = match location {
                Location::Remote {
                    url,
                    token,
                    replica,
                } => Self::remote(&label, &url, &token, replica.as_ref()).await?,
                local => Database::Local(Arc::new(local::Database::new(&label, local)?)),
            };
            by_label.insert(label, Arc::new(db));
        }
        Ok(Self { by_label })
    }

    #[cfg(feature = "libsql")]
    async fn remote(
        label: &str,
        url: &str,
        token: &str,
        replica: Option<&config::Replica>,
    ) -> Result<Database> {
        let db = remote::Database::new(label, url, token, replica).await?;
        Ok(Database::Remote(Arc::new(db)))
    }

    #[cfg(not(feature = "libsql"))]
    async fn remote(
        label: &str,
        url: &str,
        _token: &str,
        _replica: Option<&config::Replica>,
    ) -> Result<Database> {
        anyhow::bail!(
            "database {label:?} is a libSQL server ({url}), but this receta was built without \
             libSQL (cargo feature `libsql`)"
        )
    }

    /// The database configured for `label`.
    pub fn get(&self, label: &str) -> Option<&Arc<Database>> {
        self.by_label.get(label)
    }
}

/// The `connection` resource: a guest's connection, on whichever backend serves its label.
pub enum Connection {
    /// See `local`.
    Local(local::Connection),
    /// See `remote`.
    #[cfg(feature = "libsql")]
    Remote(remote::Connection),
}

impl Connection {
    /// Runs one statement.
    pub async fn execute(
        &mut self,
        statement: &Statement,
        parameters: Vec<Value>,
    ) -> Result<QueryResult, Error> {
        match (self, statement.kind()) {
            // A guest's lock wait is answered and not applied on a local file (host/README.md):
            // this host's writer turns make a writer wait for another's lock in turn (up to
            // `turn::BUSY_TIMEOUT`).
            (
                Connection::Local(_),
                Kind::Pragma {
                    busy_timeout: true, ..
                },
            ) => Ok(result::no_rows()),
            (Connection::Local(c), _) => c.execute(statement, parameters).await,
            // A libSQL server refuses the pragmas that would change its connection's settings,
            // and so does this host, on a replica too, as Spin's backend passes them on.
            #[cfg(feature = "libsql")]
            (Connection::Remote(_), Kind::Pragma { libsql: false, .. }) => Err(Error::Io(format!(
                "SQL string could not be parsed: unsupported statement: {}",
                statement.text()
            ))),
            #[cfg(feature = "libsql")]
            (Connection::Remote(c), _) => c.execute(statement, parameters).await,
        }
    }

    /// Runs a script of several statements.
    pub async fn execute_batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Connection::Local(c) => c.execute_batch(sql).await,
            #[cfg(feature = "libsql")]
            Connection::Remote(c) => c.execute_batch(sql).await,
        }
    }

    /// `last-insert-rowid`. On libSQL, 0, as Spin's backend answers: its client counts only the
    /// statements it runs without rows, and Spin runs every statement as a query (a guest reads
    /// ids with `RETURNING`).
    async fn last_insert_rowid(&mut self) -> i64 {
        match self {
            Connection::Local(c) => c.last_insert_rowid(),
            #[cfg(feature = "libsql")]
            Connection::Remote(_) => 0,
        }
    }

    /// `changes`. On libSQL, 0, as `last_insert_rowid` (a guest counts with `RETURNING`).
    async fn changes(&mut self) -> u64 {
        match self {
            Connection::Local(c) => c.changes(),
            #[cfg(feature = "libsql")]
            Connection::Remote(_) => 0,
        }
    }

    fn close(self) {
        match self {
            Connection::Local(c) => c.close(),
            #[cfg(feature = "libsql")]
            Connection::Remote(c) => drop(c),
        }
    }
}

/// One store's SQLite state: which labels its component may open, the shared databases, and the
/// connections its guest holds (a handle's number is the key here).
pub struct SqliteState {
    allowed: Arc<HashSet<String>>,
    databases: Arc<Databases>,
    connections: HashMap<u32, Connection>,
    next: u32,
}

impl SqliteState {
    /// Fresh state for one store.
    pub fn new(allowed: Arc<HashSet<String>>, databases: Arc<Databases>) -> Self {
        Self {
            allowed,
            databases,
            connections: HashMap::new(),
            next: 0,
        }
    }

    fn connection(&mut self, handle: &Resource<sqlite::Connection>) -> Option<&mut Connection> {
        self.connections.get_mut(&handle.rep())
    }
}

/// Adds the interface to `linker`; `get` finds a store's SQLite state.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> &mut SqliteState,
) -> Result<()> {
    sqlite::add_to_linker::<T, HasSelf<SqliteState>>(linker, get)
        .map_err(anyhow::Error::from)
        .context("cannot add spin:sqlite to the linker")
}

impl sqlite::Host for SqliteState {}

impl sqlite::HostConnection for SqliteState {
    async fn open(
        &mut self,
        database: String,
    ) -> wasmtime::Result<Result<Resource<sqlite::Connection>, Error>> {
        if !self.allowed.contains(&database) {
            return Ok(Err(Error::AccessDenied));
        }
        let Some(db) = self.databases.get(&database).cloned() else {
            return Ok(Err(Error::NoSuchDatabase));
        };
        let conn = match db.connect() {
            Ok(conn) => conn,
            Err(e) => return Ok(Err(Error::Io(format!("{e:#}")))),
        };
        let rep = self.next;
        self.next = self.next.wrapping_add(1);
        self.connections.insert(rep, conn);
        Ok(Ok(Resource::new_own(rep)))
    }

    async fn execute(
        &mut self,
        connection: Resource<sqlite::Connection>,
        statement: String,
        parameters: Vec<Value>,
    ) -> wasmtime::Result<Result<QueryResult, Error>> {
        let Some(conn) = self.connection(&connection) else {
            return Ok(Err(Error::InvalidConnection));
        };
        Ok(conn.execute(&Statement::parse(statement), parameters).await)
    }

    async fn last_insert_rowid(
        &mut self,
        connection: Resource<sqlite::Connection>,
    ) -> wasmtime::Result<i64> {
        Ok(match self.connection(&connection) {
            Some(c) => c.last_insert_rowid().await,
            None => 0,
        })
    }

    async fn changes(&mut self, connection: Resource<sqlite::Connection>) -> wasmtime::Result<u64> {
        Ok(match self.connection(&connection) {
            Some(c) => c.changes().await,
            None => 0,
        })
    }

    async fn drop(&mut self, connection: Resource<sqlite::Connection>) -> wasmtime::Result<()> {
        if let Some(conn) = self.connections.remove(&connection.rep()) {
            conn.close();
        }
        Ok(())
    }
}
