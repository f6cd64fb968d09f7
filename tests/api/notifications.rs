//! The patient's email through the relay (a real local HTTP listener): what arrives, `sent` flipping
//! only after the relay's 2xx, resend with cc, hospitals that send no email, a relay that hangs,
//! delivery latency, and a crash with the relay down.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::fixtures::{
    FROM, Listener, Practice, RELAY_TOKEN, Reply, db, eventually, eventually_in, relay_config,
};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, spawn_app_with, start};
use receta_test_host::free_port;

/// How long a test waits for something that should take milliseconds (a loaded CI machine included).
const WAIT: Duration = Duration::from_secs(30);

fn detail(app: &TestApp, p: &Practice, signature: &str) -> Value {
    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        p.medic.token(),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()
}

fn stored_pdf(app: &TestApp, signature: &str) -> Vec<u8> {
    db(app)
        .query_row(
            "SELECT d.pdf FROM prescription_documents d JOIN prescriptions p ON p.id = d.prescription_id WHERE p.signature = ?",
            [signature],
            |r| r.get(0),
        )
        .unwrap()
}

fn sent_when_done(app: &TestApp, p: &Practice, signature: &str) -> Value {
    eventually("sent to flip to true", WAIT, || {
        let d = detail(app, p, signature);
        (d["sent"] == json!(true)).then_some(d)
    })
}

#[test]
fn the_email_arrives_with_the_stored_pdf_and_then_sent_flips() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/v1/send")));
    let p = Practice::new(&app, "email-pdf@example.mx", "Clínica Roma Norte");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    assert_eq!(
        rx["sent"],
        Value::Null,
        "the create answers before any send"
    );

    let mail = relay.wait_for_events(1, WAIT).remove(0);
    assert_eq!(
        (mail.method.as_str(), mail.path.as_str()),
        ("POST", "/v1/send")
    );
    assert_eq!(
        mail.header("authorization"),
        Some(format!("Bearer {RELAY_TOKEN}").as_str())
    );
    assert!(
        mail.header("content-type")
            .is_some_and(|ct| ct.starts_with("application/json"))
    );
    let m = mail.json();
    let mut keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["attachments", "cc", "from", "html", "subject", "text", "to"]
    );
    assert_eq!(m["from"], FROM);
    // A stable key per email, so a relay that supports it drops retried deliveries.
    let key = mail.header("idempotency-key").expect("Idempotency-Key");
    assert!(key.starts_with("receta-email-"), "{key}");
    assert_eq!(m["to"], json!([p.patient_email()]));
    assert_eq!(m["cc"], json!([]));
    let subject = m["subject"].as_str().unwrap();
    assert!(
        subject.contains("Dr. José Núñez") && subject.contains("Clínica Roma Norte"),
        "{subject}"
    );
    let cta_link = rx["cta_link"].as_str().unwrap();
    assert!(cta_link.ends_with(signature));
    // The link the patient gets carries the seal in its fragment (docs/verification.md).
    let seal = &detail(&app, &p, signature)["seal"];
    let sealed = format!(
        "{cta_link}#{}.{}",
        seal["kid"].as_str().unwrap(),
        seal["sig"].as_str().unwrap()
    );
    for part in ["text", "html"] {
        let body = m[part].as_str().unwrap();
        assert!(body.contains(&sealed), "{part}: {body}");
        assert!(
            body.contains("Juan Pérez") && body.contains("receta"),
            "{part}: {body}"
        );
    }
    let attachments = m["attachments"].as_array().unwrap();
    assert_eq!(attachments.len(), 1);
    let a = &attachments[0];
    assert_eq!(a["content_type"], "application/pdf");
    assert!(a["filename"].as_str().unwrap().ends_with(".pdf"));
    let pdf = STANDARD.decode(a["content"].as_str().unwrap()).unwrap();
    assert!(pdf.starts_with(b"%PDF-"));
    assert_eq!(
        pdf,
        stored_pdf(&app, signature),
        "the bytes stored at issue"
    );

    let d = sent_when_done(&app, &p, signature);
    assert_eq!(
        d["status"]["sent_status"],
        json!(["sent_email", "sent by email"])
    );

    // The admin's view: one email delivery, done, with one successful attempt.
    let list = app.get(
        &format!("/api/v2/deliveries/?signature={signature}"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(list.status, 200, "{}", list.text());
    let list = list.json();
    assert_eq!(list["count"], 1);
    let delivery = &list["results"][0];
    assert_eq!(
        (&delivery["kind"], &delivery["status"], &delivery["target"]),
        (&json!("email"), &json!("done"), &json!(p.patient_email()))
    );
    let one = app
        .get(
            &format!("/api/v2/deliveries/{}/", delivery["id"]),
            Some(ADMIN_TOKEN),
        )
        .json();
    assert_eq!(one["history"].as_array().unwrap().len(), 1);
    assert_eq!(one["history"][0]["status_code"], 200);
    assert_eq!(one["history"][0]["error"], Value::Null);
    assert_eq!(
        app.get("/api/v2/deliveries/", p.medic.token()).status,
        403,
        "the delivery log is the API admin's"
    );
}

#[test]
fn sent_stays_null_until_the_relay_answers_2xx() {
    // The relay fails the first two attempts: the prescription stays pending until the third.
    let relay = Listener::start(|n, _| Reply::Status(if n < 2 { 503 } else { 202 }));
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "email-retry@example.mx", "Clínica Reintento");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    relay.wait_for_events(1, WAIT);
    let d = detail(&app, &p, signature);
    assert_eq!(d["sent"], Value::Null);
    assert_eq!(
        d["status"]["sent_status"],
        json!(["pending", "pending send"])
    );
    // The cron trigger (every second) retries: 202 on the third attempt.
    let d = sent_when_done(&app, &p, signature);
    assert_eq!(d["status"]["sent_status"][0], "sent_email");
    let events = relay.events();
    assert_eq!(events.len(), 3, "no more attempts once accepted");
    let attempts: Vec<(i64, Option<i64>)> = db(&app)
        .prepare("SELECT number, status_code FROM outbox_attempts ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(attempts, [(1, Some(503)), (2, Some(503)), (3, Some(202))]);
}

#[test]
fn resend_queues_a_new_email_with_cc() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "email-resend@example.mx", "Clínica Reenvío");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    relay.wait_for_events(1, WAIT);

    let path = format!("/api/v2/rx/resend/{signature}/");
    let body =
        json!({"email": "otra.direccion@example.mx", "cc": "tutor@example.mx, medico@example.mx"});
    let resp = app.post(&path, p.medic.token(), &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let message = resp.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("resent"), "{message}");
    let again = relay.wait_for_events(2, WAIT).remove(1).json();
    assert_eq!(again["to"], json!(["otra.direccion@example.mx"]));
    assert_eq!(
        again["cc"],
        json!(["tutor@example.mx", "medico@example.mx"])
    );
    assert_eq!(again["attachments"][0]["content_type"], "application/pdf");

    // The API admin may resend too; with no email, the patient's address is used.
    let resp = app.post(&path, Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let third = relay.wait_for_events(3, WAIT).remove(2).json();
    assert_eq!(third["to"], json!([p.patient_email()]));

    // 404 naming the signature: unknown, or another medic's prescription.
    let unknown = "0".repeat(64);
    let resp = app.post(
        &format!("/api/v2/rx/resend/{unknown}/"),
        p.medic.token(),
        &body,
    );
    assert_eq!(resp.status, 404);
    assert!(resp.json()["message"].as_str().unwrap().contains(&unknown));
    let other = app.create_medic("otro-medico@example.mx");
    let resp = app.post(&path, other.token(), &body);
    assert_eq!(resp.status, 404);
    assert!(resp.json()["message"].as_str().unwrap().contains(signature));
    assert_eq!(app.post(&path, None, &body).status, 401);

    // Bad addresses: 400 on the field, nothing queued.
    let resp = app.post(&path, p.medic.token(), &json!({"email": "no-es-correo"}));
    assert_eq!(resp.status, 400);
    assert!(resp.json()["email"].is_array());
    let resp = app.post(
        &path,
        p.medic.token(),
        &json!({"email": "a@example.mx", "cc": "b@example.mx, roto@"}),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["cc"][0].as_str().unwrap().contains("roto@"));
    let rows: i64 = db(&app)
        .query_row("SELECT COUNT(*) FROM outbox", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 3);
}

#[test]
fn a_hospital_that_sends_no_emails_sends_none() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "email-quiet@example.mx", "Consultorio Silencioso");
    let resp = app.patch(
        &format!("/api/v2/hospital/{}/", p.hospital),
        Some(ADMIN_TOKEN),
        &json!({"send_emails": false}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let quiet = p.prescribe(&app);
    let signature = quiet["signature"].as_str().unwrap();
    let d = detail(&app, &p, signature);
    assert_eq!(d["status"]["sent_status"], json!(["not_sent", "not sent"]));
    let resp = app.post(
        &format!("/api/v2/rx/resend/{signature}/"),
        p.medic.token(),
        &json!({"email": "x@example.mx"}),
    );
    assert_eq!(resp.status, 403, "{}", resp.text());

    // Another practice that does send: its email is the only one the relay ever sees.
    let loud = Practice::new(&app, "email-loud@example.mx", "Clínica Ruidosa");
    let rx = loud.prescribe(&app);
    let events = relay.wait_for_events(1, WAIT);
    sent_when_done(&app, &loud, rx["signature"].as_str().unwrap());
    let events_after = relay.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events_after.len(), 1);
    assert_eq!(events_after[0].json()["to"], json!([loud.patient_email()]));
    assert_eq!(detail(&app, &p, signature)["sent"], Value::Null);
}

#[test]
fn a_relay_that_never_answers_does_not_delay_the_api() {
    let relay = Listener::start(|_, _| Reply::Hang);
    let mut config = relay_config(&relay.url("/send"));
    config
        .env
        .push(("SPIN_VARIABLE_DELIVERY_TIMEOUT_MS".into(), "1500".into()));
    let app = spawn_app_with(config);
    let p = Practice::new(&app, "email-slow@example.mx", "Clínica Lenta");
    for _ in 0..3 {
        let started = Instant::now();
        let rx = p.prescribe(&app);
        let took = started.elapsed();
        assert!(took < Duration::from_millis(1500), "create took {took:?}");
        let started = Instant::now();
        detail(&app, &p, rx["signature"].as_str().unwrap());
        assert!(started.elapsed() < Duration::from_millis(1500));
    }
    relay.wait_for_events(3, WAIT);
    // Each hung attempt ends at the delivery timeout and is recorded as such.
    let error: String = eventually_in(&app, "a timed-out attempt", WAIT, || {
        db(&app)
            .query_row(
                "SELECT error FROM outbox_attempts WHERE error IS NOT NULL LIMIT 1",
                [],
                |r| r.get(0),
            )
            .ok()
    });
    assert!(error.contains("timed out"), "{error}");
}

#[test]
fn emails_wait_pending_while_no_relay_is_configured() {
    let app = spawn_app_with(AppConfig::default());
    let p = Practice::new(&app, "email-norelay@example.mx", "Clínica Sin Relevo");
    let rx = p.prescribe(&app);
    // Leased by nobody, attempted by nobody: it stays as issued until a relay is configured.
    let state_dir = app.crash();
    let relay = Listener::ok();
    let app = start(relay_config(&relay.url("/send")), state_dir);
    let mail = relay.wait_for_events(1, WAIT).remove(0).json();
    assert_eq!(mail["to"], json!([p.patient_email()]));
    sent_when_done(&app, &p, rx["signature"].as_str().unwrap());
}

/// Delivery latency, create request sent → relay received, over 20 prescriptions (median printed).
#[test]
fn email_delivery_latency() {
    let relay = Listener::ok();
    let app = spawn_app_with(relay_config(&relay.url("/send")));
    let p = Practice::new(&app, "email-latency@example.mx", "Clínica Latencia");
    p.prescribe(&app);
    relay.wait_for_events(1, WAIT);
    let mut latencies = Vec::new();
    let mut after_response = Vec::new();
    for n in 2..=21 {
        let started = Instant::now();
        p.prescribe(&app);
        let answered = Instant::now();
        let received = relay.wait_for_events(n, WAIT)[n - 1].at;
        latencies.push(received.duration_since(started));
        after_response.push(received.saturating_duration_since(answered));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        (v[9] + v[10]) / 2
    };
    let total = median(&mut latencies);
    let tail = median(&mut after_response);
    eprintln!(
        "email delivery latency (create sent → relay received), {} prescriptions: median {:.1} ms \
         (min {:.1}, max {:.1}); of which after the create's response: median {:.1} ms",
        latencies.len(),
        ms(total),
        ms(latencies[0]),
        ms(latencies[latencies.len() - 1]),
        ms(tail),
    );
    assert!(total < Duration::from_secs(2), "median {total:?}");
}

/// Prescriptions created while the relay and the webhook receiver are down; the host is killed
/// (SIGKILL) and started again on the same state; then both come up. Every email and every webhook
/// arrives, each exactly once, and nothing is sent again afterwards.
#[test]
fn nothing_is_lost_across_a_crash_and_nothing_is_sent_twice() {
    let relay_port = free_port();
    let hook_port = free_port();
    let config = || relay_config(&format!("http://127.0.0.1:{relay_port}/send"));
    let app = spawn_app_with(config());
    let p = Practice::new(&app, "email-crash@example.mx", "Clínica Apagón");
    {
        // The receiver answers the registration's test POST, then goes down.
        let receiver = Listener::on_port(hook_port, |_, _| Reply::Status(200));
        let resp = app.post(
            "/api/v2/webhooks/",
            Some(ADMIN_TOKEN),
            &json!({"url": receiver.url("/hooks/rx"), "hospitals": [p.hospital]}),
        );
        assert_eq!(resp.status, 201, "{}", resp.text());
    }
    let signatures: Vec<String> = (0..5)
        .map(|_| p.prescribe(&app)["signature"].as_str().unwrap().to_string())
        .collect();
    // Each delivery has failed at least once while everything was down.
    eventually("every row to have failed once", WAIT, || {
        let failed: i64 = db(&app)
            .query_row(
                "SELECT COUNT(DISTINCT outbox_id) FROM outbox_attempts WHERE error IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (failed == 10).then_some(())
    });
    let state_dir = app.crash();

    let relay = Listener::on_port(relay_port, |_, _| Reply::Status(200));
    let hooks = Listener::on_port(hook_port, |_, _| Reply::Status(204));
    let app = start(config(), state_dir);
    let mails = relay.wait_for_events(5, Duration::from_secs(90));
    let events = hooks.wait_for_events(5, Duration::from_secs(90));
    let done = || -> i64 {
        db(&app)
            .query_row(
                "SELECT COUNT(*) FROM outbox WHERE status = 'done'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    eventually("every row done", WAIT, || (done() == 10).then_some(()));
    for s in &signatures {
        sent_when_done(&app, &p, s);
    }
    // Two more runs of the worker after everything was acknowledged: nothing goes out again. This
    // host logs each cron run (each jobs door call, in a cron-less pass); real Spin logs none, so
    // there two periods of the schedule pass.
    if crate::helpers::spin().is_some() {
        std::thread::sleep(Duration::from_secs(11));
    } else {
        let run = if crate::helpers::cronless() {
            "POST /api/v2/jobs/run/ 200"
        } else {
            "cron outbox-worker ok"
        };
        let runs = |app: &TestApp| app.log().matches(run).count();
        let before = runs(&app);
        eventually("two more cron runs", WAIT, || {
            (runs(&app) >= before + 2).then_some(())
        });
    }
    let mails_after = relay.events();
    let events_after = hooks.events();
    assert_eq!(mails_after.len(), mails.len());
    assert_eq!(events_after.len(), events.len());
    let mut mailed: Vec<String> = mails_after
        .iter()
        .map(|m| {
            let text = m.json()["text"].as_str().unwrap().to_string();
            signatures
                .iter()
                .find(|s| text.contains(s.as_str()))
                .expect("an email of one of the prescriptions")
                .clone()
        })
        .collect();
    let mut hooked: Vec<String> = events_after
        .iter()
        .map(|e| e.json()["signature"].as_str().unwrap().to_string())
        .collect();
    let mut expected = signatures.clone();
    expected.sort();
    mailed.sort();
    hooked.sort();
    assert_eq!(mailed, expected, "every email exactly once");
    assert_eq!(hooked, expected, "every webhook exactly once");
}
