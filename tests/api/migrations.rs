//! The migrations (migrations/README.md): the app migrating its database itself
//! (`components/schema`): each file once, the ledger, a database a newer build migrated refused;
//! and a database built the earlier way (`spin up --sqlite @file` at every start, which the files
//! up to [`LAST_RUN_BY_FLAGS`] allowed by being idempotent) adopted by the ledger. The ledger and
//! schema readers here serve `nodes.rs` too.

use std::time::Duration;

use serde_json::json;

use crate::fixtures::{
    cron_less, db, each_file_once, eventually, ledger, migration_files, reference_schema, schema_of,
};
use crate::helpers::{ADMIN_TOKEN, JOBS_TOKEN, on_libsql, spawn_app, spawn_app_with, start};

/// The last file of the time when `spin up --sqlite @file` ran every file at every start: it and
/// every file before it are idempotent. Files after it run once (the ledger), and may alter tables.
const LAST_RUN_BY_FLAGS: &str = "0033_person_proof.sql";

/// The files a flagged start ran, as SQLite runs a whole file.
fn flag_era_files() -> Vec<(String, String)> {
    let files: Vec<_> = migration_files()
        .into_iter()
        .filter(|(name, _)| name.as_str() <= LAST_RUN_BY_FLAGS)
        .collect();
    assert!(
        files.iter().any(|(name, _)| name == LAST_RUN_BY_FLAGS),
        "{LAST_RUN_BY_FLAGS} is a migration"
    );
    files
}

/// A database `spin up --sqlite @file` built: the files run whole at each of `starts` starts.
fn built_by_flags(db: &rusqlite::Connection, starts: usize) {
    for _ in 0..starts {
        for (name, sql) in flag_era_files() {
            db.execute_batch(&sql)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

#[test]
fn the_files_spin_ran_at_every_start_run_twice_without_error_or_change() {
    let dump = |db: &rusqlite::Connection| -> Vec<(String, i64)> {
        let mut stmt = db
            .prepare("SELECT name, (SELECT count(*) FROM pragma_table_info(name)) FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let drugs = |db: &rusqlite::Connection| -> i64 {
        db.query_row("SELECT count(*) FROM drugs", [], |r| r.get(0))
            .unwrap()
    };
    let db = rusqlite::Connection::open_in_memory().unwrap();
    built_by_flags(&db, 1);
    let (first, seeded) = (dump(&db), drugs(&db));
    built_by_flags(&db, 1);
    assert_eq!(dump(&db), first, "the second run changed the schema");
    assert_eq!(drugs(&db), seeded, "the second run added seed rows");
}

/// A database built by two flagged starts and never by the app (no ledger): the app records every
/// file once, runs those after the flags' time, and ends with a fresh start's schema.
#[test]
fn a_database_built_by_sqlite_flags_is_adopted_by_the_ledger() {
    if on_libsql() {
        return; // The database is prepared as a local file.
    }
    let state_dir = tempfile::tempdir().unwrap();
    built_by_flags(&db_at(&state_dir), 2);
    assert!(ledger_absent(&db_at(&state_dir)));
    let app = start(cron_less(&[]), state_dir);
    assert_eq!(app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).status, 200);
    assert_eq!(ledger(&db(&app)), each_file_once());
    assert_eq!(schema_of(&db(&app)), reference_schema());
}

fn ledger_absent(db: &rusqlite::Connection) -> bool {
    db.query_row(
        "SELECT count(*) FROM sqlite_master WHERE name = '_receta_migrations'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        == 0
}

#[test]
fn the_app_migrates_a_fresh_database_itself_once_and_refuses_one_a_newer_build_migrated() {
    if on_libsql() {
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

/// However the pass built the schema first (`receta`'s own migration step; nothing but the app on
/// Spin), after a request every migration is recorded once and the schema is a single start's.
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
