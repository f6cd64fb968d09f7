//! Instance reuse (docs/architecture.md, "What an instance keeps"): the gateway is a WASIp3 handler
//! that both hosts reuse for many requests, several at once. Here a few long-lived instances
//! (`--max-instance-reuse-count 100000`, the same flags on `receta` and on Spin) serve requests of
//! every kind of caller interleaved from 8 threads, among them requests that fail after using the
//! connection (a refused create) or inside a transaction (the losing burn of a race). No request
//! may see another's transaction or another principal's data, and nothing accepted is lost.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};

use crate::fixtures::{Practice, TestPharmacy, burn, lookup, med_ids, register};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, spawn_app_with};

/// Threads sending at once.
const THREADS: usize = 8;
/// Rounds each thread makes.
const ROUNDS: usize = 6;

/// Few instances, each kept for every request it can take.
fn long_lived_instances() -> AppConfig {
    AppConfig::default().with_flags(&[
        "--max-instance-reuse-count",
        "100000",
        "--max-instance-concurrent-reuse-count",
        "16",
        "--idle-instance-timeout",
        "30s",
    ])
}

/// A create the law refuses (a fracción II medicine): a 400 after the request's connection has
/// read the catalog.
fn refused_create(app: &TestApp, p: &Practice) {
    let body = json!({
        "hospital": p.hospital,
        "patient": {"uid": p.patient["uid"]},
        "diagnosis": "Insomnio",
        "medications": [{"presentation": "Clonazepam 2 mg", "instructions": "1 noche", "category": "unstructured_drug", "fraccion": "II"}],
    });
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    assert_eq!(resp.status, 400, "{}", resp.text());
}

/// A medic's own prescriptions, by signature (every page).
fn listed(app: &TestApp, p: &Practice) -> Vec<String> {
    let resp = app.get("/api/v2/rx-endpoint/?limit=1000", p.medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rx| rx["signature"].as_str().unwrap().to_string())
        .collect()
}

/// One round of a medic: issue one, check its list holds only its own, fail a create, and fail to
/// read the other medic's prescription.
fn medic_round(app: &TestApp, me: &Practice, other_signature: &str) -> String {
    let rx = me.prescribe(app);
    let signature = rx["signature"].as_str().unwrap().to_string();
    refused_create(app, me);
    let mine = listed(app, me);
    assert!(mine.contains(&signature), "its new prescription is listed");
    assert!(
        !mine.iter().any(|s| s == other_signature),
        "another medic's prescription is never listed"
    );
    let foreign = app.get(
        &format!("/api/v2/rx-endpoint/{other_signature}/"),
        me.medic.token(),
    );
    assert_eq!(foreign.status, 404, "{}", foreign.text());
    signature
}

/// Two pharmacies burn the same units at once: exactly one sells them, the other is refused (inside
/// the dispense's transaction when both got past the checks before it); then each reads the
/// prescription and sees that one sale.
fn race_round(app: &TestApp, rx: &Value, pharmacies: &[TestPharmacy; 2]) {
    let signature = rx["signature"].as_str().unwrap();
    let (first, _) = med_ids(rx);
    let barrier = Barrier::new(2);
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = pharmacies
            .iter()
            .map(|ph| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    burn(app, ph, signature, &[(first, 2)]).status
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // The loser is refused, 409 or 400 (what is left is less than it asked for), whether it saw
    // the sale before its transaction or only inside it.
    let mut sorted = statuses.clone();
    sorted.sort();
    assert!(
        sorted == [200, 400] || sorted == [200, 409],
        "one sale, one refusal: {statuses:?}"
    );
    for ph in pharmacies {
        let seen = lookup(app, ph, signature);
        assert_eq!(seen.status, 200, "{}", seen.text());
        let meds = seen.json()["medications"].clone();
        let sold: i64 = meds
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["bought_qty"].as_i64().unwrap_or(0))
            .sum();
        assert_eq!(sold, 2, "the losing burn left nothing behind: {meds}");
    }
}

#[test]
fn reused_instances_keep_no_request_s_data_for_the_next() {
    let app = Arc::new(spawn_app_with(long_lived_instances()));
    let a = Arc::new(Practice::new(&app, "reuse-a@example.mx", "Clínica A"));
    let b = Arc::new(Practice::new(&app, "reuse-b@example.mx", "Clínica B"));
    let pharmacies = Arc::new([
        register(&app, "Farmacia Uno"),
        register(&app, "Farmacia Dos"),
    ]);
    let first_a = a.prescribe(&app)["signature"].as_str().unwrap().to_string();
    let first_b = b.prescribe(&app)["signature"].as_str().unwrap().to_string();

    let barrier = Arc::new(Barrier::new(THREADS));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (app, a, b, pharmacies, barrier) = (
                app.clone(),
                a.clone(),
                b.clone(),
                pharmacies.clone(),
                barrier.clone(),
            );
            let (first_a, first_b) = (first_a.clone(), first_b.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut issued = Vec::new();
                for _ in 0..ROUNDS {
                    match t % 4 {
                        0 => issued.push((0, medic_round(&app, &a, &first_b))),
                        1 => issued.push((1, medic_round(&app, &b, &first_a))),
                        2 => {
                            let rx = crate::fixtures::prescribe(&app, &a);
                            race_round(&app, &rx, &pharmacies);
                            issued.push((0, rx["signature"].as_str().unwrap().to_string()));
                        }
                        _ => {
                            // The API admin, anonymous callers and pharmacies where they may not go.
                            let hospitals = app.get("/api/v2/hospital/", Some(ADMIN_TOKEN));
                            assert_eq!(hospitals.status, 200);
                            assert_eq!(hospitals.json()["count"], 2);
                            assert_eq!(app.get("/api/v2/hospital/", None).status, 401);
                            let ph = &pharmacies[0];
                            assert_eq!(
                                app.get("/api/v2/rx-endpoint/", Some(&ph.token)).status,
                                403
                            );
                            let anonymous =
                                app.get(&format!("/api/v2/rx-endpoint/{first_a}/"), None);
                            assert_eq!(anonymous.status, 401, "{}", anonymous.text());
                        }
                    }
                }
                issued
            })
        })
        .collect();
    let issued: Vec<(usize, String)> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("a thread's checks failed"))
        .collect();

    // Nothing accepted is lost: every prescription that answered 200 is in its medic's list.
    let (listed_a, listed_b): (HashSet<String>, HashSet<String>) = (
        listed(&app, &a).into_iter().collect(),
        listed(&app, &b).into_iter().collect(),
    );
    for (who, signature) in &issued {
        let list = if *who == 0 { &listed_a } else { &listed_b };
        assert!(
            list.contains(signature),
            "{signature} was answered 200 and is gone"
        );
    }
    assert_eq!(listed_a.len() + listed_b.len(), issued.len() + 2);
    assert!(listed_a.is_disjoint(&listed_b));
}
