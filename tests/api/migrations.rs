//! The migrations (migrations/README.md): the rule that every file is idempotent (real Spin's
//! `--sqlite @file` runs each at every start), and the app migrating its database itself
//! (`components/schema`): each file once, the ledger, a database a newer build migrated refused.
//! The ledger and schema readers here serve `nodes.rs` too.

use std::time::Duration;

use serde_json::json;

use crate::fixtures::{
    cron_less, db, each_file_once, eventually, ledger, reference_schema, schema_of,
};
use crate::helpers::{ADMIN_TOKEN, JOBS_TOKEN, repo_root, spawn_app, spawn_app_with, start};

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
