//! The patient reached by SMS and WhatsApp (issue 71, docs/notifications.md "SMS and WhatsApp"):
//! every request checked by loopback doubles that refuse what Twilio's Messages API and Meta's
//! WhatsApp Business Cloud API refuse, the providers' signed receipts shown on the medic's list, a
//! wrong signature refused and changing nothing, no WhatsApp without the patient's opt-in, a
//! provider down then back sending once, a message cut off by a crash never sent twice, and the
//! pharmacy's `ready_to_collect` and `not_dispensed` messaged on the patient's channels.

use serde_json::{Value, json};

use crate::fixtures::{
    Listener, Practice, Received, TW_CALLBACK, TW_FROM, TW_TOKEN, WA_SECRET, WA_VERIFY,
    create_patient, field, form, meta_signature, patient_body, providers_config, register,
    twilio_double, twilio_reply, twilio_signature, whatsapp_double,
};
use crate::helpers::{ADMIN_TOKEN, JOBS_TOKEN, TestApp, TestResponse, spawn_app_with};

/// Runs the background jobs once (the tests' apps are cron-less).
fn run_jobs(app: &TestApp) -> Value {
    let done = app.post("/api/v2/jobs/run/", Some(JOBS_TOKEN), &json!({}));
    assert_eq!(done.status, 200, "{}", done.text());
    done.json()
}

/// A patient of the practice's medic with a phone, `channels`, and the WhatsApp opt-in when asked.
fn reachable(app: &TestApp, p: &Practice, channels: Value, opt_in: bool) -> Value {
    let mut body = patient_body("Lucía Ramírez");
    body["email"] = json!("lucia@correo.mx");
    body["phone"] = json!("55 1234 5678");
    body["channels"] = channels;
    body["whatsapp_opt_in"] = json!(opt_in);
    create_patient(app, &p.medic, &body)
}

/// Issues a prescription for `patient` (whose diagnosis and medication no message may carry).
fn prescribe_for(app: &TestApp, p: &Practice, patient: &Value) -> String {
    let body = json!({
        "hospital": p.hospital,
        "patient": {"uid": patient["uid"]},
        "diagnosis": "Diabetes mellitus tipo 2",
        "medications": [{"presentation": "Metformina 850 mg, 30 tabletas", "instructions": "1 cada 12 horas"}],
    });
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["signature"].as_str().unwrap().to_string()
}

/// The medic's list of what went to the patient, by channel.
fn messages(app: &TestApp, p: &Practice, sig: &str) -> Vec<Value> {
    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/messages/"),
        p.medic.token(),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let json = resp.json();
    assert_eq!(json["count"], json["results"].as_array().unwrap().len());
    json["results"].as_array().unwrap().clone()
}

fn on<'a>(list: &'a [Value], channel: &str) -> Vec<&'a Value> {
    list.iter().filter(|m| m["channel"] == channel).collect()
}

/// No message says the diagnosis or a medication.
fn says_nothing_clinical(text: &str) {
    for secret in ["Diabetes", "Metformina", "diabetes", "metformina"] {
        assert!(!text.contains(secret), "{secret} in {text:?}");
    }
}

/// A provider's POST of `body` to `path`, with its signature header when there is one.
fn post_signed(
    app: &TestApp,
    path: &str,
    content_type: &str,
    (header, signature): (&str, Option<&str>),
    body: &[u8],
) -> TestResponse {
    let mut headers = vec![("Content-Type", content_type)];
    if let Some(s) = signature {
        headers.push((header, s));
    }
    app.request_with_headers("POST", path, &headers, Some(body))
}

fn post_receipt(app: &TestApp, body: &[u8], signature: Option<&str>) -> TestResponse {
    post_signed(
        app,
        "/api/v2/channels/whatsapp/webhook/",
        "application/json",
        ("X-Hub-Signature-256", signature),
        body,
    )
}

/// A Meta webhook POST of one status of `wamid`.
fn status_update(wamid: &str, status: &str) -> Vec<u8> {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398", "changes": [
        {"field": "messages", "value": {"messaging_product": "whatsapp",
         "metadata": {"display_phone_number": "15550783881", "phone_number_id": "106540352242922"},
         "statuses": [{"id": wamid, "status": status, "timestamp": "1764630000",
                       "recipient_id": "525512345678"}]}}]}]})
    .to_string()
    .into_bytes()
}

fn post_twilio(app: &TestApp, params: &[(&str, &str)], signature: Option<&str>) -> TestResponse {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(params)
        .finish();
    post_signed(
        app,
        "/api/v2/channels/twilio/status/",
        "application/x-www-form-urlencoded",
        ("X-Twilio-Signature", signature),
        body.as_bytes(),
    )
}

fn json_of(r: &Received) -> Value {
    r.json()
}

#[test]
fn sms_and_whatsapp_go_out_as_the_providers_document_and_their_signed_receipts_show() {
    let wa = whatsapp_double();
    let tw = twilio_double();
    let app = spawn_app_with(providers_config(Some(&wa.url("")), Some(&tw.url(""))));
    let p = Practice::new(&app, "canales@example.mx", "Clínica Canales");
    let patient = reachable(&app, &p, json!(["email", "sms", "whatsapp"]), true);
    let sig = prescribe_for(&app, &p, &patient);
    run_jobs(&app);

    // WhatsApp: one template message, exactly as the Cloud API takes it.
    let sent = wa.requests();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let wa_body = json_of(&sent[0]);
    assert_eq!(
        sent[0].header("authorization"),
        Some("Bearer EAAG-test-token-0123456789")
    );
    assert_eq!(wa_body["messaging_product"], "whatsapp");
    assert_eq!(wa_body["to"], "525512345678");
    assert_eq!(wa_body["type"], "template");
    let template = &wa_body["template"];
    assert_eq!(template["name"], "receta_emitida");
    assert_eq!(template["language"], json!({"code": "es_MX"}));
    let medic = "Dr. José Núñez"; // `helpers::medic_body`'s name, as the document prints it.
    assert_eq!(
        template["components"][0],
        json!({"type": "body", "parameters": [{"type": "text", "text": medic},
                                               {"type": "text", "text": &sig[..12]}]})
    );
    assert_eq!(
        template["components"][1],
        json!({"type": "button", "sub_type": "url", "index": "0",
               "parameters": [{"type": "text", "text": sig}]})
    );
    says_nothing_clinical(&wa_body.to_string());

    // SMS: one form POST to Twilio's Messages API, Basic auth, the callback where Twilio posts back.
    let sent = tw.requests();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let fields = form(&sent[0].body);
    assert_eq!(field(&fields, "To"), Some("+525512345678"));
    assert_eq!(field(&fields, "From"), Some(TW_FROM));
    assert_eq!(field(&fields, "StatusCallback"), Some(TW_CALLBACK));
    let text = field(&fields, "Body").unwrap();
    assert!(
        text.contains(&sig[..12]) && text.contains(&format!("/rx/{sig}")),
        "{text}"
    );
    assert!(text.contains(medic), "{text}");
    says_nothing_clinical(text);

    // The medic's list: the email, the SMS and the WhatsApp message, each taken by its provider.
    let list = messages(&app, &p, &sig);
    assert_eq!(on(&list, "email").len(), 1, "{list:?}");
    let sms = on(&list, "sms")[0].clone();
    let whatsapp = on(&list, "whatsapp")[0].clone();
    assert_eq!(
        (sms["status"].as_str(), whatsapp["status"].as_str()),
        (Some("sent"), Some("sent"))
    );
    assert_eq!(sms["to"], "+525512345678");
    assert_eq!(sms["about"], "issued");
    let wamid = whatsapp["provider_id"].as_str().unwrap().to_string();
    let sms_sid = sms["provider_id"].as_str().unwrap().to_string();
    assert!(
        wamid.starts_with("wamid.") && sms_sid.starts_with("SM"),
        "{list:?}"
    );

    // Meta's subscription check: the verify token opens it, any other is 403.
    let challenge = app.get(
        &format!("/api/v2/channels/whatsapp/webhook/?hub.mode=subscribe&hub.verify_token={WA_VERIFY}&hub.challenge=1158201444"),
        None,
    );
    assert_eq!(challenge.status, 200, "{}", challenge.text());
    assert_eq!(challenge.text(), "1158201444");
    let wrong = app.get(
        "/api/v2/channels/whatsapp/webhook/?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1",
        None,
    );
    assert_eq!(wrong.status, 403, "{}", wrong.text());

    // A receipt unsigned, or signed with another secret, is refused and changes nothing.
    let read = status_update(&wamid, "read");
    assert_eq!(post_receipt(&app, &read, None).status, 403);
    let forged = meta_signature("another-secret", &read);
    assert_eq!(post_receipt(&app, &read, Some(&forged)).status, 403);
    assert_eq!(
        on(&messages(&app, &p, &sig), "whatsapp")[0]["status"],
        "sent"
    );
    // Signed by the app secret: delivered, then read; a late `sent` does not move it back.
    for status in ["delivered", "read", "sent"] {
        let body = status_update(&wamid, status);
        let resp = post_receipt(&app, &body, Some(&meta_signature(WA_SECRET, &body)));
        assert_eq!(resp.status, 200, "{}", resp.text());
    }
    let whatsapp = on(&messages(&app, &p, &sig), "whatsapp")[0].clone();
    assert_eq!(whatsapp["status"], "read", "{whatsapp}");
    assert!(
        whatsapp["receipt_at"]
            .as_str()
            .unwrap()
            .starts_with("2025-12-01"),
        "{whatsapp}"
    );

    // Twilio's callback: refused when not signed by the auth token, recorded when it is.
    let params = [
        ("MessageSid", sms_sid.as_str()),
        ("MessageStatus", "delivered"),
        ("AccountSid", "AC00000000000000000000000000000001"),
        ("To", "+525512345678"),
    ];
    let forged = twilio_signature("another-token", TW_CALLBACK, &params);
    assert_eq!(post_twilio(&app, &params, Some(&forged)).status, 403);
    assert_eq!(post_twilio(&app, &params, None).status, 403);
    assert_eq!(on(&messages(&app, &p, &sig), "sms")[0]["status"], "sent");
    let signed = twilio_signature(TW_TOKEN, TW_CALLBACK, &params);
    let resp = post_twilio(&app, &params, Some(&signed));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        on(&messages(&app, &p, &sig), "sms")[0]["status"],
        "delivered"
    );

    // Another medic sees nothing of it; nothing more went out.
    let other = Practice::new(&app, "otro.canales@example.mx", "Clínica Otra");
    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/messages/"),
        other.medic.token(),
    );
    assert_eq!(resp.status, 404);
    run_jobs(&app);
    assert_eq!((wa.requests().len(), tw.requests().len()), (1, 1));
    // The admin lists them too.
    let all = app.get("/api/v2/messages/?channel=sms", Some(ADMIN_TOKEN));
    assert_eq!(all.status, 200, "{}", all.text());
    assert_eq!(all.json()["count"], 1);
    assert_eq!(all.json()["results"][0]["delivery"], "delivered");
}

#[test]
fn no_whatsapp_without_the_opt_in_and_a_provider_down_then_back_sends_once() {
    // Twilio is down (nothing listens on its port) when the prescription is issued.
    let port = receta_test_host::free_port();
    let wa = whatsapp_double();
    let app = spawn_app_with(providers_config(
        Some(&wa.url("")),
        Some(&format!("http://127.0.0.1:{port}")),
    ));
    let p = Practice::new(&app, "sin.optin@example.mx", "Clínica Sin Opt-in");
    let patient = reachable(&app, &p, json!(["sms", "whatsapp"]), false);
    assert_eq!(patient["whatsapp_opt_in"], Value::Null);
    let sig = prescribe_for(&app, &p, &patient);
    run_jobs(&app);
    assert!(wa.requests().is_empty(), "no opt-in, no WhatsApp");
    let list = messages(&app, &p, &sig);
    assert!(
        on(&list, "whatsapp").is_empty() && on(&list, "email").is_empty(),
        "{list:?}"
    );
    let sms = on(&list, "sms")[0].clone();
    assert_eq!(sms["status"], "pending");
    assert!(sms["last_error"].is_string(), "{sms}");

    // Back: the retry goes out, once, however often the jobs run.
    let tw = Listener::on_port(port, twilio_reply);
    crate::fixtures::eventually(
        "the SMS once Twilio is back",
        std::time::Duration::from_secs(20),
        || {
            run_jobs(&app);
            (tw.requests().len() == 1).then_some(())
        },
    );
    for _ in 0..3 {
        run_jobs(&app);
    }
    assert_eq!(tw.requests().len(), 1);
    let sms = on(&messages(&app, &p, &sig), "sms")[0].clone();
    assert_eq!(sms["status"], "sent", "{sms}");
    assert_eq!(
        sms["attempts"].as_u64().map(|a| a >= 2),
        Some(true),
        "{sms}"
    );

    // The patient's opt-in recorded later: the next prescription also goes by WhatsApp.
    let resp = app.patch(
        &format!("/api/v2/patient/{}/", patient["uid"].as_str().unwrap()),
        p.medic.token(),
        &json!({"whatsapp_opt_in": true}),
    );
    // The spec's PATCH of a patient answers 202 with the patient.
    assert_eq!(resp.status, 202, "{}", resp.text());
    let second = prescribe_for(&app, &p, &patient);
    run_jobs(&app);
    assert_eq!(wa.requests().len(), 1);
    let whatsapp = on(&messages(&app, &p, &second), "whatsapp")[0].clone();
    assert_eq!(whatsapp["status"], "sent", "{whatsapp}");
}

#[test]
fn a_message_cut_off_mid_request_is_never_sent_twice() {
    if crate::helpers::on_libsql() {
        return; // It marks a row in the database file: a local database only.
    }
    let tw = twilio_double();
    let app = spawn_app_with(providers_config(None, Some(&tw.url(""))));
    let p = Practice::new(&app, "corte@example.mx", "Clínica Corte");
    let patient = reachable(&app, &p, json!(["sms"]), false);
    let sig = prescribe_for(&app, &p, &patient);
    // As a worker that died with its request in flight leaves it: marked sending, lease over.
    let conn = rusqlite::Connection::open(app.database_file()).unwrap();
    conn.execute("UPDATE messages SET sending = 1, attempts = 1", [])
        .unwrap();
    run_jobs(&app);
    assert!(tw.requests().is_empty(), "not sent again");
    let sms = on(&messages(&app, &p, &sig), "sms")[0].clone();
    assert_eq!(sms["status"], "failed", "{sms}");
    assert!(
        sms["last_error"]
            .as_str()
            .unwrap()
            .contains("not sent again"),
        "{sms}"
    );
    // The admin's replay sends it anew, once.
    let id = sms["id"].as_i64().unwrap();
    let replayed = app.post(
        &format!("/api/v2/messages/{id}/replay/"),
        Some(ADMIN_TOKEN),
        &json!({}),
    );
    assert_eq!(replayed.status, 200, "{}", replayed.text());
    run_jobs(&app);
    assert_eq!(tw.requests().len(), 1);
}

#[test]
fn ready_to_collect_and_not_dispensed_reach_the_patients_phone_without_the_reason() {
    let tw = twilio_double();
    let wa = whatsapp_double();
    let app = spawn_app_with(providers_config(Some(&wa.url("")), Some(&tw.url(""))));
    let p = Practice::new(&app, "estado.sms@example.mx", "Clínica Estado SMS");
    let patient = reachable(&app, &p, json!(["sms", "whatsapp"]), true);
    let sig = prescribe_for(&app, &p, &patient);
    run_jobs(&app);
    let ph = register(&app, "Farmacia Roma");
    let post = |status: Value| {
        app.post(
            &format!("/api/v2/pharmacy/rx/{sig}/status/"),
            ph.token(),
            &status,
        )
    };
    assert_eq!(post(json!({"status": "preparing"})).status, 201);
    assert_eq!(
        post(json!({"status": "ready_to_collect", "pickup_code": "A7-22"})).status,
        201
    );
    run_jobs(&app);
    let sms = tw.requests();
    assert_eq!(sms.len(), 2, "issued, then ready (not preparing)");
    let ready = form(&sms[1].body);
    let text = field(&ready, "Body").unwrap();
    assert!(text.starts_with("Farmacia Roma: su receta folio"), "{text}");
    assert!(
        text.contains("lista para recoger") && text.contains("A7-22"),
        "{text}"
    );
    says_nothing_clinical(text);
    let wa_sent = wa.requests();
    assert_eq!(wa_sent.len(), 2);
    let template = &json_of(&wa_sent[1])["template"];
    assert_eq!(template["name"], "receta_estado");
    assert_eq!(
        template["components"][0]["parameters"],
        json!([{"type": "text", "text": "Farmacia Roma"}, {"type": "text", "text": "está lista para recoger"},
               {"type": "text", "text": &sig[..12]}, {"type": "text", "text": "A7-22"}])
    );

    // Another pharmacy turns the patient away: the reason (its own words) stays off the phone.
    let other = register(&app, "Farmacia Norte");
    let resp = app.post(
        &format!("/api/v2/pharmacy/rx/{sig}/status/"),
        other.token(),
        &json!({"status": "not_dispensed", "reason": "Sin Metformina en existencia"}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    run_jobs(&app);
    let sms = tw.requests();
    assert_eq!(sms.len(), 3);
    let text = field(&form(&sms[2].body), "Body").unwrap().to_string();
    assert!(
        text.contains("Farmacia Norte") && text.contains("no pudo surtirse"),
        "{text}"
    );
    says_nothing_clinical(&text);
    let list = messages(&app, &p, &sig);
    let abouts: Vec<&str> = on(&list, "sms")
        .iter()
        .map(|m| m["about"].as_str().unwrap())
        .collect();
    assert_eq!(abouts, ["issued", "ready_to_collect", "not_dispensed"]);
}
