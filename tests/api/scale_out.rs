//! Scale-out (docs/scale-out.md): several stateless `receta` nodes on one libSQL database, proven
//! on a real server (`sqld`, see `sqld.rs`): a primary, a replica following it, one node on each.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, start};
use crate::notifications::relay_config;
use crate::outbound::{Listener, Practice, Reply, eventually};
use crate::pharmacies::{burn, lookup, med_ids, prescribe, register, signature};
use crate::sqld::Sqld;
use receta_test_host::free_port;

const WAIT: Duration = Duration::from_secs(30);

/// A node of the app on `db`, with its own state dir (nothing but logs and caches in it).
fn node(db: &Sqld, config: AppConfig) -> TestApp {
    let state_dir = tempfile::tempdir().expect("state dir");
    let runtime_config = db.runtime_config(&state_dir.path().join("runtime-config.toml"));
    start(
        AppConfig {
            runtime_config: Some(runtime_config),
            ..config
        },
        state_dir,
    )
}

/// Two nodes started at the same moment (their migrations race), on `a` and `b`.
fn two_nodes(a: &Sqld, b: &Sqld, config: impl Fn() -> AppConfig + Sync) -> (TestApp, TestApp) {
    std::thread::scope(|s| {
        let first = s.spawn(|| node(a, config()));
        let second = s.spawn(|| node(b, config()));
        (first.join().unwrap(), second.join().unwrap())
    })
}

/// `name → times applied` of the shared database's migration records.
fn migrations_applied(db: &Sqld) -> BTreeMap<String, i64> {
    let conn = rusqlite::Connection::open_with_flags(
        db.database_file(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = conn
        .prepare("SELECT name, count(*) FROM _receta_migrations GROUP BY name")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn migration_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(crate::helpers::repo_root().join("migrations"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    names.sort();
    names
}

/// A new practice on `node`, a webhook to `receiver` for its dispenses, and a prescription issued
/// there: the practice and the create's answer.
pub fn issue_with_dispense_hook(
    node: &TestApp,
    receiver: &Listener,
    email: &str,
    hospital: &str,
) -> (Practice, Value) {
    let practice = Practice::new(node, email, hospital);
    let hook = json!({"url": receiver.url("/hook"), "hospitals": [practice.hospital],
                      "events": ["prescription.dispensed"]});
    assert_eq!(
        node.post("/api/v2/webhooks/", Some(ADMIN_TOKEN), &hook)
            .status,
        201
    );
    let rx = prescribe(node, &practice);
    (practice, rx)
}

fn cluster(dir: &Path) -> (Sqld, Sqld) {
    let primary = Sqld::primary(&dir.join("primary"));
    let replica = Sqld::replica(&dir.join("replica"), &primary);
    (primary, replica)
}

#[test]
fn a_prescription_issued_on_one_node_is_read_dispensed_and_delivered_through_another() {
    let dir = tempfile::tempdir().unwrap();
    let (primary, replica) = cluster(dir.path());
    let receiver = Listener::ok();
    let (a, b) = two_nodes(&primary, &replica, AppConfig::default);

    // Both started against one empty database: every migration applied exactly once.
    let applied = migrations_applied(&primary);
    assert_eq!(
        applied.keys().cloned().collect::<Vec<_>>(),
        migration_files()
    );
    assert!(applied.values().all(|&n| n == 1), "{applied:?}");
    // Each migration is applied by one node or the other (under the write lock, one at a time,
    // so two nodes starting together may share the work), and logged once.
    let logs = format!("{}{}", a.log(), b.log());
    let mut logged: Vec<&str> = logs
        .lines()
        .filter(|line| line.starts_with("receta: applied "))
        .filter_map(|line| line.rsplit_once(": "))
        .flat_map(|(_, names)| names.split(", "))
        .collect();
    logged.sort();
    assert_eq!(
        logged,
        migration_files(),
        "every migration logged as applied exactly once:\n{logs}"
    );

    // Issued through A (on the primary); a webhook subscription for the dispense, also via A.
    let (practice, rx) =
        issue_with_dispense_hook(&a, &receiver, "nodo-a@example.mx", "Clínica Nodo A");
    let sig = signature(&rx);

    // Read through B (on the replica): visible once replicated.
    let issued = Instant::now();
    let detail = eventually("the prescription on node B", WAIT, || {
        let resp = b.get(
            &format!("/api/v2/rx-endpoint/{sig}/"),
            practice.medic.token(),
        );
        (resp.status == 200).then(|| resp.json())
    });
    let lag = issued.elapsed();
    assert_eq!(detail["signature"], json!(sig));
    eprintln!("scale-out: node B read the prescription {lag:?} after node A issued it");

    // A pharmacy registered through A looks it up and dispenses it through B.
    let pharmacy = register(&a, "Farmacia Nodo B");
    let found = eventually("the pharmacy on node B", WAIT, || {
        let resp = lookup(&b, &pharmacy, &sig);
        (resp.status == 200).then(|| resp.json())
    });
    assert_eq!(
        found["status"]["rx_status"][0],
        json!("available"),
        "{found}"
    );
    let (amox, para) = med_ids(&rx);
    let sold = burn(&b, &pharmacy, &sig, &[(amox, 2), (para, 1)]);
    assert_eq!(sold.status, 200, "{}", sold.text());
    // The transaction ran on the primary: A sees the new state at once, and a second dispense
    // through A is refused.
    let after = a.get(
        &format!("/api/v2/rx-endpoint/{sig}/"),
        practice.medic.token(),
    );
    assert_eq!(
        after.json()["status"]["rx_status"][0],
        json!("dispensed"),
        "{}",
        after.text()
    );
    assert_eq!(burn(&a, &pharmacy, &sig, &[(para, 1)]).status, 409);

    // The event, written in B's dispense transaction, is delivered once.
    let events = receiver.wait_for_events(1, WAIT);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(receiver.events().len(), 1);
    assert_eq!(
        events[0].json(),
        json!({"signature": sig, "type": "prescription.dispensed"})
    );
}

#[test]
fn two_nodes_cron_workers_deliver_each_outbox_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let (primary, replica) = cluster(dir.path());
    // Webhooks go to a port nobody listens on yet: every first attempt fails and the rows wait
    // for the cron workers of both nodes (every 5 s), which race for them once it listens.
    let port = free_port();
    // Retries after 0.05 s, 3 s, 18 s...: a row fails at most twice before the receiver is up.
    let config = || AppConfig::with_variables(&[("outbox_retry_scale", "0.01")]);
    let (a, b) = two_nodes(&primary, &replica, config);
    let practice = Practice::new(&a, "cron@example.mx", "Clínica Cron");
    // Registering pings the receiver: it answers then, and is gone while the rows are written.
    let registering = Listener::on_port(port, |_, _| Reply::Status(200));
    let hook = json!({"url": registering.url("/hook"), "hospitals": [practice.hospital]});
    let registered = a.post("/api/v2/webhooks/", Some(ADMIN_TOKEN), &hook);
    assert_eq!(registered.status, 201, "{}", registered.text());
    drop(registering);
    const ROWS: usize = 24;
    let mut signatures = Vec::new();
    for i in 0..ROWS {
        let on = if i % 2 == 0 { &a } else { &b };
        signatures.push(signature(&prescribe(on, &practice)));
    }
    let receiver = Listener::on_port(port, |_, _| Reply::Status(200));
    let events = receiver.wait_for_events(ROWS, Duration::from_secs(60));
    // Long enough for every worker to have run again: nothing is sent twice.
    std::thread::sleep(Duration::from_secs(6));
    let events = receiver.events().len().max(events.len());
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    for event in receiver.events() {
        *by_id
            .entry(event.header("webhook-id").unwrap_or("").to_string())
            .or_default() += 1;
    }
    assert_eq!(events, ROWS, "each row delivered once: {by_id:?}");
    assert!(by_id.values().all(|&n| n == 1), "{by_id:?}");
    let mut delivered: Vec<String> = receiver
        .events()
        .iter()
        .map(|e| e.json()["signature"].as_str().unwrap().to_string())
        .collect();
    delivered.sort();
    signatures.sort();
    assert_eq!(delivered, signatures);
    for node in [&a, &b] {
        assert!(
            node.log().contains("receta: cron outbox-worker ok"),
            "both nodes' workers ran:\n{}",
            node.log()
        );
    }
}

#[test]
fn killing_a_node_under_load_loses_nothing_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let (primary, replica) = cluster(dir.path());
    let relay = Listener::ok();
    // A dead node's leased rows come back after the lease (2 × 2 s + 5 s), then retry soon.
    let (a, b) = two_nodes(&primary, &replica, || {
        relay_config(&relay.url("/send"))
            .with_env("SPIN_VARIABLE_DELIVERY_TIMEOUT_MS", "2000")
            .with_env("SPIN_VARIABLE_OUTBOX_RETRY_SCALE", "0.01")
    });
    let practice = Practice::new(&a, "carga@example.mx", "Clínica Carga");
    // Four clients issue prescriptions through B until it is killed.
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let b = Arc::new(Mutex::new(Some(b)));
    let address = b.lock().unwrap().as_ref().unwrap().address.clone();
    let body = json!({
        "hospital": practice.hospital,
        "patient": {"uid": practice.patient["uid"]},
        "diagnosis": "Carga",
        "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 cada 8 horas"}],
    });
    let token = practice.medic.token().unwrap().to_string();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (acknowledged, stop, address, body, token) = (
                acknowledged.clone(),
                stop.clone(),
                address.clone(),
                body.clone(),
                token.clone(),
            );
            std::thread::spawn(move || {
                let agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(10)))
                    .build()
                    .new_agent();
                let mut failed = 0;
                while !stop.load(Ordering::SeqCst) {
                    let sent = agent
                        .post(format!("{address}/api/v2/rx-endpoint/"))
                        .header("Authorization", format!("Token {token}"))
                        .send_json(&body);
                    match sent {
                        Ok(mut resp) if resp.status() == 200 => {
                            let json: Value = resp.body_mut().read_json().unwrap();
                            let sig = json["signature"].as_str().unwrap().to_string();
                            acknowledged.lock().unwrap().push(sig);
                        }
                        _ => failed += 1,
                    }
                }
                failed
            })
        })
        .collect();
    eventually("a few acknowledged creates", WAIT, || {
        (acknowledged.lock().unwrap().len() >= 20).then_some(())
    });
    let killed = b.lock().unwrap().take().unwrap();
    let _ = killed.crash();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let failed: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let acknowledged = acknowledged.lock().unwrap().clone();
    eprintln!(
        "scale-out: {} creates acknowledged by node B before kill -9; {failed} requests failed after it (in flight, then refused)",
        acknowledged.len()
    );
    assert!(failed > 0, "the kill happened under load");
    // Every acknowledged prescription is there, through A.
    for sig in &acknowledged {
        let resp = a.get(
            &format!("/api/v2/rx-endpoint/{sig}/"),
            practice.medic.token(),
        );
        assert_eq!(resp.status, 200, "{sig} was acknowledged: {}", resp.text());
    }
    // And its email goes out: A's worker delivers what B could not.
    let emails = eventually(
        "every acknowledged email sent",
        Duration::from_secs(60),
        || {
            let sent = relay.events().len();
            (sent >= acknowledged.len()).then_some(sent)
        },
    );
    assert!(emails >= acknowledged.len());
}

#[test]
fn a_database_that_goes_away_is_a_prompt_503_and_the_node_resumes_when_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Sqld::primary(&dir.path().join("primary"));
    let app = node(&db, AppConfig::default());
    let list = || app.get("/api/v2/hospital/", Some(ADMIN_TOKEN));
    assert_eq!(list().status, 200);

    // Without a replica every call needs the server: a prompt 503 with Retry-After.
    db.stop();
    let asked = Instant::now();
    let down = list();
    assert_eq!(down.status, 503, "{}", down.text());
    assert_eq!(
        down.json(),
        json!({"message": "The service is unavailable: try again in 5 s."})
    );
    assert_eq!(down.header("retry-after"), Some("5"));
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    assert!(
        app.log().contains("database unavailable: libSQL"),
        "the cause is logged:\n{}",
        app.log()
    );

    // The same server back (same address, same data): the node carries on, nothing restarted.
    db.start_again();
    let back = eventually("the node answering again", WAIT, || {
        let resp = list();
        (resp.status == 200).then_some(resp)
    });
    assert_eq!(back.json()["count"], json!(0));
}
