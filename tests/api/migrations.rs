//! The migrations (migrations/README.md): the rule that every file is idempotent (real Spin's
//! `--sqlite @file` runs each at every start), and the app migrating its database itself
//! (`components/schema`): each file once, the ledger, a database a newer build migrated refused.
//! The ledger and schema readers here serve `nodes.rs` too.

use std::time::Duration;

use serde_json::json;

use crate::helpers::{ADMIN_TOKEN, JOBS_TOKEN, repo_root, spawn_app, spawn_app_with, start};
use crate::jobs::cron_less;
use crate::outbound::{db, eventually};

#[test]
fn every_migration_runs_twice_without_error_or_change() {
    let dir = repo_root().join("migrations");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "{files:?}");
    let db = rusqlite::Connection::open_in_memory().unwrap();
    let dump = |db: &rusqlite::Connection| -> Vec<(String, i64)> {
        let mut stmt = db
            .prepare("SELECT name, (SELECT count(*) FROM pragma_table_info(name)) FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let run_all = |db: &rusqlite::Connection| {
        for file in &files {
            let sql = std::fs::read_to_string(file).unwrap();
            db.execute_batch(&sql)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        }
    };
    run_all(&db);
    let first = dump(&db);
    let drugs: i64 = db
        .query_row("SELECT count(*) FROM drugs", [], |r| r.get(0))
        .unwrap();
    run_all(&db);
    assert_eq!(dump(&db), first, "the second run changed the schema");
    let again: i64 = db
        .query_row("SELECT count(*) FROM drugs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(again, drugs, "the second run added seed rows");
}

/// The migrations as `spin up --sqlite @file` runs them (SQLite's own whole-file run): the
/// schema a fresh start must give.
pub fn reference_schema() -> Vec<Object> {
    let reference = rusqlite::Connection::open_in_memory().unwrap();
    for (_, sql) in migration_files() {
        reference.execute_batch(&sql).unwrap();
    }
    schema_of(&reference)
}

/// The `.sql` files of `migrations/`, in order: name and text.
pub fn migration_files() -> Vec<(String, String)> {
    let mut files: Vec<_> = std::fs::read_dir(repo_root().join("migrations"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// A schema object: kind, name, table, columns.
pub type Object = (String, String, String, Vec<String>);

/// Every table, index and trigger of a database but the ledger, by its structure: kind, name,
/// table, and the columns (name, type, not null, default, key) of a table or an index. Not the
/// SQL text: a libSQL server stores the statement as it re-renders it.
pub fn schema_of(db: &rusqlite::Connection) -> Vec<Object> {
    let objects: Vec<(String, String, String)> = db
        .prepare(
            "SELECT type, name, tbl_name FROM sqlite_schema WHERE sql IS NOT NULL \
             AND name NOT LIKE '_receta_migrations%' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    objects
        .into_iter()
        .map(|(kind, name, table)| {
            let columns = match kind.as_str() {
                "table" => {
                    "SELECT name || ' ' || type || ' ' || \"notnull\" || ' ' || \
                            ifnull(dflt_value, '') || ' ' || pk FROM pragma_table_info(?1)"
                }
                "index" => "SELECT ifnull(name, '(expression)') FROM pragma_index_info(?1)",
                _ => "SELECT ?1 WHERE 0",
            };
            let columns = db
                .prepare(columns)
                .unwrap()
                .query_map([&name], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (kind, name, table, columns)
        })
        .collect()
}

/// The ledger a current database holds: every file of `migrations/`, recorded once.
pub fn each_file_once() -> Vec<(String, i64)> {
    migration_files()
        .into_iter()
        .map(|(name, _)| (name, 1))
        .collect()
}

/// The ledger: each migration's name and how many times it was recorded.
pub fn ledger(db: &rusqlite::Connection) -> Vec<(String, i64)> {
    db.prepare("SELECT name, count(*) FROM _receta_migrations GROUP BY name ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn the_app_migrates_a_fresh_database_itself_once_and_refuses_one_a_newer_build_migrated() {
    if crate::helpers::on_libsql() {
        return; // It writes the ledger in the database file: a local database only.
    }
    let app = spawn_app_with(cron_less(&[]));
    assert_eq!(app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).status, 200);
    let expected = each_file_once();
    assert_eq!(ledger(&db(&app)), expected);
    assert_eq!(schema_of(&db(&app)), reference_schema());
    let applied = app.log().matches("receta: migration ").count();
    assert!(applied >= expected.len(), "the app says what it applied");

    // A restart applies nothing again.
    let state_dir = app.crash();
    db_at(&state_dir)
        .execute(
            "INSERT INTO _receta_migrations (name, sha256) VALUES ('9999_from_a_newer_build.sql', 'x')",
            [],
        )
        .unwrap();
    let app = start(cron_less(&[]), state_dir);
    let refused = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN));
    assert_eq!(refused.status, 503, "{}", refused.text());
    let message = refused.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("9999_from_a_newer_build.sql") && message.contains("newer build"),
        "{message}"
    );
    assert_eq!(
        app.post("/api/v2/jobs/run/", Some(JOBS_TOKEN), &json!({}))
            .status,
        503
    );
    let ledger_now = ledger(&db(&app));
    assert_eq!(
        ledger_now.len(),
        expected.len() + 1,
        "nothing applied twice"
    );
    assert!(ledger_now.iter().all(|(_, times)| *times == 1));
    eventually("the refusal in the log", Duration::from_secs(5), || {
        app.log()
            .contains("9999_from_a_newer_build.sql")
            .then_some(())
    });
}

/// However the pass built the schema first (`receta`'s own migration step; `spin up --sqlite @file`
/// on the cron pass; nothing but the app on the cron-less pass), after a request every migration
/// is recorded once and the schema is a single start's.
#[test]
fn whatever_built_the_schema_each_migration_is_recorded_once() {
    let app = spawn_app();
    assert_eq!(app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).status, 200);
    let expected = each_file_once();
    assert_eq!(ledger(&db(&app)), expected);
    assert_eq!(schema_of(&db(&app)), reference_schema());
}

fn db_at(state_dir: &tempfile::TempDir) -> rusqlite::Connection {
    rusqlite::Connection::open(state_dir.path().join("sqlite_db.db")).unwrap()
}
