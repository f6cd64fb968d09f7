//! A replica connection's held-back transactions (`deferred`) against a real `sqld`: what commits,
//! what never does, and where an error is told; and a replica behind its own writes, whose reads go
//! to the primary until it catches up. `cargo xtask test` gives these tests the server
//! (`RECETA_SQLD`); run without one they say so and pass without checking anything. Each runs in a
//! child process of its own: the `libsql` crate must set SQLite up before anything else in the
//! process opens a database (`replica::init_libsql`), and this binary's other tests use rusqlite.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::capability::sqlite::bindings::{Error, Value};
use crate::capability::sqlite::config::Replica;
use crate::capability::sqlite::remote::{Connection, Database};
use crate::capability::sqlite::statement::{BATCHED, Statement};

/// An `sqld` on a free port in a temporary directory, killed when dropped.
struct Sqld {
    _server: receta_test_host::sqld::Sqld,
    url: String,
    _dir: tempfile::TempDir,
}

fn sqld() -> Option<Sqld> {
    let Some(binary) = std::env::var_os("RECETA_SQLD").map(PathBuf::from) else {
        eprintln!(
            "RECETA_SQLD is not set: no libSQL server to test against (cargo xtask test sets it)"
        );
        return None;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let server = receta_test_host::sqld::Sqld::start(&binary, dir.path());
    Some(Sqld {
        url: server.url.clone(),
        _server: server,
        _dir: dir,
    })
}

async fn replica_of(server: &Sqld, dir: &Path) -> Arc<Database> {
    let replica = Replica {
        path: dir.join("replica.db"),
        sync_interval: Duration::from_secs(60),
    };
    Arc::new(
        Database::new("default", &server.url, "", Some(&replica))
            .await
            .expect("replica"),
    )
}

fn batched(sql: &str) -> String {
    format!("{sql} {BATCHED}")
}

async fn run(
    conn: &mut Connection,
    sql: &str,
    values: Vec<Value>,
) -> Result<Vec<Vec<Value>>, Error> {
    let result = conn.execute(&Statement::parse(sql), values).await?;
    Ok(result.rows.into_iter().map(|r| r.values).collect())
}

/// The table's `v`s in order (`Value` has no `PartialEq`: compared as text).
async fn names(conn: &mut Connection) -> Vec<String> {
    let rows = run(conn, "SELECT v FROM t ORDER BY id", Vec::new())
        .await
        .expect("select");
    rows.into_iter()
        .map(|row| match row.first() {
            Some(Value::Text(v)) => v.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// Runs the test `name` alone in a child process and checks it passed; `false` in that child,
/// which runs the test's body.
fn ran_in_own_process(name: &str) -> bool {
    const CHILD: &str = "RECETA_REPLICA_TEST_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return false;
    }
    // The test's path as the harness names it: this module's, without the crate's name.
    let module = module_path!().split_once("::").map_or("", |(_, path)| path);
    let full = format!("{module}::{name}");
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args([&full, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("the test's own process");
    let status = output.status;
    print!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(status.success(), "{full} failed in its own process");
    // A name that matched nothing would pass without running anything.
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("running 0 tests"),
        "{full} matched no test"
    );
    true
}

#[test]
fn batched_writes_commit_together_and_a_failed_one_never_commits() {
    if ran_in_own_process("batched_writes_commit_together_and_a_failed_one_never_commits") {
        return;
    }
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(batched_writes_commit_together_and_a_failed_one_never_commits_body());
}

async fn batched_writes_commit_together_and_a_failed_one_never_commits_body() {
    let Some(server) = sqld() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = replica_of(&server, dir.path()).await;
    let mut conn = Connection::open(&db).unwrap();
    run(
        &mut conn,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE NOT NULL, b BLOB)",
        Vec::new(),
    )
    .await
    .unwrap();
    let insert = batched("INSERT INTO t (v, b) VALUES (?, ?)");

    // Kept writes only: one transactional batch at COMMIT, values as they were bound.
    run(&mut conn, "BEGIN IMMEDIATE", Vec::new()).await.unwrap();
    let blob = Value::Blob(vec![0, 0x27, 0xff]);
    run(&mut conn, &insert, vec![text("it's"), blob.clone()])
        .await
        .unwrap();
    run(&mut conn, &insert, vec![text("b"), Value::Null])
        .await
        .unwrap();
    run(&mut conn, "COMMIT", Vec::new()).await.unwrap();
    let rows = run(&mut conn, "SELECT v, b FROM t ORDER BY id", Vec::new())
        .await
        .unwrap();
    assert_eq!(
        format!("{rows:?}"),
        format!(
            "{:?}",
            [vec![text("it's"), blob], vec![text("b"), Value::Null]]
        )
    );

    // A kept write that fails: told at COMMIT, which rolls everything back.
    run(&mut conn, "BEGIN IMMEDIATE", Vec::new()).await.unwrap();
    run(&mut conn, &insert, vec![text("c"), Value::Null])
        .await
        .unwrap();
    run(&mut conn, &insert, vec![text("b"), Value::Null])
        .await
        .unwrap();
    let failed = run(&mut conn, "COMMIT", Vec::new()).await;
    assert!(
        matches!(&failed, Err(Error::Io(m)) if m == "UNIQUE constraint failed: t.v"),
        "{failed:?}"
    );
    run(&mut conn, "ROLLBACK", Vec::new()).await.unwrap();
    assert_eq!(names(&mut conn).await, ["it's", "b"]);

    // Sent halfway (a batched write with `RETURNING` needs the server), then a kept write fails:
    // still no commit, and the error is told by the next call that reaches the server.
    run(&mut conn, "BEGIN", Vec::new()).await.unwrap();
    let returned = run(
        &mut conn,
        &batched("INSERT INTO t (v) VALUES (?) RETURNING id"),
        vec![text("d")],
    )
    .await
    .unwrap();
    assert_eq!(
        format!("{returned:?}"),
        format!("{:?}", [[Value::Integer(3)]])
    );
    run(&mut conn, &insert, vec![text("b"), Value::Null])
        .await
        .unwrap();
    let told = run(&mut conn, "SELECT COUNT(*) FROM t", Vec::new()).await;
    assert!(matches!(told, Err(Error::Io(_))), "{told:?}");
    run(&mut conn, &insert, vec![text("e"), Value::Null])
        .await
        .unwrap();
    assert!(run(&mut conn, "COMMIT", Vec::new()).await.is_err());
    run(&mut conn, "ROLLBACK", Vec::new()).await.unwrap();
    assert_eq!(names(&mut conn).await, ["it's", "b"]);

    // An unmarked write is sent at once and tells its own error, as SQLite does.
    run(&mut conn, "BEGIN IMMEDIATE", Vec::new()).await.unwrap();
    let own = run(&mut conn, "INSERT INTO t (v) VALUES (?)", vec![text("b")]).await;
    assert!(
        matches!(&own, Err(Error::Io(m)) if m == "UNIQUE constraint failed: t.v"),
        "{own:?}"
    );
    run(&mut conn, "INSERT INTO t (v) VALUES (?)", vec![text("f")])
        .await
        .unwrap();
    run(&mut conn, "COMMIT", Vec::new()).await.unwrap();
    assert_eq!(names(&mut conn).await, ["it's", "b", "f"]);

    // A transaction rolled back before anything was sent costs the server nothing.
    run(&mut conn, "BEGIN IMMEDIATE", Vec::new()).await.unwrap();
    run(&mut conn, &insert, vec![text("g"), Value::Null])
        .await
        .unwrap();
    run(&mut conn, "ROLLBACK", Vec::new()).await.unwrap();
    assert_eq!(names(&mut conn).await.len(), 3);
}

#[test]
fn a_replica_behind_its_own_writes_reads_the_primary_until_it_catches_up() {
    if ran_in_own_process("a_replica_behind_its_own_writes_reads_the_primary_until_it_catches_up") {
        return;
    }
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(a_replica_behind_its_own_writes_reads_the_primary_until_it_catches_up_body());
}

async fn a_replica_behind_its_own_writes_reads_the_primary_until_it_catches_up_body() {
    let Some(server) = sqld() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Pulled every 60 s, and after each of its own writes.
    let db = replica_of(&server, dir.path()).await;
    let mut conn = Connection::open(&db).unwrap();
    run(
        &mut conn,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE NOT NULL)",
        Vec::new(),
    )
    .await
    .unwrap();
    // A row the replica has not pulled: written on the primary by another client.
    let other = Arc::new(
        Database::new("default", &server.url, "", None)
            .await
            .unwrap(),
    );
    let mut elsewhere = Connection::open(&other).unwrap();
    run(&mut elsewhere, "INSERT INTO t (v) VALUES ('b')", Vec::new())
        .await
        .unwrap();
    assert!(names(&mut conn).await.is_empty(), "read from the replica");

    // This node's pull after a write of its own failed (as during sqld's log compaction): its
    // reads go to the primary, and see the row.
    let parts = db.replica.as_ref().unwrap();
    parts.fell_behind(&db.db, "default");
    assert!(parts.behind());
    assert_eq!(names(&mut conn).await, ["b"]);

    // The replica pulls again on its own and reads are its file's again, now with the row.
    let started = std::time::Instant::now();
    while parts.behind() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never caught up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(names(&mut conn).await, ["b"]);
}
