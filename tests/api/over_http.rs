//! The database over HTTP from the app itself (issue 87: `database_url`, `database_token`,
//! `database_host`), in every pass: each test starts its own libSQL server (`sqld`, JWT
//! authentication) and gives the app its variables, so the app's Spin SQLite is never used.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::fixtures::eventually;
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, hospital_body, start};
use crate::sqld::Sqld;

const WAIT: Duration = Duration::from_secs(30);

/// The app on `db` over HTTP, sending `token`.
fn app_on(db: &Sqld, token: &str) -> TestApp {
    let mut config = AppConfig::default();
    config.env.extend(
        db.database_variables()
            .into_iter()
            .filter(|(name, _)| name != "SPIN_VARIABLE_DATABASE_TOKEN"),
    );
    config
        .env
        .push(("SPIN_VARIABLE_DATABASE_TOKEN".into(), token.into()));
    start(config, tempfile::tempdir().unwrap())
}

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
fn a_read_logs_itself_in_the_database_and_writes_nothing_to_the_key_value_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let app = app_on(&db, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "remota@example.mx", "Clínica Remota");
    let rx = practice.prescribe(&app);
    let signature = crate::fixtures::signature(&rx);
    let token = format!("Token {}", practice.medic.token);
    let read = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        Some(&practice.medic.token),
    );
    assert_eq!(read.status, 200, "{} ({token})", read.text());

    // In the database at once, before any job ran: no queue in between.
    let file = rusqlite::Connection::open_with_flags(
        db.database_file(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let logged: i64 = file
        .query_row(
            "SELECT count(*) FROM access_log a JOIN prescriptions p ON p.id = a.prescription_id \
             WHERE p.signature = ?1 AND a.action = 'read' AND a.actor = 'medic'",
            [&signature],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(logged, 1);
    let kv = app.state_dir.path().join("sqlite_key_value.db");
    let queued: i64 = rusqlite::Connection::open(&kv)
        .and_then(|kv| {
            kv.query_row(
                "SELECT count(*) FROM spin_key_value WHERE key LIKE 'reads/%' OR key LIKE 'calls/%'",
                [],
                |r| r.get(0),
            )
        })
        .unwrap_or(0);
    assert_eq!(queued, 0, "nothing queued in {}", kv.display());
}
