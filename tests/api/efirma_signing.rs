//! The prescriber signs (issue 61, second part): a create with `"efirma": true` is a draft that
//! nothing sends and no pharmacy can dispense; the medic signs `to_sign` with `openssl cms -sign`
//! (a third-party signer) and `POST …/efirma/` issues it: the email and the webhook go out, the
//! pharmacy can look it up, `openssl cms -verify` and `receta-verify` accept the stored CMS. Bad
//! signatures change nothing; drafts expire. Authorities laid out as SAT's (`fiel.rs`).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fixtures::{
    Fiel, Holder, efirma_activate, efirma_create, efirma_draft, enrol, openssl_verifies,
};
use crate::fixtures::{Listener, Practice, burn, eventually, lookup, register};
use crate::helpers::{
    ADMIN_TOKEN, AppConfig, TestApp, TestResponse, field_errors, on_libsql, spawn_app_with,
};

const WAIT: Duration = Duration::from_secs(30);
const RFC: &str = "HEGT7610034S2";
const CURP: &str = "SABC560626MDFLRN01";
const OTHER_RFC: &str = "GODE561231GR8";
const SIGNS: &str = "digitalSignature, nonRepudiation";
const AWAITING: &str = "awaiting the prescriber's e.firma";

fn config(fiel: &Fiel, relay: &str, extra: &[(&str, &str)]) -> AppConfig {
    let ca = fiel.ca_pem();
    let mut vars = vec![
        ("efirma_ca", ca.as_str()),
        ("email_relay_url", relay),
        ("email_relay_token", "relay-token-0123456789"),
        ("outbox_retry_scale", "0.001"),
    ];
    vars.extend_from_slice(extra);
    AppConfig::with_variables(&vars)
}

/// A valid FIEL for `rfc` (and the shared CURP), issued by `fiel`.
fn valid(fiel: &Fiel, file: &str, rfc: &str) -> Holder {
    fiel.issue(file, rfc, CURP, "20250101000000Z", "20300101000000Z", SIGNS)
}

/// A practice whose medic has an RFC and CURP and `holder` registered as its e.firma.
fn registered(app: &TestApp, email: &str, rfc: &str, holder: &Holder) -> Practice {
    let p = Practice::new(app, email, &format!("Clínica {email}"));
    enrol(app, &p, rfc, CURP, holder);
    p
}

fn detail(app: &TestApp, p: &Practice, sig: &str) -> Value {
    let resp = app.get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()
}

fn conflict_says(resp: &TestResponse, needle: &str) {
    assert_eq!(resp.status, 409, "{}", resp.text());
    let message = resp.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains(needle), "{message}");
}

#[test]
fn a_draft_waits_for_the_medics_efirma_and_its_activation_issues_it() {
    let fiel = Fiel::new("AC de pruebas Receta");
    let relay = Listener::ok();
    let hooks = Listener::ok();
    let app = spawn_app_with(config(&fiel, &relay.url("/send"), &[]));
    let holder = valid(&fiel, "medic", RFC);
    let p = registered(&app, "firma@example.mx", RFC, &holder);
    let resp = app.post(
        "/api/v2/webhooks/",
        Some(ADMIN_TOKEN),
        &json!({"url": hooks.url("/hook"), "hospitals": [p.hospital]}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());

    // The draft: the create shape plus what to sign.
    let resp = efirma_create(&app, &p, Some(true));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let body = resp.json();
    let sig = body["signature"].as_str().unwrap().to_string();
    let efirma = &body["efirma"];
    assert_eq!(efirma["status"], "awaiting_signature");
    assert_eq!(efirma["digest"], sig.as_str());
    let to_sign = BASE64.decode(efirma["to_sign"].as_str().unwrap()).unwrap();
    let digest: String = Sha256::digest(&to_sign)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, sig, "to_sign is the document the signature hashes");
    let document = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/document/"),
        p.medic.token(),
    );
    assert_eq!(document.body, to_sign);

    // Nothing goes out, and nobody can use it.
    let run = app.post("/api/v2/deliveries/run/", Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(run.status, 200, "{}", run.text());
    assert_eq!(relay.requests().len(), 0, "no email for a draft");
    assert_eq!(hooks.events().len(), 0, "no webhook for a draft");
    let shown = detail(&app, &p, &sig);
    assert_eq!(
        shown["efirma"],
        json!({"status": "awaiting_signature", "rfc": RFC, "serial": "30001000000500000001", "signed_at": null})
    );
    assert_eq!(shown["seal"], Value::Null, "sealed at activation");
    let pharmacy = register(&app, "Farmacia Firma");
    conflict_says(&lookup(&app, &pharmacy, &sig), AWAITING);
    let med = shown["medications"][0]["id"].as_i64().unwrap();
    conflict_says(&burn(&app, &pharmacy, &sig, &[(med, 1)]), AWAITING);
    let claim = app.post(
        &format!("/api/v2/pharmacy/rx/{sig}/claim/"),
        pharmacy.token(),
        &json!({}),
    );
    conflict_says(&claim, AWAITING);
    let resend = app.post(
        &format!("/api/v2/rx/resend/{sig}/"),
        p.medic.token(),
        &json!({}),
    );
    conflict_says(&resend, AWAITING);
    let page = app.get(&format!("/rx/{sig}"), None);
    assert!(page.text().contains(AWAITING), "{}", page.text());
    assert_eq!(app.get(&format!("/rx/{sig}/pdf"), None).status, 409);
    // The public sees a prescription awaiting its signature, not an available one, and no
    // medication until it is issued.
    assert!(!page.text().contains("Disponible"), "{}", page.text());
    assert!(!page.text().contains("Amoxicilina"), "{}", page.text());
    let verified = app.get(&format!("/api/v2/verify/{sig}"), None).json();
    assert_eq!(verified["valid"], false);
    assert_eq!(
        verified["rx_status"],
        json!(["awaiting_signature", "Pendiente de la e.firma del médico"])
    );
    let landing = app.get(
        &format!("/api/v2/rx/patient-landing/{sig}/"),
        p.medic.token(),
    );
    assert_eq!(landing.status, 200, "{}", landing.text());
    assert_eq!(landing.json()["rx"]["rx_status"][0], "awaiting_signature");
    assert_eq!(landing.json()["rx"]["medications"], json!([]));

    // Signed by a third party's tool: issued.
    let cms = holder.sign(&to_sign);
    let resp = efirma_activate(&app, p.medic.token(), &sig, &cms);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let rx = resp.json();
    assert_eq!(rx["efirma"]["status"], "signed");
    assert_eq!(rx["efirma"]["rfc"], RFC);
    assert_eq!(rx["efirma"]["serial"], "30001000000500000001");
    assert!(rx["efirma"]["signed_at"].as_str().unwrap().ends_with('Z'));
    assert!(rx["seal"]["sig"].is_string(), "sealed now");
    conflict_says(
        &efirma_activate(&app, p.medic.token(), &sig, &cms),
        "already signed",
    );

    // What the service stores is what was sent, and OpenSSL and receta-verify accept it.
    let p7s = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/efirma.p7s"),
        p.medic.token(),
    );
    assert_eq!(p7s.status, 200);
    assert_eq!(
        p7s.header("content-type"),
        Some("application/pkcs7-signature")
    );
    assert_eq!(p7s.body, cms);
    openssl_verifies(&p7s.body, &to_sign, &fiel.ca_path()).unwrap();
    let (ok, said) = receta_verify(&to_sign, &p7s.body, &fiel.ca_path());
    assert!(ok && said.contains(RFC), "{said}");
    let (ok, said) = receta_verify(b"{\"other\":1}", &p7s.body, &fiel.ca_path());
    assert!(!ok && said.starts_with("INVALID"), "{said}");
    // Stored once, never changed or removed behind the service's back (a local file only: a
    // libSQL server's file is read, never written).
    if !on_libsql() {
        let conn = rusqlite::Connection::open(app.database_file()).unwrap();
        conn.busy_timeout(Duration::from_secs(5)).unwrap();
        for tamper in [
            "UPDATE prescription_documents SET efirma_rfc = 'XAXX010101000'",
            "UPDATE prescription_documents SET canonical = canonical || ' '",
            "DELETE FROM prescription_documents",
        ] {
            let refused = conn
                .execute(&format!("{tamper} WHERE efirma_cms IS NOT NULL"), [])
                .unwrap_err();
            assert!(
                refused.to_string().contains("immutable"),
                "{tamper}: {refused}"
            );
        }
    }

    // Issued as any prescription: the email, the webhook, the pharmacy, the public check.
    eventually("the patient's email", WAIT, || {
        (!relay.requests().is_empty()).then_some(())
    });
    hooks.wait_for_events(1, WAIT);
    assert_eq!(lookup(&app, &pharmacy, &sig).status, 200);
    let verified = app.get(&format!("/api/v2/verify/{sig}"), None).json();
    assert_eq!(verified["valid"], true);
    assert_eq!(verified["efirma"]["status"], "signed");
    assert_eq!(verified["efirma"]["rfc"], RFC);
    let landing = app.get(
        &format!("/api/v2/rx/patient-landing/{sig}/"),
        p.medic.token(),
    );
    assert_eq!(landing.status, 200, "{}", landing.text());
    assert_eq!(landing.json()["rx"]["efirma"]["status"], "signed");
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(page.contains("Firmada con e.firma"), "{page}");
    assert!(page.contains("Amoxicilina"), "{page}");
    assert_eq!(verified["rx_status"], json!(["available", "Disponible"]));
}

#[test]
fn a_signature_by_another_certificate_than_the_pinned_one_is_400_on_cms() {
    let fiel = Fiel::new("AC de pruebas Receta");
    let relay = Listener::ok();
    let app = spawn_app_with(config(&fiel, &relay.url("/send"), &[]));
    let first = valid(&fiel, "first", RFC);
    let p = registered(&app, "renovada@example.mx", RFC, &first);
    let (sig, to_sign) = efirma_draft(&app, &p);
    // The medic renews the e.firma after the draft was made: the draft stays pinned to the first.
    let renewed = valid(&fiel, "renewed", RFC);
    let resp = app.request(
        "PUT",
        &format!("/api/v2/medics/{}/efirma/", p.medic.id),
        p.medic.token(),
        Some(&json!({"certificate": renewed.pem()})),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let resp = efirma_activate(&app, p.medic.token(), &sig, &renewed.sign(&to_sign));
    assert_eq!(resp.status, 400, "{}", resp.text());
    let message = field_errors(&resp)["cms"][0].as_str().unwrap().to_string();
    assert!(
        message.contains("The draft was made for e.firma certificate"),
        "{message}"
    );
    assert_eq!(
        detail(&app, &p, &sig)["efirma"]["status"],
        "awaiting_signature",
        "nothing changed"
    );
}

#[test]
fn a_certificate_uploaded_with_its_intermediate_chains_to_a_root_only_efirma_ca() {
    // SAT's layout: a root, an intermediate authority under it, the medic's FIEL under that.
    let root = Fiel::new("AC raíz de pruebas");
    let intermediate = root.intermediate("AC intermedia de pruebas");
    let relay = Listener::ok();
    // The service trusts the root only.
    let app = spawn_app_with(config(&root, &relay.url("/send"), &[]));
    let holder = valid(&intermediate, "medic", RFC);
    let p = Practice::new(&app, "cadena@example.mx", "Clínica Cadena");
    let path = format!("/api/v2/medics/{}/", p.medic.id);
    let resp = app.patch(&path, p.medic.token(), &json!({"rfc": RFC, "curp": CURP}));
    assert_eq!(resp.status, 202, "{}", resp.text());
    let put = |pem: String| {
        app.request(
            "PUT",
            &format!("{path}efirma/"),
            p.medic.token(),
            Some(&json!({"certificate": pem})),
        )
    };
    // Alone, the leaf does not reach the root.
    let alone = put(holder.pem());
    assert_eq!(alone.status, 400, "{}", alone.text());
    assert!(
        field_errors(&alone)["certificate"][0]
            .as_str()
            .unwrap()
            .contains("does not chain")
    );
    // With its intermediate after it: registered, as the leaf.
    let resp = put(format!("{}{}", holder.pem(), intermediate.ca_pem()));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["efirma"]["rfc"], RFC);
    assert_eq!(resp.json()["efirma"]["issuer"], "AC intermedia de pruebas");
    // A bundle whose first certificate is another person's is refused as before.
    let stranger = valid(&intermediate, "stranger", OTHER_RFC);
    let foreign = put(format!("{}{}", stranger.pem(), intermediate.ca_pem()));
    assert_eq!(foreign.status, 400, "{}", foreign.text());
    assert!(
        field_errors(&foreign)["certificate"][0]
            .as_str()
            .unwrap()
            .contains("not the medic's")
    );
    // The intermediate first is not the medic's certificate either.
    let reversed = put(format!("{}{}", intermediate.ca_pem(), holder.pem()));
    assert_eq!(reversed.status, 400, "{}", reversed.text());
    let registered = app.get(&format!("{path}efirma/"), p.medic.token()).json();
    assert_eq!(
        registered["efirma"]["rfc"], RFC,
        "still the medic's: {registered}"
    );

    // A CMS that carries only the medic's certificate (openssl's default) is accepted: the stored
    // intermediate leads it to the root. OpenSSL agrees, given the intermediate.
    let (sig, to_sign) = efirma_draft(&app, &p);
    let cms = holder.sign(&to_sign);
    let resp = efirma_activate(&app, p.medic.token(), &sig, &cms);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["efirma"]["status"], "signed");
    let both = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        both.path(),
        format!("{}{}", root.ca_pem(), intermediate.ca_pem()),
    )
    .unwrap();
    openssl_verifies(&cms, &to_sign, both.path()).unwrap();
}

#[test]
fn a_bad_or_foreign_signature_is_refused_and_changes_nothing() {
    let fiel = Fiel::new("AC de pruebas Receta");
    let relay = Listener::ok();
    let app = spawn_app_with(config(&fiel, &relay.url("/send"), &[]));
    let holder = valid(&fiel, "medic", RFC);
    let p = registered(&app, "rechazos@example.mx", RFC, &holder);
    let other = valid(&fiel, "other", OTHER_RFC);
    let _q = registered(&app, "otro@example.mx", OTHER_RFC, &other);
    let expired = fiel.issue(
        "expired",
        RFC,
        CURP,
        "20200101000000Z",
        "20210101000000Z",
        SIGNS,
    );
    let stranger = Fiel::new("AC ajena");
    let foreign = valid(&stranger, "foreign", RFC);
    let (sig, to_sign) = efirma_draft(&app, &p);

    let refused = |cms: &[u8], says: &str| {
        let resp = efirma_activate(&app, p.medic.token(), &sig, cms);
        assert_eq!(resp.status, 400, "{says}: {}", resp.text());
        let message = field_errors(&resp)["cms"][0].as_str().unwrap().to_string();
        assert!(message.contains(says), "{says}: {message}");
    };
    refused(&holder.sign(b"other bytes"), "does not verify");
    refused(&other.sign(&to_sign), "not the medic's registered e.firma");
    refused(&expired.sign(&to_sign), "not valid at that time");
    refused(&foreign.sign(&to_sign), "not acceptable");
    refused(b"not a CMS", "not a DER CMS");
    let resp = app.post(
        &format!("/api/v2/rx-endpoint/{sig}/efirma/"),
        p.medic.token(),
        &json!({"cms": "%%% not base64"}),
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
    let resp = app.post(
        &format!("/api/v2/rx-endpoint/{sig}/efirma/"),
        p.medic.token(),
        &json!({}),
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert!(field_errors(&resp)["cms"].is_array());

    // Another medic does not see it; a prescription without e.firma has nothing to sign.
    assert_eq!(
        efirma_activate(&app, _q.medic.token(), &sig, &other.sign(&to_sign)).status,
        404
    );
    let plain = efirma_create(&app, &p, None);
    assert_eq!(plain.status, 200, "{}", plain.text());
    assert!(
        plain.json().get("efirma").is_none(),
        "the create shape is unchanged"
    );
    let plain_sig = plain.json()["signature"].as_str().unwrap().to_string();
    conflict_says(
        &efirma_activate(&app, p.medic.token(), &plain_sig, &holder.sign(b"x")),
        "without the prescriber's e.firma",
    );
    assert_eq!(detail(&app, &p, &plain_sig)["efirma"], Value::Null);

    // Nothing changed: still a draft, no email, no stored signature.
    assert_eq!(
        detail(&app, &p, &sig)["efirma"]["status"],
        "awaiting_signature"
    );
    let run = app.post("/api/v2/deliveries/run/", Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(run.status, 200);
    let emails_for_draft = relay
        .requests()
        .iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains(&sig))
        .count();
    assert_eq!(emails_for_draft, 0);
    assert_eq!(
        app.get(
            &format!("/api/v2/rx-endpoint/{sig}/efirma.p7s"),
            p.medic.token()
        )
        .status,
        404
    );

    // A medic without a registered e.firma cannot ask for one.
    let bare = Practice::new(&app, "sin-firma@example.mx", "Clínica Sin Firma");
    let resp = efirma_create(&app, &bare, Some(true));
    assert_eq!(resp.status, 400, "{}", resp.text());
    let message = field_errors(&resp)["efirma"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("no e.firma registered"), "{message}");
}

#[test]
fn a_draft_not_signed_in_time_expires() {
    let fiel = Fiel::new("AC de pruebas Receta");
    let relay = Listener::ok();
    // 0.0005 h: 1.8 s.
    let app = spawn_app_with(config(
        &fiel,
        &relay.url("/send"),
        &[("efirma_draft_hours", "0.0005")],
    ));
    let holder = valid(&fiel, "medic", RFC);
    let p = registered(&app, "expira@example.mx", RFC, &holder);
    let (sig, to_sign) = efirma_draft(&app, &p);
    eventually("the draft to expire", WAIT, || {
        (detail(&app, &p, &sig)["efirma"]["status"] == "expired").then_some(())
    });
    conflict_says(
        &efirma_activate(&app, p.medic.token(), &sig, &holder.sign(&to_sign)),
        "expired",
    );
    let pharmacy = register(&app, "Farmacia Tarde");
    conflict_says(&lookup(&app, &pharmacy, &sig), "expired");
    assert!(
        app.get(&format!("/rx/{sig}"), None)
            .text()
            .contains("expired")
    );
    assert_eq!(relay.requests().len(), 0, "never sent");
}

/// `receta-verify efirma` over a saved document and signature: whether it passed, what it printed.
fn receta_verify(document: &[u8], p7s: &[u8], ca: &std::path::Path) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let (doc, sig) = (dir.path().join("document.json"), dir.path().join("rx.p7s"));
    std::fs::write(&doc, document).unwrap();
    std::fs::write(&sig, p7s).unwrap();
    let out = std::process::Command::new(crate::helpers::verify_binary())
        .arg("efirma")
        .arg(&doc)
        .arg("--p7s")
        .arg(&sig)
        .arg("--ca")
        .arg(ca)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}
