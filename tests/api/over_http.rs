//! The database over HTTP from the app itself (issue 87: `database_url`, `database_token`,
//! `database_host`), in every pass: each test starts its own libSQL server (`sqld`, JWT
//! authentication) and gives the app its variables, so the app's Spin SQLite is never used.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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
    let mut config = AppConfig::default();
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

/// A loopback proxy to a server that keeps the text of every request it forwards (`sent`, in
/// order), and, once `armed`, cuts the connection of any request whose bytes carry a `COMMIT`
/// instead of forwarding it (counted in `cut`).
struct CommitCutter {
    url: String,
    armed: Arc<AtomicBool>,
    cut: Arc<AtomicUsize>,
    sent: Arc<Mutex<Vec<String>>>,
}

impl CommitCutter {
    fn to(target: &str) -> CommitCutter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (armed, cut) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let sent = Arc::new(Mutex::new(Vec::<String>::new()));
        let (armed2, cut2, sent2) = (armed.clone(), cut.clone(), sent.clone());
        let target = target.trim_start_matches("http://").to_string();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let (armed, cut, sent) = (armed2.clone(), cut2.clone(), sent2.clone());
                let (mut from_server, mut to_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_server, &mut to_client);
                    let _ = to_client.shutdown(Shutdown::Both);
                });
                std::thread::spawn(move || {
                    let (mut client, mut server) = (client, server);
                    let mut buf = vec![0u8; 256 * 1024];
                    // This connection's request being forwarded: its place in `sent`.
                    let mut current: Option<usize> = None;
                    loop {
                        let n = client.read(&mut buf).unwrap_or(0);
                        let chunk = &buf[..n];
                        let text = String::from_utf8_lossy(chunk);
                        let mut sent = sent.lock().unwrap();
                        match current {
                            Some(i) if !text.starts_with("POST ") => sent[i].push_str(&text),
                            _ if n > 0 => {
                                sent.push(text.into_owned());
                                current = Some(sent.len() - 1);
                            }
                            _ => {}
                        }
                        drop(sent);
                        let commit = chunk.windows(8).any(|w| w == b"\"COMMIT\"");
                        if n == 0 || (commit && armed.load(Ordering::SeqCst)) {
                            if n > 0 {
                                cut.fetch_add(1, Ordering::SeqCst);
                            }
                            let _ = server.shutdown(Shutdown::Both);
                            let _ = client.shutdown(Shutdown::Both);
                            return;
                        }
                        if server.write_all(chunk).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        CommitCutter {
            url,
            armed,
            cut,
            sent,
        }
    }

    /// How many requests it has forwarded so far.
    fn mark(&self) -> usize {
        self.sent.lock().unwrap().len()
    }

    /// The requests forwarded since `mark`, but an instance's check of the migrations' ledger
    /// (its first statement: on Spin 4.1 every request is an instance's first).
    fn since(&self, mark: usize) -> Vec<String> {
        let sent = self.sent.lock().unwrap();
        sent[mark..]
            .iter()
            .filter(|r| !r.contains("_receta_migrations"))
            .cloned()
            .collect()
    }
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
    let file = rusqlite::Connection::open_with_flags(
        db.database_file(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
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

#[test]
fn a_medics_detail_and_list_are_one_request_to_the_database_and_a_wrong_token_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let proxy = CommitCutter::to(&db.url);
    let app = app_through(&db, &proxy.url, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "una@example.mx", "Clínica Una");
    let signature = crate::fixtures::signature(&practice.prescribe(&app)).to_string();
    let path = format!("/api/v2/rx-endpoint/{signature}/");

    // The token's check, the read and its access-log row: one request.
    for _ in 0..2 {
        let mark = proxy.mark();
        let read = app.get(&path, Some(&practice.medic.token));
        assert_eq!(read.status, 200, "{}", read.text());
        assert_eq!(
            read.json()["signature"],
            json!(signature),
            "{}",
            read.text()
        );
        let sent = proxy.since(mark);
        assert_eq!(sent.len(), 1, "one request to the database: {sent:#?}");
        assert!(
            sent[0].contains("token_hash") && sent[0].contains("INSERT INTO access_log"),
            "the token's check and the log row travel with the read: {}",
            sent[0]
        );
    }
    // The admin's token needs no lookup: one request too.
    let mark = proxy.mark();
    let read = app.get(&path, Some(ADMIN_TOKEN));
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(proxy.since(mark).len(), 1, "{:#?}", proxy.since(mark));

    // What the read finds nothing for is answered as before: a token nobody holds 401, a
    // pharmacy's 403, another medic's 404, and none of them is logged as a read.
    let nobody = app.get(&path, Some("not-anyones-token-0123456789abcdef"));
    assert_eq!(nobody.status, 401, "{}", nobody.text());
    assert_eq!(nobody.json(), json!({"message": "Invalid Token"}));
    let pharmacy_token = crate::fixtures::pharmacy::register(&app, "Farmacia Una").token;
    let pharmacy = app.get(&path, Some(&pharmacy_token));
    assert_eq!(pharmacy.status, 403, "{}", pharmacy.text());
    let other = crate::fixtures::Practice::new(&app, "otra.una@example.mx", "Clínica Dos");
    let other = app.get(&path, Some(&other.medic.token));
    assert_eq!(other.status, 404, "{}", other.text());
    let inactive = app.patch(
        &format!("/api/v2/medics/{}/", practice.medic.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert_eq!(inactive.status, 202, "{}", inactive.text());
    let deactivated = app.get(&path, Some(&practice.medic.token));
    assert_eq!(deactivated.status, 401, "{}", deactivated.text());

    // The list and the search: the token's check, the page, its count and its medications, one
    // request; refused as before, a bad parameter after the token (401 first).
    let active = app.patch(
        &format!("/api/v2/medics/{}/", practice.medic.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": true}),
    );
    assert_eq!(active.status, 202, "{}", active.text());
    for query in ["", "?search=juan", "?search=nadie"] {
        let mark = proxy.mark();
        let listed = app.get(
            &format!("/api/v2/rx-endpoint/{query}"),
            Some(&practice.medic.token),
        );
        assert_eq!(listed.status, 200, "{}", listed.text());
        let expected = if query.ends_with("nadie") { 0 } else { 1 };
        assert_eq!(listed.json()["count"], json!(expected), "{}", listed.text());
        let sent = proxy.since(mark);
        assert_eq!(sent.len(), 1, "one request for the list{query}: {sent:#?}");
    }
    let empty = crate::fixtures::Practice::new(&app, "vacia@example.mx", "Clínica Vacía");
    let listed = app.get("/api/v2/rx-endpoint/", Some(&empty.medic.token));
    assert_eq!((listed.status, &listed.json()["count"]), (200, &json!(0)));
    for (token, status) in [
        ("not-anyones-token-0123456789abcdef", 401),
        (ADMIN_TOKEN, 403),
        (pharmacy_token.as_str(), 403),
    ] {
        let refused = app.get("/api/v2/rx-endpoint/", Some(token));
        assert_eq!(refused.status, status, "{token}: {}", refused.text());
        let refused = app.get("/api/v2/rx-endpoint/?limit=nope", Some(token));
        assert_eq!(refused.status, status, "{token}: {}", refused.text());
    }
    let bad = app.get(
        "/api/v2/rx-endpoint/?limit=nope",
        Some(&practice.medic.token),
    );
    assert_eq!(bad.status, 400, "{}", bad.text());

    let file = rusqlite::Connection::open_with_flags(
        db.database_file(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let reads: i64 = file
        .query_row(
            "SELECT count(*) FROM access_log a JOIN prescriptions p ON p.id = a.prescription_id \
             WHERE p.signature = ?1 AND a.action = 'read'",
            [&signature],
            |r| r.get(0),
        )
        .unwrap();
    // The medic's two reads fall in one minute or two; the admin's is its own.
    assert!((2..=3).contains(&reads), "{reads} reads logged");
}
