//! The migrations rule (migrations/README.md): real Spin runs every file with `--sqlite @file` at
//! every start, so running each file twice, in order, on one database must succeed and change
//! nothing the second time.

use crate::helpers::repo_root;

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
