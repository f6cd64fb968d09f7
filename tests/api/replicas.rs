//! Embedded replicas (docs/scale-out.md, "Nodes with replicas"): a libSQL primary (`sqld`) and two
//! `receta` nodes, each keeping a local copy of the database (`replica_path`, this host's
//! extension). Reads are served from the copy, writes go to the primary; a node reads its own
//! writes at once and another node's within the sync interval; with the primary away reads go on
//! and writes answer 503, and the nodes carry on when it is back.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::fixtures::{
    Listener, Practice, burn, eventually, issue_with_dispense_hook, lookup, med_ids, prescribe,
    register, signature,
};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, start};
use crate::sqld::Sqld;

/// The replicas' sync interval in these tests; another node's write must show within it (plus a
/// pull's time, which [`SLACK`] covers on a loaded CI machine).
const SYNC_MS: u64 = 200;
const SLACK: Duration = Duration::from_secs(3);
const WAIT: Duration = Duration::from_secs(30);

/// A node on `db` through a replica in its own state dir.
fn replica_node(db: &Sqld, config: AppConfig) -> TestApp {
    let state_dir = tempfile::tempdir().expect("state dir");
    let runtime_config = db.replica_runtime_config(
        &state_dir.path().join("runtime-config.toml"),
        &state_dir.path().join("replica/app.db"),
        SYNC_MS,
    );
    start(
        AppConfig {
            runtime_config: Some(runtime_config),
            ..config
        },
        state_dir,
    )
}

fn create_body(practice: &Practice) -> serde_json::Value {
    json!({
        "hospital": practice.hospital,
        "patient": {"uid": practice.patient["uid"]},
        "diagnosis": "Réplica",
        "medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 cada 8 horas"}],
    })
}

#[test]
fn two_replica_nodes_read_their_own_writes_at_once_and_each_others_within_the_interval() {
    let dir = tempfile::tempdir().unwrap();
    let primary = Sqld::primary(&dir.path().join("primary"));
    let receiver = Listener::ok();
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| replica_node(&primary, AppConfig::default()));
        let b = s.spawn(|| replica_node(&primary, AppConfig::default()));
        (a.join().unwrap(), b.join().unwrap())
    });
    for node in [&a, &b] {
        assert!(
            node.log().contains("replica") && node.log().contains("pulled every 200 ms"),
            "the node says it keeps a replica:\n{}",
            node.log()
        );
    }

    // Written through A and read back through A at once: no waiting, no retry.
    let (practice, rx) =
        issue_with_dispense_hook(&a, &receiver, "replica-a@example.mx", "Clínica Réplica");
    let sig = signature(&rx);
    let own = a.get(
        &format!("/api/v2/rx-endpoint/{sig}/"),
        practice.medic.token(),
    );
    assert_eq!(own.status, 200, "A reads its own write: {}", own.text());

    // Through B within the sync interval (and a pull).
    let issued = Instant::now();
    eventually("the prescription on node B", WAIT, || {
        let resp = b.get(
            &format!("/api/v2/rx-endpoint/{sig}/"),
            practice.medic.token(),
        );
        (resp.status == 200).then_some(())
    });
    let lag = issued.elapsed();
    eprintln!("replicas: node B read node A's write {lag:?} after it was acknowledged");
    assert!(
        lag < Duration::from_millis(SYNC_MS) + SLACK,
        "B saw A's write after {lag:?}"
    );

    // Dispensed once across the nodes: B's burn runs on the primary, A's second one is refused.
    let pharmacy = register(&a, "Farmacia Réplica");
    eventually("the pharmacy on node B", WAIT, || {
        (lookup(&b, &pharmacy, &sig).status == 200).then_some(())
    });
    let (amox, para) = med_ids(&rx);
    let sold = burn(&b, &pharmacy, &sig, &[(amox, 2), (para, 1)]);
    assert_eq!(sold.status, 200, "{}", sold.text());
    let again = burn(&a, &pharmacy, &sig, &[(para, 1)]);
    assert_eq!(again.status, 409, "{}", again.text());
    // B reads its own dispense at once.
    let after = b.get(
        &format!("/api/v2/rx-endpoint/{sig}/"),
        practice.medic.token(),
    );
    assert_eq!(after.json()["status"]["rx_status"][0], json!("dispensed"));

    // The event is delivered once, whichever node's worker leased it.
    let events = receiver.wait_for_events(1, WAIT);
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(receiver.events().len(), 1, "{:?}", receiver.events());
    assert_eq!(
        events[0].json(),
        json!({"signature": sig, "type": "prescription.dispensed"})
    );
}

#[test]
fn with_the_primary_away_reads_go_on_writes_answer_503_and_the_node_resumes_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut primary = Sqld::primary(&dir.path().join("primary"));
    let app = replica_node(&primary, AppConfig::default());
    let practice = Practice::new(&app, "ausente@example.mx", "Clínica Ausente");
    let sig = signature(&prescribe(&app, &practice));
    let detail = || {
        app.get(
            &format!("/api/v2/rx-endpoint/{sig}/"),
            practice.medic.token(),
        )
    };
    assert_eq!(detail().status, 200);
    let create = || {
        app.post(
            "/api/v2/rx-endpoint/",
            practice.medic.token(),
            &create_body(&practice),
        )
    };

    primary.stop();
    // Reads: served from the replica.
    let read = detail();
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(read.json()["signature"], json!(sig));
    let listed = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN));
    assert_eq!(listed.status, 200, "{}", listed.text());
    // Writes: a prompt 503 with Retry-After, in the API's error shape; nothing half-written.
    let asked = Instant::now();
    let refused = create();
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(refused.header("retry-after"), Some("5"));
    assert_eq!(
        refused.json(),
        json!({"message": "The service is unavailable: try again in 5 s."})
    );
    assert!(app.log().contains("database unavailable"), "{}", app.log());

    // The primary back (same address, same data): writes succeed, no restart of the node.
    primary.start_again();
    let created = eventually("a create accepted again", WAIT, || {
        let resp = create();
        (resp.status == 200).then_some(resp)
    });
    let new_sig = signature(&created.json());
    let read_back = app.get(
        &format!("/api/v2/rx-endpoint/{new_sig}/"),
        practice.medic.token(),
    );
    assert_eq!(read_back.status, 200, "{}", read_back.text());
}

#[test]
fn a_replica_node_reuses_its_sessions_on_the_primary_through_many_writes() {
    // Each connection of a replica is a session on the primary for the writes it sends, and sqld
    // serves at most 128 at once: a node that opened a new one per request ran out of them within
    // a few hundred writes ("Timed out while opening database connection", a 500).
    let dir = tempfile::tempdir().unwrap();
    let primary = Sqld::primary(&dir.path().join("primary"));
    let app = replica_node(&primary, AppConfig::default());
    let medic = app.create_medic("muchas@example.mx");
    for i in 0..300 {
        let body = crate::fixtures::patient_body(&format!("Paciente {i}"));
        let resp = app.post("/api/v2/patient/", medic.token(), &body);
        assert_eq!(resp.status, 201, "patient {i}: {}", resp.text());
    }
    // The last one, read back through the replica (the list is oldest first).
    let last = app.get("/api/v2/patient/?limit=1&offset=299", medic.token());
    assert_eq!(
        last.json()[0]["name"],
        json!("Paciente 299"),
        "{}",
        last.text()
    );
}
