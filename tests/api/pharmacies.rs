//! Pharmacies and a prescription's life after issue (docs/lifecycle.md): the pharmacy register (API
//! admin), the pharmacy calls on the original pharmacy API's paths (lookup, burn, reject), the
//! medic's cancel, the event log, the events webhooks, the call log and its rate limit, and the
//! rule that nothing is ever sold twice, raced from many threads.
//!
//! One file (over 500 lines): the black-box tests of the pharmacy calls and the lifecycle, sharing `register`, `prescribe`, `burn` (also used by `scale_out.rs`).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fixtures::{
    Listener, Practice, TestPharmacy, burn, cancel, db, listed, lookup, med_ids, prescribe,
    register, reject, signature,
};
use crate::helpers::{ADMIN_TOKEN, assert_message, field_errors, spawn_app};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn the_admin_registers_lists_and_revokes_pharmacies() {
    let app = spawn_app();
    let p = Practice::new(&app, "farm-reg@example.mx", "Clínica Registro");
    let body = json!({
        "name": "Farmacia San Pablo Roma", "legal_name": "Farmacias San Pablo S.A. de C.V.",
        "license": "LS-09-2024-123", "address": "Orizaba 10, Roma Nte.", "zip_code": "06700",
        "state": "CDMX", "contact": "55 5555 5555",
    });

    // Only the API admin.
    assert_message(&app.post("/api/v2/pharmacies/", None, &body), 401);
    assert_message(
        &app.post("/api/v2/pharmacies/", p.medic.token(), &body),
        403,
    );
    let resp = app.post(
        "/api/v2/pharmacies/",
        Some(ADMIN_TOKEN),
        &json!({"license": "x"}),
    );
    assert_eq!(
        field_errors(&resp)["name"],
        json!(["This field is required."])
    );
    let resp = app.post(
        "/api/v2/pharmacies/",
        Some(ADMIN_TOKEN),
        &json!({"name": "X", "zip_code": "0".repeat(32)}),
    );
    assert!(field_errors(&resp)["zip_code"].is_array());

    let resp = app.post("/api/v2/pharmacies/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(resp.header("cache-control"), Some("no-store"));
    let created = resp.json();
    let token = created["token"].as_str().unwrap().to_string();
    assert!(
        token.len() >= 40 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{token}"
    );
    for (field, value) in body.as_object().unwrap() {
        assert_eq!(&created[field], value, "{field}");
    }
    assert_eq!(created["is_active"], true);
    let id = created["id"].as_i64().unwrap();

    // The token is shown once, and only its hash is stored.
    let detail = app.get(&format!("/api/v2/pharmacies/{id}/"), Some(ADMIN_TOKEN));
    assert_eq!(detail.status, 200);
    assert!(detail.json().get("token").is_none(), "{}", detail.text());
    let stored: String = db(&app)
        .query_row(
            "SELECT token_hash FROM pharmacies WHERE id = ?",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    assert_ne!(stored, token);
    assert!(!app.log().contains(&token));

    let list = app.get("/api/v2/pharmacies/", Some(ADMIN_TOKEN)).json();
    assert_eq!(list["count"], 1);
    assert_eq!(list["results"][0]["name"], "Farmacia San Pablo Roma");
    assert!(list["results"][0].get("token").is_none());
    assert_eq!(
        app.get("/api/v2/pharmacies/999/", Some(ADMIN_TOKEN)).status,
        404
    );

    // The token works on the pharmacy calls, and nowhere else.
    let ph = TestPharmacy { id, token };
    let rx = prescribe(&app, &p);
    assert_eq!(lookup(&app, &ph, &signature(&rx)).status, 200);
    for path in [
        "/api/v2/hospital/",
        "/api/v2/patient/",
        "/api/v2/rx-endpoint/",
        "/api/v2/pharmacies/",
        &format!("/api/v2/rx-endpoint/{}/", signature(&rx)),
        &format!("/api/v2/rx/pdf/{}/", signature(&rx)),
    ] {
        assert_message(&app.get(path, ph.token()), 403);
    }
    assert_message(&cancel(&app, ph.token(), &signature(&rx)), 403);

    // PATCH changes fields; is_active false revokes the token at once, true restores it.
    let resp = app.patch(
        &format!("/api/v2/pharmacies/{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"contact": "ventas@sanpablo.mx"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["contact"], "ventas@sanpablo.mx");
    assert_eq!(resp.json()["name"], "Farmacia San Pablo Roma");
    let resp = app.patch(
        &format!("/api/v2/pharmacies/{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"name": null}),
    );
    assert!(field_errors(&resp)["name"].is_array());
    assert_eq!(
        app.patch(
            "/api/v2/pharmacies/999/",
            Some(ADMIN_TOKEN),
            &json!({"is_active": false})
        )
        .status,
        404
    );
    let off = app.patch(
        &format!("/api/v2/pharmacies/{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert_eq!(off.json()["is_active"], false);
    assert_message(&lookup(&app, &ph, &signature(&rx)), 401);
    assert_message(&burn(&app, &ph, &signature(&rx), &[(1, 1)]), 401);
    app.patch(
        &format!("/api/v2/pharmacies/{id}/"),
        Some(ADMIN_TOKEN),
        &json!({"is_active": true}),
    );
    assert_eq!(lookup(&app, &ph, &signature(&rx)).status, 200);
}

#[test]
fn only_a_pharmacy_token_makes_the_pharmacy_calls() {
    let app = spawn_app();
    let p = Practice::new(&app, "farm-tok@example.mx", "Clínica Tokens");
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (a, _) = med_ids(&rx);
    let paths = [
        ("GET", format!("/api/v2/pharmacy/rx/{sig}")),
        ("POST", format!("/api/v1/prescriptions/burn/{sig}")),
        ("POST", format!("/api/v1/prescriptions/reject/{sig}")),
    ];
    let body = json!({"sales_code": "T1", "medications": [{"id": a, "bought_qty": 1}], "rejected": true, "reason_of_rejected": "x"});
    for (method, path) in &paths {
        for token in [Some(ADMIN_TOKEN), p.medic.token()] {
            let resp = app.request(method, path, token, Some(&body));
            assert_message(&resp, 403);
        }
        assert_message(&app.request(method, path, None, Some(&body)), 401);
        assert_message(
            &app.request(method, path, Some("not-a-token"), Some(&body)),
            401,
        );
    }
    // Nothing changed.
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    assert_eq!(detail["status"]["rx_status"][0], "available");
    assert_eq!(detail["medications"][0]["bought_qty"], 0);
}

#[test]
fn a_pharmacy_looks_up_then_dispenses_partially_then_totally() {
    let app = spawn_app();
    let p = Practice::new(&app, "farm-burn@example.mx", "Clínica Surtido");
    let ph = register(&app, "Farmacia del Ahorro Centro");
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (amox, para) = med_ids(&rx);

    // The lookup: the detail shape, each medication with sku and ad_id. Paths with or without the
    // trailing slash.
    let found = lookup(&app, &ph, &sig);
    assert_eq!(found.status, 200, "{}", found.text());
    let mut found = found.json();
    assert_eq!(found["sales"], json!([]), "no sale yet");
    found.as_object_mut().unwrap().remove("sales");
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    let mut expected = detail.clone();
    for m in expected["medications"].as_array_mut().unwrap() {
        m["sku"] = m["drug_upc"].clone();
        m["ad_id"] = json!("");
    }
    // The medic did not choose `show_diagnosis`: the pharmacy gets the field, empty.
    assert_eq!(detail["show_diagnosis"], false);
    assert_eq!(detail["diagnosis"], "Faringitis aguda");
    expected["diagnosis"] = json!("");
    assert_eq!(found, expected);
    assert_eq!(found["medications"][0]["sku"], "MX-AMX-500");
    assert_eq!(
        found["status"]["rx_status"],
        json!(["available", "Disponible"])
    );
    assert_eq!(
        app.get(&format!("/api/v2/pharmacy/rx/{sig}/"), ph.token())
            .status,
        200
    );

    // Unknown signatures.
    let missing = lookup(&app, &ph, &"0".repeat(64));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json(), json!({"error": "rx not found"}));
    let missing = burn(&app, &ph, &"ab".repeat(32), &[(amox, 1)]);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json(), json!({"error": "rx not found"}));
    assert_eq!(lookup(&app, &ph, "nonsense").status, 404);

    // Bad bodies: 400, nothing applied.
    for body in [
        json!({"medications": [{"id": amox, "bought_qty": 1}]}),
        json!({"sales_code": "A1", "medications": []}),
        json!({"sales_code": "A1", "medications": [{"id": amox, "bought_qty": 0}]}),
        json!({"sales_code": "A1", "medications": [{"id": amox}]}),
        json!({"sales_code": "A1", "medications": [{"id": "x", "bought_qty": 1}]}),
    ] {
        let resp = app.post(
            &format!("/api/v1/prescriptions/burn/{sig}/"),
            ph.token(),
            &body,
        );
        field_errors(&resp);
    }
    let resp = app.raw(
        "POST",
        &format!("/api/v1/prescriptions/burn/{sig}"),
        ph.token(),
        Some(("application/json", b"{not json")),
    );
    assert_message(&resp, 400);

    // Over-dispensing one item, or naming another prescription's medication: 400 naming it, and
    // nothing of the request is applied (not even the good item).
    let other = prescribe(&app, &p);
    let (other_amox, _) = med_ids(&other);
    let resp = burn(&app, &ph, &sig, &[(para, 1), (amox, 3)]);
    let errors = field_errors(&resp);
    let messages = errors["medications"].to_string();
    assert!(messages.contains(&amox.to_string()), "{messages}");
    let resp = burn(&app, &ph, &sig, &[(para, 1), (other_amox, 1)]);
    assert!(
        field_errors(&resp)["medications"]
            .to_string()
            .contains(&other_amox.to_string())
    );
    let now = lookup(&app, &ph, &sig).json();
    assert_eq!(now["medications"][0]["bought_qty"], 0);
    assert_eq!(now["medications"][1]["bought_qty"], 0);

    // A partial dispense.
    let resp = burn(&app, &ph, &sig, &[(amox, 1), (para, 1)]);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let after = resp.json();
    assert_eq!(
        after["status"]["rx_status"],
        json!(["partially_dispensed", "Surtida parcialmente"])
    );
    assert_eq!(after["medications"][0]["bought_qty"], 1);
    assert_eq!(after["medications"][0]["bought"], false);
    assert_eq!(after["medications"][1]["bought_qty"], 1);
    assert_eq!(after["medications"][1]["bought"], true);
    assert_eq!(after["bought"], false);
    assert_eq!(after["medications"][0]["sku"], "MX-AMX-500");

    // Selling what is already sold out is 400; then the rest: dispensed.
    field_errors(&burn(&app, &ph, &sig, &[(para, 1)]));
    let second = register(&app, "Farmacia Guadalajara Sur");
    let resp = burn(&app, &second, &sig, &[(amox, 1)]);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let done = resp.json();
    assert_eq!(done["status"]["rx_status"], json!(["dispensed", "Surtida"]));
    assert_eq!(done["bought"], true);
    assert_eq!(done["medications"][0]["bought"], true);
    assert_eq!(done["medications"][0]["bought_qty"], 2);

    // Fully dispensed: 409; it cannot be rejected or cancelled either.
    assert_message(&burn(&app, &ph, &sig, &[(amox, 1)]), 409);
    assert_message(&reject(&app, &ph, &sig), 409);
    assert_message(&cancel(&app, p.medic.token(), &sig), 409);

    // The medic's view shows the same, in the list too.
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    assert_eq!(detail["status"]["rx_status"][0], "dispensed");
    assert_eq!(detail["bought"], true);
    let listed = listed(&app, p.medic.token(), &sig);
    assert_eq!(listed["status"]["rx_status"][0], "dispensed");

    // The event log: both dispenses, in order, with pharmacy, sales code and quantities.
    let events = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/dispenses/"),
        p.medic.token(),
    );
    assert_eq!(events.status, 200, "{}", events.text());
    let events = events.json();
    assert_eq!(events["count"], 2);
    let first = &events["results"][0];
    assert_eq!(first["kind"], "dispense");
    assert_eq!(
        first["pharmacy"],
        json!({"id": ph.id, "name": "Farmacia del Ahorro Centro"})
    );
    assert_eq!(first["sales_code"], "PHX12345");
    let mut sold = first["medications"].as_array().unwrap().clone();
    sold.sort_by_key(|m| m["id"].as_i64());
    let mut expected = vec![
        json!({"id": amox, "bought_qty": 1}),
        json!({"id": para, "bought_qty": 1}),
    ];
    expected.sort_by_key(|m| m["id"].as_i64());
    assert_eq!(sold, expected);
    assert!(first["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(events["results"][1]["pharmacy"]["id"], second.id);
    assert_eq!(
        events["results"][1]["medications"],
        json!([{"id": amox, "bought_qty": 1}])
    );
    // The admin sees it too; another medic, a pharmacy and no one else do not.
    assert_eq!(
        app.get(
            &format!("/api/v2/rx-endpoint/{sig}/dispenses/"),
            Some(ADMIN_TOKEN)
        )
        .json()["count"],
        2
    );
    let stranger = app.create_medic("farm-burn-otro@example.mx");
    assert_message(
        &app.get(
            &format!("/api/v2/rx-endpoint/{sig}/dispenses/"),
            stranger.token(),
        ),
        404,
    );
    assert_message(
        &app.get(&format!("/api/v2/rx-endpoint/{sig}/dispenses/"), ph.token()),
        403,
    );
}

#[test]
fn a_rejection_and_a_cancellation_are_final() {
    let app = spawn_app();
    let p = Practice::new(&app, "farm-rej@example.mx", "Clínica Rechazos");
    let ph = register(&app, "Farmacia Benavides Norte");

    // Reject: the original API's answers.
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (amox, _) = med_ids(&rx);
    let missing = reject(&app, &ph, &"1".repeat(64));
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.json(),
        json!({"status": "400 Bad Response", "error": "rx not found"})
    );
    for body in [
        json!({"rejected": true}),
        json!({"rejected": true, "reason_of_rejected": "   "}),
        json!({"rejected": false, "reason_of_rejected": "x"}),
    ] {
        let resp = app.post(
            &format!("/api/v1/prescriptions/reject/{sig}"),
            ph.token(),
            &body,
        );
        field_errors(&resp);
    }
    let resp = reject(&app, &ph, &sig);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json(), json!({"status": "202 OK"}));
    let after = lookup(&app, &ph, &sig).json();
    assert_eq!(
        after["status"]["rx_status"],
        json!(["rejected", "Rechazada"])
    );
    assert_eq!(after["rejected"], true);
    assert_eq!(after["reason_of_rejected"], "Falta la cédula del médico");
    assert_message(&reject(&app, &ph, &sig), 409);
    assert_message(&burn(&app, &ph, &sig, &[(amox, 1)]), 409);
    assert_message(&cancel(&app, p.medic.token(), &sig), 409);

    // Cancel: the issuing medic only.
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (amox, _) = med_ids(&rx);
    let stranger = app.create_medic("farm-rej-otro@example.mx");
    assert_message(&cancel(&app, stranger.token(), &sig), 404);
    assert_message(&cancel(&app, p.medic.token(), &"2".repeat(64)), 404);
    assert_message(&cancel(&app, Some(ADMIN_TOKEN), &sig), 403);
    let resp = app.post(
        &format!("/api/v2/rx-endpoint/{sig}/cancel/"),
        p.medic.token(),
        &json!({}),
    );
    assert_eq!(
        field_errors(&resp)["reason"],
        json!(["This field is required."])
    );
    let resp = cancel(&app, p.medic.token(), &sig);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let cancelled = resp.json();
    assert_eq!(cancelled["signature"], sig.as_str());
    assert_eq!(
        cancelled["status"]["rx_status"],
        json!(["cancelled", "Cancelada"])
    );
    assert_eq!(cancelled["rejected"], false);
    assert_eq!(
        cancelled["reason_of_rejected"],
        "Cancelada por el médico: Dosis equivocada"
    );
    assert!(cancelled["hospital"].is_object(), "the detail shape");
    assert_message(&cancel(&app, p.medic.token(), &sig), 409);
    assert_message(&burn(&app, &ph, &sig, &[(amox, 1)]), 409);
    assert_message(&reject(&app, &ph, &sig), 409);
    let events = app
        .get(
            &format!("/api/v2/rx-endpoint/{sig}/dispenses/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(events["count"], 1);
    assert_eq!(events["results"][0]["kind"], "cancellation");
    assert_eq!(events["results"][0]["pharmacy"], Value::Null);
    assert_eq!(events["results"][0]["reason"], "Dosis equivocada");

    // Anything dispensed: neither rejection nor cancellation.
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (amox, _) = med_ids(&rx);
    assert_eq!(burn(&app, &ph, &sig, &[(amox, 1)]).status, 200);
    assert_message(&reject(&app, &ph, &sig), 409);
    assert_message(&cancel(&app, p.medic.token(), &sig), 409);

    // The patient sees the state, in Spanish, on the landing JSON and the page.
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{sig}/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(
        landing["rx"]["rx_status"],
        json!(["partially_dispensed", "Surtida parcialmente"])
    );
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(page.contains("Surtida parcialmente"), "{page}");
    assert!(page.contains("Surtido</span>1 de 2"), "{page}");
}

#[test]
fn the_last_units_are_sold_once_however_many_pharmacies_race_for_them() {
    let app = Arc::new(spawn_app());
    let p = Practice::new(&app, "farm-race@example.mx", "Clínica Carrera");
    let pharmacies: Vec<TestPharmacy> = (0..4)
        .map(|i| register(&app, &format!("Farmacia {i}")))
        .collect();
    let body = json!({
        "hospital": p.hospital,
        "patient": {"uid": p.patient["uid"]},
        "medications": [{"presentation": "Insulina glargina 100 UI/ml", "instructions": "10 UI cada noche", "qty": 5}],
    });
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let rx = resp.json();
    let sig = signature(&rx);
    let med = rx["medications"][0]["id"].as_i64().unwrap();

    // 24 attempts at once, from 4 pharmacies, of 1 or 2 units each, for 5 units in all.
    let attempts = 24;
    let barrier = Arc::new(Barrier::new(attempts));
    let handles: Vec<_> = (0..attempts)
        .map(|i| {
            let (app, barrier, sig) = (app.clone(), barrier.clone(), sig.clone());
            let token = pharmacies[i % pharmacies.len()].token.clone();
            let units = 1 + (i % 2) as i64;
            std::thread::spawn(move || {
                let body = json!({"sales_code": format!("T{i}"), "medications": [{"id": med, "bought_qty": units}]});
                barrier.wait();
                let resp = app.post(
                    &format!("/api/v1/prescriptions/burn/{sig}"),
                    Some(&token),
                    &body,
                );
                (units, resp.status)
            })
        })
        .collect();
    let results: Vec<(i64, u16)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let sold: i64 = results
        .iter()
        .filter(|(_, s)| *s == 200)
        .map(|(u, _)| u)
        .sum();
    assert!(
        results.iter().all(|(_, s)| [200, 400, 409].contains(s)),
        "{results:?}"
    );
    assert_eq!(sold, 5, "units sold by the 200s: {results:?}");
    eprintln!(
        "race: {attempts} attempts, {} succeeded, {} units sold of 5",
        results.iter().filter(|(_, s)| *s == 200).count(),
        sold
    );

    let after = app
        .get(
            &format!("/api/v2/pharmacy/rx/{sig}"),
            Some(&pharmacies[0].token),
        )
        .json();
    assert_eq!(after["medications"][0]["bought_qty"], 5);
    assert_eq!(after["status"]["rx_status"][0], "dispensed");
    let logged: i64 = db(&app)
        .query_row(
            "SELECT COALESCE(SUM(d.qty), 0) FROM dispensed_medications d WHERE d.medication_id = ?",
            [med],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(logged, 5, "the event log adds up to the total");
}

#[test]
fn subscribers_get_only_the_events_they_chose() {
    let receiver = Listener::ok();
    let app = spawn_app();
    let p = Practice::new(&app, "farm-hook@example.mx", "Clínica Eventos");
    let ph = register(&app, "Farmacia Eventos");
    let register_hook = |path: &str, events: Option<Value>| {
        let mut body = json!({"url": receiver.url(path), "hospitals": [p.hospital]});
        if let Some(events) = events {
            body["events"] = events;
        }
        let resp = app.post("/api/v2/webhooks/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 201, "{}", resp.text());
        resp.json()
    };
    let bad = app.post(
        "/api/v2/webhooks/",
        Some(ADMIN_TOKEN),
        &json!({"url": receiver.url("/x"), "hospitals": [p.hospital], "events": ["prescription.burned"]}),
    );
    assert!(field_errors(&bad)["events"].is_array());
    let bad = app.post(
        "/api/v2/webhooks/",
        Some(ADMIN_TOKEN),
        &json!({"url": receiver.url("/x"), "hospitals": [p.hospital], "events": []}),
    );
    assert!(field_errors(&bad)["events"].is_array());

    let default = register_hook("/default", None);
    assert_eq!(default["events"], json!(["prescription.created"]));
    let lifecycle = register_hook(
        "/lifecycle",
        Some(json!([
            "prescription.dispensed",
            "prescription.cancelled",
            "prescription.rejected"
        ])),
    );
    assert_eq!(
        lifecycle["events"],
        json!([
            "prescription.dispensed",
            "prescription.rejected",
            "prescription.cancelled"
        ])
    );
    let listed = app
        .get(
            &format!("/api/v2/webhooks/{}/", lifecycle["id"]),
            Some(ADMIN_TOKEN),
        )
        .json();
    assert_eq!(listed["events"], lifecycle["events"]);

    // Created → default only; a dispense, a rejection and a cancellation → lifecycle only.
    let a = prescribe(&app, &p);
    let b = prescribe(&app, &p);
    let c = prescribe(&app, &p);
    let (amox, _) = med_ids(&a);
    assert_eq!(burn(&app, &ph, &signature(&a), &[(amox, 1)]).status, 200);
    assert_eq!(reject(&app, &ph, &signature(&b)).status, 200);
    assert_eq!(cancel(&app, p.medic.token(), &signature(&c)).status, 200);

    receiver.wait_for_events(6, WAIT);
    // Nothing more arrives: no subscriber gets an event it did not choose.
    std::thread::sleep(Duration::from_secs(1));
    let events = receiver.events();
    assert_eq!(events.len(), 6, "exactly 3 created + 3 lifecycle events");
    let to = |path: &str| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e.path == path)
            .map(|e| e.json())
            .collect()
    };
    let created = to("/default");
    assert_eq!(created.len(), 3);
    for body in &created {
        assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    }
    let mut later = to("/lifecycle");
    later.sort_by_key(|b| b["type"].as_str().map(str::to_string));
    assert_eq!(
        later,
        vec![
            json!({"signature": signature(&c), "type": "prescription.cancelled"}),
            json!({"signature": signature(&a), "type": "prescription.dispensed"}),
            json!({"signature": signature(&b), "type": "prescription.rejected"}),
        ]
    );
    for e in events.iter().filter(|e| e.path == "/lifecycle") {
        assert!(
            e.header("webhook-signature")
                .is_some_and(|s| s.starts_with("v1,"))
        );
        assert!(
            e.header("webhook-id")
                .is_some_and(|s| s.starts_with("msg_"))
        );
    }
}

#[test]
fn a_pharmacy_that_scans_signatures_is_logged_and_throttled() {
    let app = spawn_app();
    let p = Practice::new(&app, "farm-scan@example.mx", "Clínica Escaneo");
    let ph = register(&app, "Farmacia Curiosa");
    let honest = register(&app, "Farmacia Honesta");
    let sig = signature(&prescribe(&app, &p));
    assert_eq!(lookup(&app, &ph, &sig).status, 200);

    // 21 unknown signatures: 404 each (more than 20 now), then 429 for everything.
    for i in 0..21 {
        let unknown = format!("{i:064x}");
        let resp = lookup(&app, &ph, &unknown);
        assert_eq!(resp.status, 404, "lookup {i}: {}", resp.text());
    }
    let limited = lookup(&app, &ph, &sig);
    assert_message(&limited, 429);
    let retry: u64 = limited
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_message(&burn(&app, &ph, &sig, &[(1, 1)]), 429);
    // Another pharmacy is not affected.
    assert_eq!(lookup(&app, &honest, &sig).status, 200);

    // The admin sees every call, newest first, with its status.
    let calls = app.get(
        &format!("/api/v2/pharmacies/{}/calls/?limit=100", ph.id),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(calls.status, 200, "{}\n{}", calls.text(), app.log());
    let calls = calls.json();
    assert_eq!(calls["count"], 24);
    let results = calls["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], 429);
    assert_eq!(results[0]["action"], "dispense");
    assert_eq!(results[1]["status"], 429);
    assert_eq!(results[1]["action"], "lookup");
    assert_eq!(results.iter().filter(|c| c["status"] == 404).count(), 21);
    assert_eq!(results.last().unwrap()["status"], 200);
    assert_eq!(results.last().unwrap()["signature"], sig.as_str());
    assert_message(
        &app.get(
            &format!("/api/v2/pharmacies/{}/calls/", ph.id),
            p.medic.token(),
        ),
        403,
    );
}
