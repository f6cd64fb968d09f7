//! Webhook subscriptions (API admin) and the prescription-made webhook, delivered to real local
//! receivers and verified with the Standard Webhooks reference library (`standardwebhooks`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::fixtures::{Listener, Practice, Received, Reply, db, eventually, relay_config};
use crate::helpers::{ADMIN_TOKEN, TestApp, spawn_app, spawn_app_with};
use receta_test_host::free_port;

const WAIT: Duration = Duration::from_secs(30);

fn register(app: &TestApp, body: &Value) -> Value {
    let resp = app.post("/api/v2/webhooks/", Some(ADMIN_TOKEN), body);
    assert_eq!(resp.status, 201, "registering {body}: {}", resp.text());
    resp.json()
}

/// Checks a delivery with the reference verifier and returns its body.
fn verify(secret: &str, event: &Received) -> Value {
    let mut headers = ureq::http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        let value = event
            .header(name)
            .unwrap_or_else(|| panic!("missing {name}"));
        headers.insert(name, value.parse().unwrap());
    }
    standardwebhooks::Webhook::new(secret)
        .expect("a whsec_ secret")
        .verify(&event.body, &headers)
        .unwrap_or_else(|e| panic!("the signature does not verify: {e:?}"));
    event.json()
}

fn webhook_rows(app: &TestApp, signature: &str) -> i64 {
    db(app)
        .query_row(
            "SELECT COUNT(*) FROM outbox o JOIN prescriptions p ON p.id = o.prescription_id \
             WHERE o.kind = 'webhook' AND p.signature = ?",
            [signature],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn registration_checks_hospitals_medics_and_the_url() {
    let receiver = Listener::ok();
    let app = spawn_app();
    let p = Practice::new(&app, "hook-reg@example.mx", "Clínica Registro");
    let url = receiver.url("/hooks/receta");

    // Only the API admin.
    let body = json!({"url": url, "hospitals": [p.hospital]});
    assert_eq!(
        app.post("/api/v2/webhooks/", p.medic.token(), &body).status,
        403
    );
    assert_eq!(app.post("/api/v2/webhooks/", None, &body).status, 401);
    assert_eq!(app.get("/api/v2/webhooks/", p.medic.token()).status, 403);

    // Hospitals and medics must exist; something must be listed.
    let bad = |body: Value, field: &str, needle: &str| {
        let resp = app.post("/api/v2/webhooks/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 400, "{body}: {}", resp.text());
        let message = resp.json()[field][0]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(needle), "{body}: {message}");
    };
    bad(
        json!({"url": url, "hospitals": [999999]}),
        "hospitals",
        "999999",
    );
    bad(json!({"url": url, "medics": [888888]}), "medics", "888888");
    bad(
        json!({"url": url, "medics": ["nadie@example.mx"]}),
        "medics",
        "nadie@example.mx",
    );
    bad(json!({"url": url}), "hospitals", "at least one");
    bad(json!({"hospitals": [p.hospital]}), "url", "required");
    bad(
        json!({"url": "ftp://x/y", "hospitals": [p.hospital]}),
        "url",
        "http",
    );

    // The URL must answer a POST with 2xx, and be allowed by the manifest.
    let closed = format!("http://127.0.0.1:{}/hook", free_port());
    bad(
        json!({"url": closed, "hospitals": [p.hospital]}),
        "url",
        "failed",
    );
    let failing = Listener::start(|_, _| Reply::Status(500));
    bad(
        json!({"url": failing.url("/x"), "hospitals": [p.hospital]}),
        "url",
        "HTTP 500",
    );
    bad(
        json!({"url": "http://192.0.2.10:8080/hook", "hospitals": [p.hospital]}),
        "url",
        "allowed_outbound_hosts",
    );
    assert_eq!(receiver.requests().len(), 0);

    // Registered: the secret is shown once; the test POST was signed.
    let created = register(
        &app,
        &json!({"url": url, "hospitals": [p.hospital, p.hospital], "medics": [p.medic.id, p.medic.email]}),
    );
    let secret = created["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_eq!(created["url"], url);
    assert_eq!(created["hospitals"], json!([p.hospital]));
    assert_eq!(
        created["medics"],
        json!([p.medic.id]),
        "one medic, listed once"
    );
    assert_eq!(created["active"], true);
    let ping = receiver.requests().remove(0);
    assert!(ping.is_ping());
    verify(secret, &ping);

    let list = app.get("/api/v2/webhooks/", Some(ADMIN_TOKEN)).json();
    assert_eq!(list["count"], 1);
    assert_eq!(list["results"][0]["id"], created["id"]);
    assert!(list["results"][0].get("secret").is_none(), "shown once");
    let id = created["id"].as_i64().unwrap();
    let one = app.get(&format!("/api/v2/webhooks/{id}/"), Some(ADMIN_TOKEN));
    assert_eq!(one.status, 200);
    assert!(one.json().get("secret").is_none());

    let by_email = register(
        &app,
        &json!({"url": url, "medics": [p.medic.email.to_uppercase()]}),
    );
    assert_eq!(by_email["medics"], json!([p.medic.email.to_uppercase()]));

    assert_eq!(
        app.delete(&format!("/api/v2/webhooks/{id}/"), p.medic.token())
            .status,
        403
    );
    assert_eq!(
        app.delete(&format!("/api/v2/webhooks/{id}/"), Some(ADMIN_TOKEN))
            .status,
        204
    );
    assert_eq!(
        app.delete(&format!("/api/v2/webhooks/{id}/"), Some(ADMIN_TOKEN))
            .status,
        404
    );
    assert_eq!(
        app.get(&format!("/api/v2/webhooks/{id}/"), Some(ADMIN_TOKEN))
            .status,
        404
    );
    assert_eq!(
        app.get("/api/v2/webhooks/", Some(ADMIN_TOKEN)).json()["count"],
        1
    );
}

#[test]
fn a_webhook_goes_only_to_subscribers_listing_the_medic_or_the_hospital() {
    let by_hospital = Listener::ok();
    let by_medic = Listener::ok();
    let app = spawn_app();
    let one = Practice::new(&app, "hook-one@example.mx", "Clínica Uno");
    let two = Practice::new(&app, "hook-two@example.mx", "Clínica Dos");
    let three = Practice::new(&app, "hook-three@example.mx", "Clínica Tres");
    let a = register(
        &app,
        &json!({"url": by_hospital.url("/a"), "hospitals": [one.hospital]}),
    );
    let b = register(
        &app,
        &json!({"url": by_medic.url("/b"), "medics": [two.medic.email]}),
    );

    let rx1 = one.prescribe(&app);
    let rx2 = two.prescribe(&app);
    let rx3 = three.prescribe(&app);
    let s1 = rx1["signature"].as_str().unwrap();
    let s2 = rx2["signature"].as_str().unwrap();
    let s3 = rx3["signature"].as_str().unwrap();
    // Planned in the issuing transaction: one row for each listed prescription, none for the other.
    assert_eq!(
        (
            webhook_rows(&app, s1),
            webhook_rows(&app, s2),
            webhook_rows(&app, s3)
        ),
        (1, 1, 0)
    );

    let event = by_hospital.wait_for_events(1, WAIT).remove(0);
    assert_eq!((event.method.as_str(), event.path.as_str()), ("POST", "/a"));
    assert_eq!(
        event.body,
        format!(r#"{{"signature":"{s1}"}}"#).into_bytes()
    );
    assert_eq!(
        verify(a["secret"].as_str().unwrap(), &event),
        json!({"signature": s1})
    );
    assert!(event.header("webhook-id").unwrap().starts_with("msg_"));
    let timestamp: u64 = event.header("webhook-timestamp").unwrap().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(timestamp.abs_diff(now) < 60, "{timestamp} vs {now}");

    let event = by_medic.wait_for_events(1, WAIT).remove(0);
    assert_eq!(
        verify(b["secret"].as_str().unwrap(), &event),
        json!({"signature": s2})
    );
    // The other subscriber's secret does not verify it.
    let mut headers = ureq::http::HeaderMap::new();
    for name in ["webhook-id", "webhook-timestamp", "webhook-signature"] {
        headers.insert(name, event.header(name).unwrap().parse().unwrap());
    }
    assert!(
        standardwebhooks::Webhook::new(a["secret"].as_str().unwrap())
            .unwrap()
            .verify(&event.body, &headers)
            .is_err()
    );

    // The consumer's next step works with the admin token: the detail by signature.
    let detail = app.get(&format!("/api/v2/rx-endpoint/{s2}/"), Some(ADMIN_TOKEN));
    assert_eq!(detail.status, 200);
    assert_eq!(by_hospital.events().len(), 1);
    assert_eq!(by_medic.events().len(), 1);
}

#[test]
fn a_failing_receiver_gets_the_same_webhook_id_until_it_succeeds() {
    // The registration ping (request 0) succeeds; then 500, 503, and 200.
    let receiver = Listener::start(|n, r| {
        if r.is_ping() {
            return Reply::Status(200);
        }
        Reply::Status(match n {
            1 => 500,
            2 => 503,
            _ => 200,
        })
    });
    let app = spawn_app_with(relay_config(""));
    let p = Practice::new(&app, "hook-retry@example.mx", "Clínica Terca");
    let sub = register(
        &app,
        &json!({"url": receiver.url("/retry"), "hospitals": [p.hospital]}),
    );
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    // Attempt 1 right after the create; 2 and 3 from the cron trigger (every second).
    let events = receiver.wait_for_events(3, Duration::from_secs(60));
    let secret = sub["secret"].as_str().unwrap();
    let ids: Vec<&str> = events
        .iter()
        .map(|e| e.header("webhook-id").unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    for e in &events {
        assert_eq!(verify(secret, e), json!({"signature": signature}));
    }
    let delivery = eventually("the delivery to be done", WAIT, || {
        let list = app
            .get(
                &format!("/api/v2/deliveries/?kind=webhook&webhook={}", sub["id"]),
                Some(ADMIN_TOKEN),
            )
            .json();
        (list["results"][0]["status"] == "done").then(|| list["results"][0].clone())
    });
    assert_eq!(delivery["webhook_id"], ids[0]);
    assert_eq!(delivery["signature"], signature);
    let full = app
        .get(
            &format!("/api/v2/deliveries/{}/", delivery["id"]),
            Some(ADMIN_TOKEN),
        )
        .json();
    let codes: Vec<&Value> = full["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["status_code"])
        .collect();
    assert_eq!(codes, [&json!(500), &json!(503), &json!(200)]);
    assert_eq!(receiver.events().len(), 3, "nothing after the success");
}

#[test]
fn a_410_disables_the_subscription() {
    let receiver = Listener::start(|_, r| Reply::Status(if r.is_ping() { 200 } else { 410 }));
    let app = spawn_app();
    let p = Practice::new(&app, "hook-gone@example.mx", "Clínica Cerrada");
    let sub = register(
        &app,
        &json!({"url": receiver.url("/gone"), "hospitals": [p.hospital]}),
    );
    let id = sub["id"].as_i64().unwrap();
    let first = p.prescribe(&app);
    receiver.wait_for_events(1, WAIT);
    let shown = eventually("the subscription to be disabled", WAIT, || {
        let s = app
            .get(&format!("/api/v2/webhooks/{id}/"), Some(ADMIN_TOKEN))
            .json();
        (s["active"] == false).then_some(s)
    });
    assert!(shown["disabled_at"].is_string());
    let deliveries = app
        .get(
            &format!("/api/v2/deliveries/?webhook={id}"),
            Some(ADMIN_TOKEN),
        )
        .json();
    assert_eq!(deliveries["results"][0]["status"], "dead");
    assert!(
        deliveries["results"][0]["last_error"]
            .as_str()
            .unwrap()
            .contains("410")
    );
    // Nothing is planned for a disabled subscription, and its deliveries cannot be replayed.
    let later = p.prescribe(&app);
    assert_eq!(webhook_rows(&app, later["signature"].as_str().unwrap()), 0);
    let replay = app.post(
        &format!(
            "/api/v2/deliveries/{}/replay/",
            deliveries["results"][0]["id"]
        ),
        Some(ADMIN_TOKEN),
        &json!({}),
    );
    assert_eq!(replay.status, 400, "{}", replay.text());
    assert_eq!(webhook_rows(&app, first["signature"].as_str().unwrap()), 1);
    assert_eq!(receiver.events().len(), 1);
}

#[test]
fn the_admin_replays_a_delivery_with_its_webhook_id() {
    let receiver = Listener::ok();
    let app = spawn_app();
    let p = Practice::new(&app, "hook-replay@example.mx", "Clínica Repetición");
    let sub = register(
        &app,
        &json!({"url": receiver.url("/replay"), "medics": [p.medic.id]}),
    );
    p.prescribe(&app);
    let first = receiver.wait_for_events(1, WAIT).remove(0);
    let delivery = eventually("the delivery to be done", WAIT, || {
        let list = app
            .get(
                &format!("/api/v2/deliveries/?webhook={}", sub["id"]),
                Some(ADMIN_TOKEN),
            )
            .json();
        (list["results"][0]["status"] == "done").then(|| list["results"][0].clone())
    });
    let path = format!("/api/v2/deliveries/{}/replay/", delivery["id"]);
    assert_eq!(app.post(&path, p.medic.token(), &json!({})).status, 403);
    let replayed = app.post(&path, Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(replayed.status, 200, "{}", replayed.text());
    assert_eq!(replayed.json()["status"], "pending");
    let again = receiver.wait_for_events(2, WAIT).remove(1);
    assert_eq!(again.header("webhook-id"), first.header("webhook-id"));
    assert_eq!(again.body, first.body);
    verify(sub["secret"].as_str().unwrap(), &again);
    assert_eq!(
        app.post(
            "/api/v2/deliveries/999999/replay/",
            Some(ADMIN_TOKEN),
            &json!({})
        )
        .status,
        404
    );

    // One worker pass over HTTP, for deployments without the cron trigger: the API admin's.
    let run = app.post("/api/v2/deliveries/run/", p.medic.token(), &json!({}));
    assert_eq!(run.status, 403);
    let run = app.post("/api/v2/deliveries/run/", Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(run.status, 200, "{}", run.text());
    let run = run.json();
    for key in ["attempted", "delivered", "failed"] {
        assert!(run[key].is_u64(), "{run}");
    }
}

/// The host dies while a delivery is leased and its receiver is still thinking: after a restart the
/// row is taken again once the lease expires, and the receiver gets it with the same `webhook-id`.
#[test]
fn a_lease_that_outlives_its_worker_expires() {
    if crate::helpers::on_libsql() {
        return; // It reads the outbox in the database file after a crash: a local database only.
    }
    let port = free_port();
    let config = || {
        crate::helpers::AppConfig::with_variables(&[
            ("delivery_timeout_ms", "5000"),
            ("outbox_retry_scale", "0.001"),
        ])
    };
    let app = spawn_app_with(config());
    let p = Practice::new(&app, "hook-lease@example.mx", "Clínica Interrumpida");
    let stalled = Listener::on_port(port, |_, r| {
        if r.is_ping() {
            Reply::Status(200)
        } else {
            Reply::Hang
        }
    });
    register(
        &app,
        &json!({"url": stalled.url("/lease"), "hospitals": [p.hospital]}),
    );
    p.prescribe(&app);
    let first = stalled.wait_for_events(1, WAIT).remove(0);
    let state_dir = app.crash();
    drop(stalled);
    let leased: (String, i64, Option<String>) = {
        let conn = rusqlite::Connection::open(state_dir.path().join("sqlite_db.db")).unwrap();
        conn.query_row(
            "SELECT status, attempts, lease_until FROM outbox WHERE kind = 'webhook'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap()
    };
    assert_eq!((leased.0.as_str(), leased.1), ("pending", 1));
    assert!(leased.2.is_some(), "killed while the row was leased");

    let receiver = Listener::on_port(port, |_, _| Reply::Status(200));
    let app = crate::helpers::start(config(), state_dir);
    let again = receiver
        .wait_for_events(1, Duration::from_secs(60))
        .remove(0);
    assert_eq!(again.header("webhook-id"), first.header("webhook-id"));
    assert_eq!(again.body, first.body);
    let (status, attempts, recorded): (String, i64, i64) = eventually("the row done", WAIT, || {
        db(&app)
            .query_row(
                "SELECT o.status, o.attempts, (SELECT COUNT(*) FROM outbox_attempts a WHERE a.outbox_id = o.id) \
                 FROM outbox o WHERE o.kind = 'webhook'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .ok()
            .filter(|row: &(String, i64, i64)| row.0 == "done")
    });
    assert_eq!((status.as_str(), attempts), ("done", 2));
    assert_eq!(
        recorded, 1,
        "the killed attempt left no record; the second did"
    );
}
