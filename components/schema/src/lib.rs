//! The app migrates itself (docs/deploying.md, "Migrations"): the files of `migrations/` are
//! compiled in (`build.rs`), and [`ensure`] applies the ones its database has not recorded, in
//! order, each in one transaction with its ledger row in `_receta_migrations` (name and SHA-256,
//! the table `receta`'s own migration step keeps, so either may run first and nothing runs twice).
//! Two nodes starting together on one libSQL database apply each file once: a migration takes the
//! write lock (`BEGIN IMMEDIATE`) before it looks whether it was applied.
//!
//! A database that recorded a migration this build does not have was migrated by a newer build:
//! [`ensure`] refuses it ([`SchemaError::Ahead`], naming that migration) rather than serve it.
//!
//! An instance checks once: after the first success it costs nothing (a flag this instance keeps:
//! a fact of the database, not of a request).

use std::cell::Cell;
use std::fmt;

use common::db::{Db, text};
use sha2::{Digest, Sha256};

mod split;

pub use split::statements;

include!(concat!(env!("OUT_DIR"), "/migrations.rs"));

/// The ledger table.
pub const LEDGER: &str = "_receta_migrations";
const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS _receta_migrations (
    name TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL,
    applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
)";
const RECORDED: &str = "SELECT name FROM _receta_migrations";
const RECORDED_ONE: &str = "SELECT name FROM _receta_migrations WHERE name = ?";
const RECORD: &str = "INSERT INTO _receta_migrations (name, sha256) VALUES (?, ?)";

thread_local! {
    /// Whether this instance found its database's schema current.
    static CURRENT: Cell<bool> = const { Cell::new(false) };
}

/// Why the schema could not be made current.
#[derive(Debug)]
pub enum SchemaError {
    /// The database recorded `newer`, which this build does not have (its last is `last`).
    Ahead { newer: String, last: &'static str },
    /// The database failed (unreachable, or a migration failed).
    Failed(anyhow::Error),
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaError::Ahead { newer, last } => write!(
                f,
                "The database was migrated by a newer build: it has migration {newer}, and this \
                 build's last is {last}. This node serves nothing until it runs that build or a newer one."
            ),
            SchemaError::Failed(e) => write!(f, "migrating the database: {e:#}"),
        }
    }
}

impl From<anyhow::Error> for SchemaError {
    fn from(e: anyhow::Error) -> Self {
        SchemaError::Failed(e)
    }
}

/// Makes the database's schema current (see the module's text); once an instance succeeded, a no-op.
pub fn ensure() -> Result<(), SchemaError> {
    if CURRENT.get() {
        return Ok(());
    }
    let db = Db::open()?;
    let recorded = recorded(&db)?;
    if let Some(newer) = unknown(&recorded) {
        return Err(SchemaError::Ahead {
            newer: newer.to_string(),
            last: MIGRATIONS.last().map_or("(none)", |(name, _)| name),
        });
    }
    for (name, sql) in MIGRATIONS {
        if !recorded.iter().any(|r| r == name) {
            apply(&db, name, sql)?;
        }
    }
    CURRENT.set(true);
    Ok(())
}

/// The names the ledger holds; none when there is no ledger yet.
fn recorded(db: &Db) -> anyhow::Result<Vec<String>> {
    match db.query(RECORDED, &[], |r| r.string("name")) {
        Ok(names) => Ok(names),
        Err(e) if format!("{e:#}").contains("no such table") => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The newest recorded name this build does not have.
fn unknown(recorded: &[String]) -> Option<&str> {
    recorded
        .iter()
        .filter(|r| !MIGRATIONS.iter().any(|(name, _)| name == r))
        .max()
        .map(String::as_str)
}

/// One migration under the write lock: applied and recorded, unless another node recorded it
/// while this one waited for the lock.
fn apply(db: &Db, name: &str, sql: &str) -> anyhow::Result<()> {
    let digest: String = Sha256::digest(sql.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    db.transaction(|db| {
        db.execute(CREATE_LEDGER, &[])?;
        if db
            .query_opt(RECORDED_ONE, &[text(name)], |r| r.string("name"))?
            .is_some()
        {
            return Ok(());
        }
        for statement in split::statements(sql) {
            db.execute(statement, &[])?;
        }
        db.execute(RECORD, &[text(name), text(&digest)])?;
        eprintln!("receta: migration {name} applied");
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_migrations_is_compiled_in_in_order() {
        // The crate's directory as `cargo test` says at run time (see `tests/api/helpers.rs`).
        let dir = std::path::PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("../../migrations");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let compiled: Vec<&str> = MIGRATIONS.iter().map(|(name, _)| *name).collect();
        assert_eq!(compiled, files);
    }

    #[test]
    fn a_recorded_migration_this_build_lacks_is_named() {
        let known = vec![MIGRATIONS[0].0.to_string()];
        assert_eq!(unknown(&known), None);
        let ahead = vec![
            MIGRATIONS[0].0.to_string(),
            "9998_a.sql".to_string(),
            "9999_b.sql".to_string(),
        ];
        assert_eq!(unknown(&ahead), Some("9999_b.sql"));
    }

    /// SQLite's `sqlite3_complete`: whether `sql` ends a statement.
    fn complete(sql: &str) -> bool {
        let sql = std::ffi::CString::new(sql).unwrap();
        // SAFETY: a NUL-terminated string that outlives the call.
        unsafe { rusqlite::ffi::sqlite3_complete(sql.as_ptr()) != 0 }
    }

    /// Applying each file statement by statement (as the app does) gives the same schema and seed
    /// rows as SQLite's own whole-file run (as `spin up --sqlite @file` does).
    #[test]
    fn split_statements_build_the_schema_a_whole_file_builds() {
        let whole = rusqlite::Connection::open_in_memory().unwrap();
        let split = rusqlite::Connection::open_in_memory().unwrap();
        for (name, sql) in MIGRATIONS {
            whole.execute_batch(sql).unwrap();
            for statement in statements(sql) {
                // One statement by SQLite's own rule: complete, and no shorter text ending at one
                // of its `;` is.
                assert!(complete(&format!("{statement};")), "{name}: `{statement}`");
                for (i, _) in statement.match_indices(';') {
                    assert!(!complete(&statement[..=i]), "{name}: two in `{statement}`");
                }
                split
                    .execute_batch(statement)
                    .unwrap_or_else(|e| panic!("{name}: `{statement}`: {e}"));
            }
        }
        let schema = |c: &rusqlite::Connection| -> Vec<(String, String)> {
            c.prepare("SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL ORDER BY name")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert!(schema(&whole).len() > 40);
        assert_eq!(schema(&whole), schema(&split));
        // The seed rows too: a statement lost in the split would miss some.
        for (name, sql) in schema(&whole) {
            if sql.starts_with("CREATE TABLE") {
                let count = format!("SELECT count(*) FROM \"{name}\"");
                let rows = |c: &rusqlite::Connection| -> i64 {
                    c.query_row(&count, [], |r| r.get(0)).unwrap()
                };
                assert_eq!(rows(&whole), rows(&split), "rows of {name}");
            }
        }
    }

    /// Issue 88: a new attribute is a column (migrations/README.md). The tables keyed by their
    /// owner's id (a one-column primary key that references another table) are at most three, and
    /// each is in docs/architecture.md's table that says why it is not columns of its owner.
    #[test]
    fn the_tables_keyed_by_their_owners_id_are_the_documented_three() {
        let db = rusqlite::Connection::open_in_memory().unwrap();
        for (_, sql) in MIGRATIONS {
            db.execute_batch(sql).unwrap();
        }
        let extensions: Vec<String> = db
            .prepare(
                "SELECT t.name FROM sqlite_schema t, pragma_table_info(t.name) c, \
                 pragma_foreign_key_list(t.name) f \
                 WHERE t.type = 'table' AND c.pk = 1 AND f.\"from\" = c.name \
                 AND (SELECT count(*) FROM pragma_table_info(t.name) k WHERE k.pk > 0) = 1 \
                 ORDER BY t.name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(extensions.len() <= 3, "{extensions:?}");
        let docs = include_str!("../../../docs/architecture.md");
        // The paragraph that opens with the marker, and the table after it.
        let (_, after) = docs
            .split_once("**Three tables keyed by their owner's id")
            .expect("docs/architecture.md names them");
        let why: Vec<&str> = after.splitn(3, "\n\n").take(2).collect();
        let why = why.join("\n\n");
        for table in &extensions {
            assert!(
                why.contains(&format!("| `{table}`")),
                "{table} is not explained"
            );
        }
    }
}
