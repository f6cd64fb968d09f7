//! The pharmacy's status (issue 71, docs/lifecycle.md "The pharmacy's status"): a pharmacy says
//! what it is doing with a prescription (`with_pharmacy` … `collected`, NHS PSU-like codes), the
//! rules of what may follow what, the `prescription.status_changed` webhook, the patient's message
//! on `ready_to_collect` and `not_dispensed` (through the email relay, a real local listener), and
//! where it shows: the medic's detail and FHIR view, the landing JSON and the patient's page, and
//! a pharmacy's lookup (only its own).

use std::time::Duration;

use serde_json::{Value, json};

use crate::fixtures::{
    Listener, Practice, TestPharmacy, burn, lookup, med_ids, prescribe, register, reject,
    relay_config, signature,
};
use crate::helpers::{
    ADMIN_TOKEN, TestApp, TestResponse, assert_message, field_errors, spawn_app, spawn_app_with,
};

const WAIT: Duration = Duration::from_secs(30);

fn post_status(app: &TestApp, ph: &TestPharmacy, sig: &str, body: Value) -> TestResponse {
    app.post(
        &format!("/api/v2/pharmacy/rx/{sig}/status/"),
        ph.token(),
        &body,
    )
}

/// A 409 `{message}` whose message says `why`.
fn refused(resp: &TestResponse, why: &str) {
    assert_message(resp, 409);
    let message = resp.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains(why), "{message:?} should say {why:?}");
}

fn status_code(app: &TestApp, ph: &TestPharmacy, sig: &str, status: &str) -> u16 {
    post_status(app, ph, sig, json!({"status": status})).status
}

#[test]
fn ready_to_collect_reaches_the_webhook_the_patient_and_every_view() {
    let relay = Listener::ok();
    let hooks = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "estado@example.mx", "Clínica Estado");
    let ph = register(&app, "Farmacia Roma");
    let other = register(&app, "Farmacia Norte");
    let hook = app.post(
        "/api/v2/webhooks/",
        Some(ADMIN_TOKEN),
        &json!({"url": hooks.url("/status"), "hospitals": [p.hospital],
                "events": ["prescription.status_changed", "prescription.created"]}),
    );
    assert_eq!(hook.status, 201, "{}", hook.text());
    assert_eq!(
        hook.json()["events"],
        json!(["prescription.created", "prescription.status_changed"])
    );
    let listed = app.get(
        &format!("/api/v2/webhooks/{}/", hook.json()["id"]),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(listed.json()["events"], hook.json()["events"]);

    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    relay.wait_for_events(1, WAIT);

    let first = post_status(&app, &ph, &sig, json!({"status": "with_pharmacy"}));
    assert_eq!(first.status, 201, "{}", first.text());
    let first = first.json();
    assert_eq!(first["status"], "with_pharmacy");
    assert_eq!(first["label"], "En la farmacia");
    assert_eq!(
        first["pharmacy"],
        json!({"id": ph.id, "name": "Farmacia Roma"})
    );
    assert_eq!(first["pickup_code"], Value::Null);
    assert_eq!(first["reason"], Value::Null);
    assert!(first["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(status_code(&app, &ph, &sig, "preparing"), 201);
    let ready = post_status(
        &app,
        &ph,
        &sig,
        json!({"status": "ready_to_collect", "pickup_code": "A7-22"}),
    );
    assert_eq!(ready.status, 201, "{}", ready.text());
    assert_eq!(
        ready.json()["text"],
        "Lista para recoger en Farmacia Roma, código A7-22"
    );

    // The webhook: created, then three status changes, each saying what the pharmacy said.
    let events = hooks.wait_for_events(4, WAIT);
    let bodies: Vec<Value> = events.iter().map(|e| e.json()).collect();
    let changes: Vec<&Value> = bodies
        .iter()
        .filter(|b| b["type"] == "prescription.status_changed")
        .collect();
    assert_eq!(changes.len(), 3, "{bodies:?}");
    let last = changes
        .iter()
        .find(|b| b["status"] == "ready_to_collect")
        .expect("the ready_to_collect event");
    assert_eq!(
        **last,
        json!({"signature": sig, "type": "prescription.status_changed",
               "status": "ready_to_collect", "pharmacy": {"id": ph.id, "name": "Farmacia Roma"},
               "pickup_code": "A7-22", "reason": null})
    );
    for e in &events {
        assert!(
            e.header("webhook-signature")
                .is_some_and(|s| s.starts_with("v1,"))
        );
    }

    // The patient's message: short, no PDF, no medication, no diagnosis; only ready_to_collect
    // (not with_pharmacy or preparing) sends one.
    let mails = relay.wait_for_events(2, WAIT);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        relay.events().len(),
        2,
        "one message, for ready_to_collect only"
    );
    let message = mails[1].json();
    assert_eq!(message["to"], json!([p.patient_email()]));
    assert_eq!(
        message["subject"],
        "Tu receta está lista para recoger en Farmacia Roma"
    );
    assert_eq!(message["attachments"], json!([]));
    let text = message["text"].as_str().unwrap();
    assert!(text.contains("Código para recogerla: A7-22."), "{text}");
    assert!(text.contains(&format!("(folio {})", &sig[..12])), "{text}");
    assert!(text.contains(&format!("/rx/{sig}")), "{text}");
    for secret in ["Amoxicilina", "Paracetamol", "Faringitis"] {
        assert!(!text.contains(secret), "{secret} in {text}");
        assert!(!message["html"].as_str().unwrap().contains(secret));
    }

    // The medic's detail: the latest and the history; `sent` is the prescription's own email's.
    let detail = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token())
        .json();
    assert_eq!(detail["pharmacy_status"]["status"], "ready_to_collect");
    assert_eq!(detail["pharmacy_status"]["pickup_code"], "A7-22");
    let history: Vec<&str> = detail["pharmacy_status_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["with_pharmacy", "preparing", "ready_to_collect"]);
    assert_eq!(detail["sent"], json!(true));

    // The landing JSON and the patient's page.
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{sig}"),
            p.medic.token(),
        )
        .json();
    assert_eq!(
        landing["rx"]["pharmacy_status"]["status"],
        "ready_to_collect"
    );
    assert_eq!(
        landing["rx"]["pharmacy_status_history"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(
        page.contains("Lista para recoger en Farmacia Roma, código A7-22"),
        "{page}"
    );

    // The FHIR view: one Task per status, as the NHS PSU API carries it.
    let fhir = app
        .get(&format!("/api/v2/rx-endpoint/{sig}/fhir/"), p.medic.token())
        .json();
    let tasks: Vec<&Value> = fhir["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .filter(|r| r["resourceType"] == "Task")
        .collect();
    assert_eq!(tasks.len(), 3);
    let task = tasks[2];
    assert_eq!(task["status"], "in-progress");
    assert_eq!(
        task["businessStatus"]["coding"][0]["code"],
        "ready_to_collect"
    );
    assert_eq!(
        task["owner"]["reference"],
        format!("Organization/pharmacy-{}", ph.id)
    );
    assert_eq!(task["input"][0]["valueString"], "A7-22");

    // Another pharmacy sees none of it (its own statuses only).
    let seen = lookup(&app, &other, &sig).json();
    assert_eq!(seen["pharmacy_status"], Value::Null);
    assert_eq!(seen["pharmacy_status_history"], json!([]));
    let mine = lookup(&app, &ph, &sig).json();
    assert_eq!(mine["pharmacy_status_history"].as_array().unwrap().len(), 3);
}

#[test]
fn what_may_follow_what() {
    let app = spawn_app();
    let p = Practice::new(&app, "reglas-estado@example.mx", "Clínica Reglas");
    let ph = register(&app, "Farmacia Reglas");
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);

    // The body.
    let bad = |body: Value, field: &str| {
        let resp = post_status(&app, &ph, &sig, body.clone());
        assert_eq!(resp.status, 400, "{body}: {}", resp.text());
        assert!(
            field_errors(&resp)[field].is_array(),
            "{body}: {}",
            resp.text()
        );
    };
    bad(json!({}), "status");
    bad(json!({"status": "lista"}), "status");
    bad(json!({"status": null}), "status");
    bad(
        json!({"status": "preparing", "pickup_code": "A1"}),
        "pickup_code",
    );
    bad(
        json!({"status": "ready_to_collect", "pickup_code": "A 1!"}),
        "pickup_code",
    );
    bad(
        json!({"status": "ready_to_collect", "pickup_code": "A".repeat(33)}),
        "pickup_code",
    );
    bad(json!({"status": "not_dispensed"}), "reason");
    bad(
        json!({"status": "not_dispensed", "reason": "   "}),
        "reason",
    );
    bad(
        json!({"status": "preparing", "reason": "porque sí"}),
        "reason",
    );

    // Forward only; dispatched after ready_to_dispatch; collected after a sale.
    assert_eq!(status_code(&app, &ph, &sig, "preparing"), 201);
    let back = post_status(&app, &ph, &sig, json!({"status": "with_pharmacy"}));
    refused(&back, "`with_pharmacy` cannot follow `preparing`");
    assert_eq!(status_code(&app, &ph, &sig, "preparing"), 409, "no repeat");
    assert_eq!(status_code(&app, &ph, &sig, "dispatched"), 409);
    let unsold = post_status(&app, &ph, &sig, json!({"status": "collected"}));
    refused(&unsold, "only after this pharmacy recorded a sale");
    assert_eq!(status_code(&app, &ph, &sig, "ready_to_dispatch"), 201);
    assert_eq!(status_code(&app, &ph, &sig, "dispatched"), 201);
    let (amox, para) = med_ids(&rx);
    assert_eq!(burn(&app, &ph, &sig, &[(amox, 2), (para, 1)]).status, 200);
    assert_eq!(status_code(&app, &ph, &sig, "collected"), 201);
    let after = post_status(
        &app,
        &ph,
        &sig,
        json!({"status": "not_dispensed", "reason": "x"}),
    );
    refused(&after, "already collected (final)");

    // Fully dispensed by one pharmacy: another may post nothing.
    let other = register(&app, "Farmacia Otra");
    assert_eq!(status_code(&app, &other, &sig, "with_pharmacy"), 409);

    // A live claim of another pharmacy holds the status too; a rejection ends it.
    let rx2 = prescribe(&app, &p);
    let sig2 = signature(&rx2);
    let claim = app.post(
        &format!("/api/v2/pharmacy/rx/{sig2}/claim/"),
        other.token(),
        &json!({}),
    );
    assert_eq!(claim.status, 200, "{}", claim.text());
    let held = post_status(&app, &ph, &sig2, json!({"status": "with_pharmacy"}));
    refused(&held, "claimed by another pharmacy");
    assert_eq!(status_code(&app, &other, &sig2, "with_pharmacy"), 201);
    let not_dispensed = post_status(
        &app,
        &other,
        &sig2,
        json!({"status": "not_dispensed", "reason": "Sin existencias"}),
    );
    assert_eq!(not_dispensed.status, 201, "{}", not_dispensed.text());
    assert_eq!(
        not_dispensed.json()["text"],
        "No surtida en Farmacia Otra: Sin existencias"
    );
    let rx3 = prescribe(&app, &p);
    assert_eq!(reject(&app, &ph, &signature(&rx3)).status, 200);
    let closed = post_status(&app, &ph, &signature(&rx3), json!({"status": "preparing"}));
    refused(&closed, "was rejected by a pharmacy");

    // Who may call: a pharmacy's token only; an unknown signature is the pharmacy API's 404.
    let unknown = post_status(&app, &ph, &"ab".repeat(32), json!({"status": "preparing"}));
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json(), json!({"error": "rx not found"}));
    let path = format!("/api/v2/pharmacy/rx/{sig2}/status/");
    let body = json!({"status": "preparing"});
    assert_eq!(app.post(&path, p.medic.token(), &body).status, 403);
    assert_eq!(app.post(&path, Some(ADMIN_TOKEN), &body).status, 403);
    assert_eq!(app.post(&path, None, &body).status, 401);
}

#[test]
fn not_dispensed_tells_the_patient_why() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "no-surtida@example.mx", "Clínica Sin Surtir");
    let ph = register(&app, "Farmacia Centro");
    let sig = signature(&prescribe(&app, &p));
    relay.wait_for_events(1, WAIT);
    let resp = post_status(
        &app,
        &ph,
        &sig,
        json!({"status": "not_dispensed", "reason": "Sin existencias por ahora"}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let message = relay.wait_for_events(2, WAIT)[1].json();
    assert_eq!(message["subject"], "Farmacia Centro no surtirá tu receta");
    let text = message["text"].as_str().unwrap();
    assert!(
        text.contains("Motivo: Sin existencias por ahora."),
        "{text}"
    );
    assert!(text.contains("Puedes surtirla en otra farmacia."), "{text}");
}
