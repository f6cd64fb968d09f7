//! Abuse resistance (issue 36): the resend limits (no mail cannon), text that could disguise a
//! prescription refused where it is stored, and a search for NUL refused instead of matching all.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fixtures::{Listener, Practice, create_patient, db, patient_body, relay_config};
use crate::helpers::{ADMIN_TOKEN, TestApp, field_errors, spawn_app, spawn_app_with};

const WAIT: Duration = Duration::from_secs(30);
const RLO: char = '\u{202E}';

/// Ten distinct `cc` addresses: with the `email`, 11 recipients per resend.
fn ten_cc(tag: &str) -> String {
    (0..10)
        .map(|i| format!("copia{i}.{tag}@example.mx"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn resend(app: &TestApp, token: Option<&str>, signature: &str, body: &Value) -> (u16, Value) {
    let resp = app.post(&format!("/api/v2/rx/resend/{signature}/"), token, body);
    let retry = resp.header("retry-after").map(str::to_string);
    let status = resp.status;
    let mut json = resp.json();
    if status == 429 {
        let seconds: u64 = retry
            .expect("a 429 carries Retry-After")
            .parse()
            .expect("Retry-After is whole seconds");
        assert!((1..=3600).contains(&seconds), "Retry-After {seconds}");
        assert_eq!(json.as_object().unwrap().len(), 1, "{json}");
        assert!(json["message"].as_str().unwrap().contains("Resend limit"));
        json["retry_after"] = json!(seconds);
    }
    (status, json)
}

fn email_rows(app: &TestApp) -> i64 {
    db(app)
        .query_row(
            "SELECT COUNT(*) FROM outbox WHERE kind = 'email'",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn the_sixth_resend_of_a_prescription_in_an_hour_is_429_and_nothing_is_sent() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "reenvios@example.mx", "Clínica Reenvíos");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    // The create's own email is not a resend.
    relay.wait_for_events(1, WAIT);
    for n in 1..=5 {
        let (status, body) = resend(&app, p.medic.token(), signature, &json!({}));
        assert_eq!(status, 200, "resend {n}: {body}");
    }
    relay.wait_for_events(6, WAIT);
    let (status, body) = resend(&app, p.medic.token(), signature, &json!({}));
    assert_eq!(status, 429, "{body}");
    // The oldest of the hour's five leaves the window in about an hour.
    assert!(body["retry_after"].as_u64().unwrap() > 3000, "{body}");
    // The API admin is another caller, but the prescription's own limit holds for everyone.
    let (status, _) = resend(&app, Some(ADMIN_TOKEN), signature, &json!({}));
    assert_eq!(status, 429);
    // Nothing was queued, nothing reaches the relay.
    assert_eq!(email_rows(&app), 6);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(relay.events().len(), 6);
    // Another prescription of the same medic has its own count.
    let other = p.prescribe(&app);
    let (status, _) = resend(
        &app,
        p.medic.token(),
        other["signature"].as_str().unwrap(),
        &json!({}),
    );
    assert_eq!(status, 200);
}

#[test]
fn one_caller_resends_to_at_most_fifty_recipients_an_hour() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "copias@example.mx", "Clínica Copias");
    let signatures: Vec<String> = (0..6)
        .map(|_| p.prescribe(&app)["signature"].as_str().unwrap().to_string())
        .collect();
    relay.wait_for_events(6, WAIT);
    // Four resends of 11 recipients each: 44.
    for (i, signature) in signatures.iter().take(4).enumerate() {
        let body = json!({"email": format!("destino{i}@example.mx"), "cc": ten_cc(&i.to_string())});
        let (status, body) = resend(&app, p.medic.token(), signature, &body);
        assert_eq!(status, 200, "{body}");
    }
    // 11 more would be 55: refused, nothing queued.
    let eleven = json!({"email": "destino5@example.mx", "cc": ten_cc("cinco")});
    let (status, body) = resend(&app, p.medic.token(), &signatures[4], &eleven);
    assert_eq!(status, 429, "{body}");
    assert_eq!(email_rows(&app), 6 + 4);
    // 6 more make exactly 50: admitted; then even one more is refused.
    let six = json!({"email": "destino6@example.mx", "cc": "a@example.mx b@example.mx c@example.mx d@example.mx e@example.mx"});
    let (status, body) = resend(&app, p.medic.token(), &signatures[4], &six);
    assert_eq!(status, 200, "{body}");
    let (status, _) = resend(&app, p.medic.token(), &signatures[5], &json!({}));
    assert_eq!(status, 429);
    // The API admin is a caller of its own.
    let (status, body) = resend(&app, Some(ADMIN_TOKEN), &signatures[5], &eleven);
    assert_eq!(status, 200, "{body}");
    relay.wait_for_events(6 + 4 + 2, WAIT);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(relay.events().len(), 12);
}

/// The one message on `field` of a 400, which must name `code` (e.g. `U+202E`).
fn refused(resp: &crate::helpers::TestResponse, field: &str, code: &str) {
    assert_eq!(resp.status, 400, "{}", resp.text());
    let errors = field_errors(resp);
    let message = errors[field][0].as_str().unwrap_or_default().to_string();
    assert!(message.contains(code), "{field}: {errors}");
}

#[test]
fn control_and_bidi_characters_are_refused_in_stored_text() {
    let app = spawn_app();
    let p = Practice::new(&app, "texto@example.mx", "Clínica Texto");
    // A patient's name.
    for (name, code) in [
        (format!("Juan {RLO}zeréP"), "U+202E"),
        ("Juan\u{0}Pérez".to_string(), "U+0000"),
        ("Juan\tPérez".to_string(), "U+0009"),
        ("Juan \u{2066}Pérez".to_string(), "U+2066"),
    ] {
        let mut body = patient_body("x");
        body["name"] = json!(name);
        let resp = app.post("/api/v2/patient/", p.medic.token(), &body);
        refused(&resp, "name", code);
    }
    // A medication's presentation: named by item, nothing stored.
    let before: i64 = db(&app)
        .query_row("SELECT COUNT(*) FROM prescriptions", [], |r| r.get(0))
        .unwrap();
    let rx = |presentation: String, instructions: &str| {
        json!({
            "hospital": p.hospital,
            "patient": {"uid": p.patient["uid"]},
            "medications": [{"presentation": presentation, "instructions": instructions}],
        })
    };
    let resp = app.post(
        "/api/v2/rx-endpoint/",
        p.medic.token(),
        &rx(format!("Paracetamol{RLO}mapezanolC"), "1 cada 8 horas"),
    );
    refused(&resp, "medications", "U+202E");
    let message = field_errors(&resp)["medications"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.starts_with("Item 1, presentation:"), "{message}");
    let resp = app.post(
        "/api/v2/rx-endpoint/",
        p.medic.token(),
        &rx("Paracetamol\u{85}".into(), "1 cada 8 horas"),
    );
    refused(&resp, "medications", "U+0085");
    let after: i64 = db(&app)
        .query_row("SELECT COUNT(*) FROM prescriptions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(before, after);
    // Line breaks and tabs stay allowed in the multi-line fields.
    let resp = app.post(
        "/api/v2/rx-endpoint/",
        p.medic.token(),
        &rx(
            "Paracetamol 500 mg".into(),
            "Tomar 1 tableta\ncada 8 horas\tsi hay dolor",
        ),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    // A hospital's name.
    let mut body = crate::helpers::hospital_body("Hospital\u{0}Central");
    let resp = app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body);
    refused(&resp, "name", "U+0000");
    body["name"] = json!(format!("Hospital {RLO}lartneC"));
    let resp = app.post("/api/v2/hospital/", Some(ADMIN_TOKEN), &body);
    refused(&resp, "name", "U+202E");
    // A patient stored before the rule keeps its name; the rule applies to what is sent.
    let ok = create_patient(&app, &p.medic, &patient_body("Ana López"));
    assert_eq!(ok["name"], "Ana López");
}

#[test]
fn a_search_for_nul_is_a_400_not_every_patient() {
    let app = spawn_app();
    let p = Practice::new(&app, "busqueda-nul@example.mx", "Clínica Búsqueda");
    create_patient(&app, &p.medic, &patient_body("María Gómez"));
    for path in [
        "/api/v2/patient/?search=%00",
        "/api/v2/rx-endpoint/?search=%00",
        "/api/v2/patient/?search=G%E2%80%AEmez",
    ] {
        let resp = app.get(path, p.medic.token());
        assert_eq!(resp.status, 400, "{path}: {}", resp.text());
        assert!(field_errors(&resp)["search"][0].is_string(), "{path}");
    }
    let resp = app.get("/api/v2/patient/?search=G%C3%B3mez", p.medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(resp.text().contains("María Gómez"), "{}", resp.text());
}
