//! The database over HTTP from the app itself (issue 87: `database_url`, `database_token`,
//! `database_host`), in every pass: each test starts its own libSQL server (`sqld`, JWT
//! authentication) and gives the app its variables, so the app's Spin SQLite is never used.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::fixtures::eventually;
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, hospital_body, start};
use crate::sqld::Sqld;

const WAIT: Duration = Duration::from_secs(30);

/// The app on `db` over HTTP, sending `token`.
fn app_on(db: &Sqld, token: &str) -> TestApp {
    app_through(db, &db.url, token)
}

/// The app on `db` reached at `url` (the server's own, or a proxy's), sending `token`.
fn app_through(db: &Sqld, url: &str, token: &str) -> TestApp {
    app_with(AppConfig::default(), db, url, token)
}

/// As `app_through`, with no background job running (`spin.edge.toml` has no cron trigger, and
/// no scheduler calls the jobs door): every request the database gets is a request's own, so a
/// test can count them.
fn quiet_app_through(db: &Sqld, url: &str, token: &str) -> TestApp {
    let config = AppConfig {
        manifest: crate::paths::repo_root().join("spin.edge.toml"),
        scheduled: false,
        ..AppConfig::default()
    };
    app_with(config, db, url, token)
}

fn app_with(mut config: AppConfig, db: &Sqld, url: &str, token: &str) -> TestApp {
    for (name, value) in db.database_variables() {
        let value = match name.as_str() {
            "SPIN_VARIABLE_DATABASE_TOKEN" => token.to_string(),
            "SPIN_VARIABLE_DATABASE_URL" | "SPIN_VARIABLE_DATABASE_HOST" => url.to_string(),
            _ => value,
        };
        config.env.push((name, value));
    }
    start(config, tempfile::tempdir().unwrap())
}

/// The server's database file, read-only (what the app wrote, checked beside its answers).
fn read_only(db: &Sqld) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(
        db.database_file(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap()
}

mod creates;
mod proxy;
mod tokens;

use proxy::CommitCutter;

#[test]
fn a_wrong_token_is_a_503_whose_cause_is_logged_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let wrong = "eyJ-not-the-servers-token-0123456789";
    let app = app_on(&db, wrong);
    let refused = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN));
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(
        refused.json(),
        json!({"message": "The service is unavailable: try again in 5 s."})
    );
    assert_eq!(refused.header("retry-after"), Some("5"));
    let log = app.log();
    assert!(
        log.contains("database unavailable: libSQL over HTTP at") && log.contains("HTTP 401"),
        "the cause is logged:\n{log}"
    );
    assert!(!log.contains(wrong), "the token stays out of the log");

    // The right token: the same server serves (the app migrated it at its first request).
    let app = app_on(&db, &db.token);
    let listed = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN));
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert!(
        !app.log().contains(&db.token),
        "the token stays out of the log"
    );
}

#[test]
fn a_server_that_goes_away_is_a_prompt_503_and_the_app_resumes_when_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Sqld::primary(&dir.path().join("sqld"));
    let app = app_on(&db, &db.token.clone());
    let hospital = app.create_hospital(ADMIN_TOKEN, "Clínica Remota");
    let read = || app.get(&format!("/api/v2/hospital/{hospital}"), Some(ADMIN_TOKEN));
    assert_eq!(read().status, 200);

    db.stop();
    let asked = Instant::now();
    let down = read();
    assert_eq!(down.status, 503, "{}", down.text());
    assert_eq!(down.header("retry-after"), Some("5"));
    assert!(asked.elapsed() < WAIT, "{:?}", asked.elapsed());
    // A write while it is away is refused, not half-done.
    let refused = app.post(
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        &hospital_body("Clínica Perdida"),
    );
    assert_eq!(refused.status, 503, "{}", refused.text());

    // The same server back: the app carries on, nothing restarted, nothing of the refused write.
    db.start_again();
    let back = eventually("the app answering again", WAIT, || {
        let resp = read();
        (resp.status == 200).then_some(resp)
    });
    assert_eq!(back.json()["name"], json!("Clínica Remota"));
    let all = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).json();
    assert_eq!(all["count"], json!(1), "{all}");
}

#[test]
fn a_read_and_a_verify_count_in_the_database_and_write_nothing_to_the_key_value_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let app = app_on(&db, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "remota@example.mx", "Clínica Remota");
    let rx = practice.prescribe(&app);
    let signature = crate::fixtures::signature(&rx);
    let token = format!("Token {}", practice.medic.token);
    // Another medic who knows the signature gets a 404, and its attempt writes no row into the
    // prescription's access log (the row travels with the read, under the read's own condition).
    let other = crate::fixtures::Practice::new(&app, "otra@example.mx", "Clínica Otra");
    let refused = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        Some(&other.medic.token),
    );
    assert_eq!(refused.status, 404, "{}", refused.text());
    let read = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        Some(&practice.medic.token),
    );
    assert_eq!(read.status, 200, "{} ({token})", read.text());

    // In the database at once, before any job ran: no queue in between.
    let file = read_only(&db);
    let logged: i64 = file
        .query_row(
            "SELECT count(*) FROM access_log a JOIN prescriptions p ON p.id = a.prescription_id \
             WHERE p.signature = ?1 AND a.action = 'read' AND a.actor = 'medic'",
            [&signature],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(logged, 1, "the issuing medic's read only");
    // The public verify counts its caller in the database too.
    for _ in 0..2 {
        let verified = app.get(&format!("/api/v2/verify/{signature}"), None);
        assert_eq!(verified.status, 200, "{}", verified.text());
    }
    let counted: i64 = file
        .query_row(
            "SELECT coalesce(sum(count), 0) FROM rate_counters WHERE key LIKE 'verify/%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(counted, 2, "two verify calls counted in the database");
    let kv = app.state_dir.path().join("sqlite_key_value.db");
    let queued: i64 = rusqlite::Connection::open(&kv)
        .and_then(|kv| {
            kv.query_row(
                "SELECT count(*) FROM spin_key_value WHERE key LIKE 'reads/%' \
                 OR key LIKE 'calls/%' OR key LIKE 'verify/%'",
                [],
                |r| r.get(0),
            )
        })
        .unwrap_or(0);
    assert_eq!(queued, 0, "nothing in {}", kv.display());
}

#[test]
fn a_transaction_cut_after_its_begin_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let cutter = CommitCutter::to(&db.url);
    let app = app_through(&db, &cutter.url, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "cortada@example.mx", "Clínica Cortada");
    let signature = crate::fixtures::signature(&practice.prescribe(&app)).to_string();
    let pharmacy = crate::fixtures::pharmacy::register(&app, "Farmacia Cortada");

    // A claim is a transaction of several requests: `BEGIN IMMEDIATE` with its first read, then its
    // writes, then `COMMIT`, whose request never arrives.
    cutter.armed.store(true, Ordering::SeqCst);
    let cut = crate::fixtures::pharmacy::claim(&app, &pharmacy, &signature);
    cutter.armed.store(false, Ordering::SeqCst);
    assert_eq!(cut.status, 503, "{}", cut.text());
    // The claim's, and the call row's that the answer then logs.
    assert!(cutter.cut.load(Ordering::SeqCst) >= 1, "a COMMIT was cut");

    // The server ends the abandoned transaction on its own (its stream expires): the next claim
    // is the first and only one.
    let claimed = eventually("a claim once the cut transaction is gone", WAIT, || {
        let resp = crate::fixtures::pharmacy::claim(&app, &pharmacy, &signature);
        (resp.status == 200).then_some(resp)
    });
    assert!(claimed.json()["claim"].is_object(), "{}", claimed.text());
    let file = read_only(&db);
    let (claims, claim_logs): (i64, i64) = file
        .query_row(
            "SELECT (SELECT count(*) FROM claims), \
                    (SELECT count(*) FROM access_log WHERE action = 'claim')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((claims, claim_logs), (1, 1), "nothing of the cut claim");
}
