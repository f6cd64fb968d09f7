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
//! - A plain `BEGIN` runs as `BEGIN IMMEDIATE` (`Statement::to_run`).
//! - Writers of this host take turns (`turn`), waiting up to `busy_timeout` for it; then SQLite's
//!   own timeout applies, as it does for another process writing the same file.
//! - `ATTACH` is denied (the attached-database limit is 0).

mod connection;
pub mod flush;
mod pool;

pub use connection::Connection;
pub use pool::Database;
