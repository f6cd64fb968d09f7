//! Several nodes of the app on one libSQL server (`sqld`), on whichever runtime runs the suite:
//! `receta`, or real Spin in its pass (`RECETA_TEST_RUNTIME=spin`, Spin's own libSQL backend), as
//! several `spin up` nodes or SpinKube replicas behind a load balancer would run it
//! (docs/scale-out.md). The clients alternate between the nodes (a round robin); each node's
//! database is the same server, authenticated with a JWT (`sqld.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fixtures::{
    Listener, Practice, Reply, burn, burn_with, claimed, eventually, med_ids, node, prescribe,
    register, relay_config, signature, two_nodes,
};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp};
use crate::sqld::Sqld;
use receta_test_host::free_port;

const WAIT: Duration = Duration::from_secs(30);

/// A fresh server and two nodes on it (the nodes are dropped first, then the server, then its
/// directory). In a cron-less pass the two start at the same moment: the app migrates itself, each
/// file once. Otherwise the second starts once the first serves: real Spin runs the README's
/// `--sqlite @file` loop at every start, and two loops at once interleave their files (a node's
/// 0016 indexed `verify_windows` after the other's later file had dropped it, and that node did
/// not start).
fn one_database_two_nodes(
    config: impl Fn() -> AppConfig + Sync,
) -> (tempfile::TempDir, Sqld, TestApp, TestApp) {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let (a, b) = if crate::helpers::cronless() {
        two_nodes(&db, &db, config)
    } else {
        (node(&db, config()), node(&db, config()))
    };
    (dir, db, a, b)
}

#[test]
fn two_nodes_migrating_one_fresh_database_at_the_same_moment_apply_each_file_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let (a, b) = two_nodes(&db, &db, AppConfig::self_migrating);
    // Each node migrates at its first request: both at once.
    let barrier = Barrier::new(2);
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let first: Vec<_> = [&a, &b]
            .into_iter()
            .map(|node| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    node.get("/api/v2/hospital/", Some(ADMIN_TOKEN)).status
                })
            })
            .collect();
        first.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert_eq!(statuses, [200, 200]);
    let file = rusqlite::Connection::open_with_flags(
        db.database_file(),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    assert_eq!(
        crate::fixtures::ledger(&file),
        crate::fixtures::each_file_once(),
        "every file once"
    );
    assert_eq!(
        crate::fixtures::schema_of(&file),
        crate::fixtures::reference_schema(),
        "the schema of a single start"
    );
    // Both serve, and each sees what the other wrote.
    let hospital = a.create_hospital(ADMIN_TOKEN, "Clínica Migrada");
    let seen = b.get(&format!("/api/v2/hospital/{hospital}"), Some(ADMIN_TOKEN));
    assert_eq!(seen.status, 200, "{}", seen.text());
}

#[test]
fn two_pharmacies_racing_through_two_nodes_dispense_once() {
    let (_dir, _db, a, b) = one_database_two_nodes(AppConfig::default);
    let practice = Practice::new(&a, "carrera@example.mx", "Clínica Carrera");
    let pharmacies = [register(&a, "Farmacia Uno"), register(&b, "Farmacia Dos")];
    for round in 0..4 {
        let rx = prescribe(if round % 2 == 0 { &a } else { &b }, &practice);
        let sig = signature(&rx);
        let (amox, para) = med_ids(&rx);
        let barrier = Barrier::new(2);
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let racers: Vec<_> = [(&a, &pharmacies[0]), (&b, &pharmacies[1])]
                .into_iter()
                .map(|(node, ph)| {
                    let (barrier, sig) = (&barrier, &sig);
                    s.spawn(move || {
                        barrier.wait();
                        burn(node, ph, sig, &[(amox, 2), (para, 1)]).status
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let mut sorted = statuses.clone();
        sorted.sort();
        assert_eq!(sorted, [200, 409], "round {round}: {statuses:?}");
        // Both nodes tell the one sale.
        for node in [&a, &b] {
            let detail = node.get(
                &format!("/api/v2/rx-endpoint/{sig}/"),
                practice.medic.token(),
            );
            assert_eq!(detail.json()["status"]["rx_status"][0], json!("dispensed"));
            let sales = node.get(
                &format!("/api/v2/rx-endpoint/{sig}/dispenses/"),
                practice.medic.token(),
            );
            assert_eq!(sales.status, 200, "{}", sales.text());
            assert_eq!(sales.json()["count"], json!(1), "{}", sales.text());
        }
    }
}

#[test]
fn one_idempotency_key_sent_to_both_nodes_at_once_issues_one_prescription() {
    let (_dir, _db, a, b) = one_database_two_nodes(AppConfig::default);
    let practice = Practice::new(&a, "idem-nodos@example.mx", "Clínica Idempotente");
    let body = serde_json::to_vec(&json!({
        "hospital": practice.hospital,
        "patient": {"uid": practice.patient["uid"]},
        "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 c/8 h"}],
    }))
    .unwrap();
    let auth = format!("Token {}", practice.medic.token);
    let send = |node: &TestApp| {
        node.request_with_headers(
            "POST",
            "/api/v2/rx-endpoint/",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("Idempotency-Key", "nodos-0001"),
            ],
            Some(&body),
        )
    };
    const CLIENTS: usize = 8;
    let barrier = Barrier::new(CLIENTS);
    let answers: Vec<_> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let (node, barrier, send) = (if i % 2 == 0 { &a } else { &b }, &barrier, &send);
                s.spawn(move || {
                    barrier.wait();
                    send(node)
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).collect()
    });
    // Each answer is the prescription, or 409 while the first runs; never another prescription.
    let mut signatures: Vec<String> = answers
        .iter()
        .filter(|r| r.status == 200)
        .map(|r| signature(&r.json()))
        .collect();
    signatures.dedup();
    assert_eq!(
        signatures.len(),
        1,
        "one prescription, answered 200: {signatures:?}"
    );
    for answer in &answers {
        assert!([200, 409].contains(&answer.status), "{}", answer.text());
    }
    // A retry after the race answers the same prescription, through either node.
    for node in [&a, &b] {
        let again = send(node);
        assert_eq!(again.status, 200, "{}", again.text());
        assert_eq!(signature(&again.json()), signatures[0]);
    }
    let list = a.get("/api/v2/rx-endpoint/", practice.medic.token());
    assert_eq!(list.json()["count"], json!(1), "{}", list.text());
}

#[test]
fn a_claim_taken_on_one_node_is_honoured_on_the_other() {
    let (_dir, _db, a, b) = one_database_two_nodes(AppConfig::default);
    let practice = Practice::new(&a, "reclamo-nodos@example.mx", "Clínica Reclamo");
    let (holder, other) = (register(&a, "Farmacia A"), register(&a, "Farmacia B"));
    let rx = prescribe(&a, &practice);
    let sig = signature(&rx);
    let grant = claimed(&a, &holder, &sig);
    let secret = grant["secret"].as_str().unwrap();
    // Through B: another pharmacy is refused; the holder's secret is known there.
    let refused = burn_with(&b, &other, &rx, None);
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(refused.text().contains("elsewhere"), "{}", refused.text());
    let wrong = burn_with(&b, &holder, &rx, Some(&"0".repeat(64)));
    assert_eq!(wrong.status, 403, "{}", wrong.text());
    let sold = burn_with(&b, &holder, &rx, Some(secret));
    assert_eq!(sold.status, 200, "{}", sold.text());
}

#[test]
fn two_nodes_workers_deliver_each_outbox_row_once() {
    // Webhooks go to a port nobody listens on yet: every first attempt fails and the rows wait
    // for the background workers of both nodes, which race for them once it listens.
    let port = free_port();
    // Retries after 0.05 s, 3 s, 18 s...: a row fails at most twice before the receiver is up.
    let config = || AppConfig::with_variables(&[("outbox_retry_scale", "0.01")]);
    let (_dir, _db, a, b) = one_database_two_nodes(config);
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
}

#[test]
fn killing_a_node_under_load_loses_nothing_it_acknowledged() {
    let relay = Listener::ok();
    // A dead node's leased rows come back after the lease (2 × 2 s + 5 s), then retry soon.
    let (_dir, _db, a, b) = one_database_two_nodes(|| {
        relay_config(&relay.url("/send"))
            .with_env("SPIN_VARIABLE_DELIVERY_TIMEOUT_MS", "2000")
            .with_env("SPIN_VARIABLE_OUTBOX_RETRY_SCALE", "0.01")
    });
    let practice = Practice::new(&a, "carga@example.mx", "Clínica Carga");
    // Four clients issue prescriptions through B until it is killed.
    let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let address = b.address.clone();
    let body = json!({
        "hospital": practice.hospital,
        "patient": {"uid": practice.patient["uid"]},
        "diagnosis": "Carga",
        "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 cada 8 horas"}],
    });
    let token = practice.medic.token.clone();
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
                        // A 200 whose body the kill cut off was never acknowledged to this
                        // client: it has no signature to look for.
                        Ok(mut resp) if resp.status() == 200 => {
                            match resp.body_mut().read_json::<Value>() {
                                Ok(json) => {
                                    let sig = json["signature"].as_str().unwrap().to_string();
                                    acknowledged.lock().unwrap().push(sig);
                                }
                                Err(_) => failed += 1,
                            }
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
    let _ = b.crash();
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let failed: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    let acknowledged = acknowledged.lock().unwrap().clone();
    eprintln!(
        "nodes: {} creates acknowledged by node B before kill -9; {failed} requests failed after it",
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
