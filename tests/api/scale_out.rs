//! Scale-out (docs/scale-out.md), what only `receta` does: its migration ledger when two nodes
//! start together on a primary and a replica following it, and a prompt 503 when the server goes
//! away. What every runtime does on several nodes is in `nodes.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::fixtures::migration_names;
use crate::fixtures::{
    Listener, burn, eventually, issue_with_dispense_hook, lookup, med_ids, node, register,
    signature, two_nodes,
};
use crate::helpers::{ADMIN_TOKEN, AppConfig};
use crate::sqld::Sqld;

const WAIT: Duration = Duration::from_secs(30);

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

fn cluster(dir: &Path) -> (Sqld, Sqld) {
    let primary = Sqld::primary(&dir.join("primary"));
    let replica = Sqld::replica(&dir.join("replica"), &primary);
    (primary, replica)
}

#[test]
fn a_prescription_issued_on_one_node_is_read_dispensed_and_delivered_through_another() {
    if crate::helpers::over_http() {
        // The host's libSQL backend and its embedded replica, migrated at start-up: the app's
        // own client (which migrates at its first request) has `nodes::` for two nodes.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary, replica) = cluster(dir.path());
    let receiver = Listener::ok();
    let (a, b) = two_nodes(&primary, &replica, AppConfig::default);

    // Both started against one empty database: every migration applied exactly once.
    let applied = migrations_applied(&primary);
    assert_eq!(
        applied.keys().cloned().collect::<Vec<_>>(),
        migration_names()
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
        migration_names(),
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
