//! NOM-151 constancias (issue 60, docs/verification.md "Constancias NOM-151"): every prescription and
//! every sale's receipt is timestamped (RFC 3161) by the configured authority after the answer. The
//! authority is real: `receta_test_tsa`, OpenSSL's `openssl ts -reply` behind HTTP on loopback, with a
//! test CA; the stored replies are checked by `openssl ts -verify`, not by the service's own code.

use std::time::Duration;

use receta_test_tsa::{Mode, Server, TSA_NAME};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fixtures::{Practice, burn, db, eventually, med_ids, prescribe, register, signature};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, spawn_app, spawn_app_with, start};
use receta_test_host::free_port;

const WAIT: Duration = Duration::from_secs(60);
const TSA_TOKEN: &str = "tsa-token-0123456789";

/// The app stamping with the TSA at `url`, its CA configured, the retry schedule a thousandfold
/// shorter (5 ms, 300 ms, 1.8 s, …).
fn stamping(url: &str, ca_pem: &str) -> AppConfig {
    AppConfig::with_variables(&[
        ("timestamp_url", url),
        ("timestamp_token", TSA_TOKEN),
        ("timestamp_ca", ca_pem),
        ("outbox_retry_scale", "0.001"),
        ("delivery_timeout_ms", "5000"),
    ])
}

fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn detail(app: &TestApp, p: &Practice, signature: &str) -> Value {
    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        p.medic.token(),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()
}

/// Waits for the prescription's constancia to be stamped; answers its `constancia` object.
fn stamped(app: &TestApp, p: &Practice, signature: &str) -> Value {
    eventually("the prescription's constancia", WAIT, || {
        let c = detail(app, p, signature)["constancia"].clone();
        (c["status"] == "stamped").then_some(c)
    })
}

fn stored_constancias(app: &TestApp) -> i64 {
    db(app)
        .query_row("SELECT COUNT(*) FROM constancias", [], |r| r.get(0))
        .unwrap()
}

fn last_error(app: &TestApp, digest: &str) -> Option<String> {
    db(app)
        .query_row(
            "SELECT last_error FROM stamp_queue WHERE digest = ?",
            [digest],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn a_prescription_and_a_sale_get_constancias_that_openssl_verifies() {
    let tsa = Server::start();
    let ca = tsa.authority().ca_path();
    let app = spawn_app_with(stamping(&tsa.url("/tsr"), &tsa.authority().ca_pem()));
    let p = Practice::new(&app, "constancia@example.mx", "Clínica Constancia");
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    assert!(
        rx.get("constancia").is_none(),
        "the create's shape is the spec's"
    );

    let c = stamped(&app, &p, &sig);
    assert_eq!(c["tsa"], TSA_NAME);
    assert_eq!(c["digest"], sig.as_str());
    let gen_time = c["gen_time"].as_str().unwrap().to_string();
    assert!(
        gen_time.ends_with('Z') && gen_time.len() == 20,
        "{gen_time}"
    );

    // What the TSA received: RFC 3161 over HTTP, with the operator's token.
    let asked = &tsa.requests()[0];
    assert_eq!(
        asked.header("content-type"),
        Some("application/timestamp-query")
    );
    assert_eq!(
        asked.header("authorization"),
        Some(format!("Bearer {TSA_TOKEN}").as_str())
    );

    // The reply itself: OpenSSL verifies it over the document's SHA-256 (the signature).
    let path = format!("/api/v2/rx-endpoint/{sig}/constancia/");
    let reply = app.get(&path, p.medic.token());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("content-type"),
        Some("application/timestamp-reply")
    );
    let document = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/document/"),
        p.medic.token(),
    );
    assert_eq!(hex_sha256(&document.body), sig);
    receta_test_tsa::verify(&reply.body, &sig, &ca).expect("openssl ts -verify");
    let mut bent = document.body.clone();
    let at = bent.len() / 2;
    bent[at] ^= 0x01;
    assert!(
        receta_test_tsa::verify(&reply.body, &hex_sha256(&bent), &ca).is_err(),
        "one changed byte of the document"
    );
    // receta-verify says the same offline.
    let (ok, out) = receta_verify(&document.body, &reply.body, &ca);
    assert!(ok && out.starts_with("VALID"), "{out}");
    assert!(out.contains(TSA_NAME) && out.contains(&sig), "{out}");
    let (ok, out) = receta_verify(&bent, &reply.body, &ca);
    assert!(!ok && out.contains("another digest"), "{out}");
    let stranger = receta_test_tsa::Authority::new();
    let (ok, out) = receta_verify(&document.body, &reply.body, &stranger.ca_path());
    assert!(!ok && out.contains("does not chain"), "{out}");
    // The admin may read it; another medic may not know it exists.
    assert_eq!(app.get(&path, Some(ADMIN_TOKEN)).body, reply.body);
    let stranger = Practice::new(&app, "constancia-otro@example.mx", "Clínica Ajena");
    assert_eq!(app.get(&path, stranger.medic.token()).status, 404);

    // Everywhere the prescription is shown.
    let verify = app.get(&format!("/api/v2/verify/{sig}"), None).json();
    assert_eq!(verify["constancia"], c);
    let landing = app.get(
        &format!("/api/v2/rx/patient-landing/{sig}/"),
        p.medic.token(),
    );
    assert_eq!(landing.json()["rx"]["constancia"], c);
    let page = app.get(&format!("/rx/{sig}"), None).text();
    assert!(
        page.contains(&format!("Constancia NOM-151: {TSA_NAME}, {gen_time}")),
        "{page}"
    );

    // A sale: its receipt gets its own constancia, for the selling pharmacy.
    let pharmacy = register(&app, "Farmacia Sellada");
    let (first, _) = med_ids(&rx);
    let sold = burn(&app, &pharmacy, &sig, &[(first, 1)]);
    assert_eq!(sold.status, 200, "{}", sold.text());
    let digest = sold.json()["receipt"]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let receipt_path = format!("/api/v2/pharmacy/receipts/{digest}/");
    let receipt = eventually("the receipt's constancia", WAIT, || {
        let r = app.get(&receipt_path, Some(&pharmacy.token)).json();
        (r["constancia"]["status"] == "stamped").then_some(r)
    });
    assert_eq!(receipt["constancia"]["digest"], digest.as_str());
    let path = format!("{receipt_path}constancia/");
    let reply = app.get(&path, Some(&pharmacy.token));
    assert_eq!(reply.status, 200, "{}", reply.text());
    let document = receipt["document"].as_str().unwrap();
    assert_eq!(hex_sha256(document.as_bytes()), digest);
    receta_test_tsa::verify(&reply.body, &digest, &ca).expect("openssl ts -verify");
    let (ok, out) = receta_verify(&serde_json::to_vec(&receipt).unwrap(), &reply.body, &ca);
    assert!(
        ok && out.contains(&digest),
        "the receipt as saved from the API: {out}"
    );
    let altered = document.replace("Farmacia Sellada", "Farmacia Falsa");
    assert!(receta_test_tsa::verify(&reply.body, &hex_sha256(altered.as_bytes()), &ca).is_err());
    assert_eq!(app.get(&path, Some(ADMIN_TOKEN)).status, 200);
    let other = register(&app, "Farmacia Ajena");
    assert_eq!(app.get(&path, Some(&other.token)).status, 404);
    let check = app
        .get(&format!("/api/v2/verify/receipt/{digest}"), None)
        .json();
    assert_eq!(check["constancia"], receipt["constancia"]);
    assert_eq!(stored_constancias(&app), 2);
}

/// `receta-verify constancia <document> --reply <reply> --ca <ca>` on saved files: (valid, what it
/// printed).
fn receta_verify(document: &[u8], reply: &[u8], ca: &std::path::Path) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let (doc, tsr) = (
        dir.path().join("document.json"),
        dir.path().join("reply.tsr"),
    );
    std::fs::write(&doc, document).unwrap();
    std::fs::write(&tsr, reply).unwrap();
    let out = std::process::Command::new(crate::helpers::verify_binary())
        .arg("constancia")
        .arg(&doc)
        .arg("--reply")
        .arg(&tsr)
        .arg("--ca")
        .arg(ca)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[test]
fn without_an_authority_constancias_are_disabled() {
    let app = spawn_app();
    let p = Practice::new(&app, "sin-tsa@example.mx", "Clínica Sin Sello");
    let rx = p.prescribe(&app);
    let sig = rx["signature"].as_str().unwrap();
    let c = detail(&app, &p, sig)["constancia"].clone();
    assert_eq!(
        c,
        json!({"status": "disabled", "gen_time": null, "tsa": null, "digest": sig})
    );
    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/constancia/"),
        p.medic.token(),
    );
    assert_eq!(resp.status, 404);
    let message = resp.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("timestamp authority"), "{message}");
}

#[test]
fn an_authority_that_is_down_leaves_it_pending_until_it_is_back() {
    let tsa = Server::start();
    tsa.set_mode(Mode::Down);
    let app = spawn_app_with(stamping(&tsa.url("/tsr"), &tsa.authority().ca_pem()));
    let p = Practice::new(&app, "tsa-caida@example.mx", "Clínica Paciente");
    let rx = p.prescribe(&app);
    let sig = rx["signature"].as_str().unwrap();
    eventually("two refused attempts", WAIT, || {
        (tsa.requests().len() >= 2).then_some(())
    });
    let c = detail(&app, &p, sig)["constancia"].clone();
    assert_eq!(c["status"], "pending");
    let error = last_error(&app, sig).unwrap_or_default();
    assert!(error.contains("HTTP 503"), "{error}");
    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{sig}/constancia/"),
        p.medic.token(),
    );
    assert_eq!(resp.status, 404);
    assert!(resp.json()["message"].as_str().unwrap().contains("yet"));

    // Back up: the retry schedule (not the test) brings the stamp.
    tsa.set_mode(Mode::Stamp);
    let c = stamped(&app, &p, sig);
    assert_eq!(c["tsa"], TSA_NAME);
}

#[test]
fn a_reply_for_another_digest_or_nonce_is_refused_and_never_stored() {
    let tsa = Server::start();
    tsa.set_mode(Mode::OtherDigest);
    let app = spawn_app_with(stamping(&tsa.url("/tsr"), &tsa.authority().ca_pem()));
    let p = Practice::new(&app, "tsa-falsa@example.mx", "Clínica Desconfiada");
    let rx = p.prescribe(&app);
    let sig = rx["signature"].as_str().unwrap();
    let error = eventually("a refused reply", WAIT, || {
        last_error(&app, sig).filter(|e| e.contains("another digest"))
    });
    assert!(error.contains("not stored"), "{error}");

    tsa.set_mode(Mode::OtherNonce);
    let seen = tsa.requests().len();
    eventually("a reply with another nonce refused", WAIT, || {
        let later = tsa.requests().len() > seen;
        later
            .then(|| last_error(&app, sig))
            .flatten()
            .filter(|e| e.contains("nonce"))
    });
    assert_eq!(stored_constancias(&app), 0);
    assert_eq!(detail(&app, &p, sig)["constancia"]["status"], "pending");

    tsa.set_mode(Mode::Stamp);
    stamped(&app, &p, sig);
    assert_eq!(stored_constancias(&app), 1);
}

#[test]
fn a_reply_from_an_authority_outside_the_configured_ca_is_refused() {
    let tsa = Server::start();
    let stranger = receta_test_tsa::Authority::new();
    let app = spawn_app_with(stamping(&tsa.url("/tsr"), &stranger.ca_pem()));
    let p = Practice::new(&app, "tsa-ajena@example.mx", "Clínica Estricta");
    let sig = p.prescribe(&app)["signature"].as_str().unwrap().to_string();
    let error = eventually("a refused chain", WAIT, || {
        last_error(&app, &sig).filter(|e| e.contains("does not chain"))
    });
    assert!(error.contains("not stored"), "{error}");
    assert_eq!(stored_constancias(&app), 0);
}

/// Prescriptions issued while the authority is unreachable; the host is killed (SIGKILL) and
/// started again on the same state; the authority comes up: every one is stamped, exactly once.
#[test]
fn nothing_is_lost_to_a_crash_between_issue_and_stamping() {
    let port = free_port();
    let authority = receta_test_tsa::Authority::new();
    let ca_pem = authority.ca_pem();
    let url = format!("http://127.0.0.1:{port}/tsr");
    let app = spawn_app_with(stamping(&url, &ca_pem));
    let p = Practice::new(&app, "tsa-apagon@example.mx", "Clínica Apagón Sellado");
    let signatures: Vec<String> = (0..3)
        .map(|_| p.prescribe(&app)["signature"].as_str().unwrap().to_string())
        .collect();
    eventually("every stamp to have failed once", WAIT, || {
        let failed: i64 = db(&app)
            .query_row(
                "SELECT COUNT(*) FROM stamp_queue WHERE last_error IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        (failed == 3).then_some(())
    });
    let state_dir = app.crash();

    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port again");
    let tsa = Server::on(listener, authority);
    let app = start(stamping(&url, &ca_pem), state_dir);
    for sig in &signatures {
        let c = stamped(&app, &p, sig);
        let reply = app.get(
            &format!("/api/v2/rx-endpoint/{sig}/constancia/"),
            p.medic.token(),
        );
        receta_test_tsa::verify(&reply.body, sig, &tsa.authority().ca_path()).unwrap();
        assert_eq!(c["tsa"], TSA_NAME);
    }
    assert_eq!(stored_constancias(&app), 3);
    // Stamped once each: the queue is done and asks nothing more.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(tsa.requests().len(), 3, "one request per document");
}
