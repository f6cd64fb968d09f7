//! Dispense receipts (issue 32, docs/verification.md "Dispense receipts"): every burn answers the seal
//! of a receipt; the selling pharmacy (or the admin) fetches the exact canonical document; anyone
//! checks it online without a token, or offline with `receta-verify`. Seals are checked with
//! `ed25519-compact` (not the service's `ed25519-dalek`) from the published JWK set and the exact
//! bytes of the document.

use std::process::Command;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fixtures::{
    Practice, TestPharmacy, burn, burn_with, claimed, keys, med_ids, prescribe, register,
    signature, verifies_message,
};
use crate::helpers::{ADMIN_TOKEN, TestApp, assert_message, spawn_app};

fn receipt_path(digest: &str) -> String {
    format!("/api/v2/pharmacy/receipts/{digest}/")
}

/// The receipt of a burn that must succeed.
fn receipt_of(resp: &crate::helpers::TestResponse) -> Value {
    assert_eq!(resp.status, 200, "{}", resp.text());
    resp.json()["receipt"].clone()
}

fn hex_sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Fetches the receipt as `ph` and checks it from scratch: digest, seal, canonical form.
fn fetched(app: &TestApp, ph: &TestPharmacy, seal: &Value) -> (Value, Value) {
    let digest = seal["digest"].as_str().unwrap();
    let resp = app.get(&receipt_path(digest), Some(&ph.token));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let body = resp.json();
    assert_eq!(body["receipt"], *seal, "the same seal as the burn's");
    let document = body["document"].as_str().unwrap();
    assert_eq!(hex_sha256(document), digest, "the digest is the document's");
    let message = format!("receta:dispense:v1:{digest}");
    assert!(verifies_message(
        &keys(app),
        &message,
        seal["kid"].as_str().unwrap(),
        seal["sig"].as_str().unwrap()
    ));
    let parsed: Value = serde_json::from_str(document).unwrap();
    // JCS: sorted keys, no whitespace; serde_json's map is sorted, so re-serializing is the same.
    assert_eq!(serde_json::to_string(&parsed).unwrap(), document);
    (body, parsed)
}

#[test]
fn every_sale_gets_a_receipt_sealed_by_the_service() {
    let app = spawn_app();
    let p = Practice::new(&app, "recibo@example.mx", "Clínica Recibo");
    let (a, b) = (
        register(&app, "Farmacia Recibo"),
        register(&app, "Farmacia Otra"),
    );
    let rx = prescribe(&app, &p);
    let sig = signature(&rx);
    let (first, second) = med_ids(&rx);

    // A claimed sale: the receipt states when the claim started.
    let grant = claimed(&app, &a, &sig);
    let seal = receipt_of(&burn_with(&app, &a, &rx, grant["secret"].as_str()));
    assert_eq!(seal["alg"], "EdDSA");
    assert_eq!(seal["digest"].as_str().unwrap().len(), 64);
    assert_eq!(seal["kid"], keys(&app)["keys"][0]["kid"], "the active key");
    let (_, doc) = fetched(&app, &a, &seal);
    assert_eq!(doc["type"], "receta.dispense-receipt");
    assert_eq!(doc["signature"], sig.as_str());
    assert_eq!(doc["pharmacy"]["id"], a.id);
    assert_eq!(doc["pharmacy"]["name"], "Farmacia Recibo");
    assert_eq!(doc["pharmacy"]["license"], "LS-0001");
    assert_eq!(doc["sales_code"], "CLAIM-1");
    let item = &doc["items"][0];
    assert_eq!(item["medication_id"], first);
    assert_eq!(item["qty"], 1);
    assert_eq!(item["presentation"], rx["medications"][0]["presentation"]);
    assert_eq!(item["drug_upc"], rx["medications"][0]["drug_upc"]);
    assert!(doc["claimed_at"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(doc["sold_at"].as_str().unwrap() >= doc["claimed_at"].as_str().unwrap());

    // A sale without a claim: `claimed_at` null, another digest.
    let plain = receipt_of(&burn(&app, &b, &sig, &[(second, 1)]));
    assert_ne!(plain["digest"], seal["digest"]);
    let (_, doc) = fetched(&app, &b, &plain);
    assert_eq!(doc["claimed_at"], Value::Null);
    assert_eq!(doc["items"][0]["medication_id"], second);

    // Who may read it: the pharmacy that sold and the admin; not another pharmacy, not a medic.
    let digest = seal["digest"].as_str().unwrap();
    assert_eq!(
        app.get(&receipt_path(digest), Some(ADMIN_TOKEN)).status,
        200
    );
    assert_eq!(app.get(&receipt_path(digest), Some(&b.token)).status, 404);
    assert_message(&app.get(&receipt_path(digest), p.medic.token()), 403);
    assert_eq!(app.get(&receipt_path(digest), None).status, 401);
    assert_eq!(
        app.get(&receipt_path(&"0".repeat(64)), Some(&a.token))
            .status,
        404
    );
    assert_eq!(app.get(&receipt_path("nothex"), Some(&a.token)).status, 404);

    // The public check: no token, nothing personal, not the prescription's signature.
    let resp = app.get(&format!("/api/v2/verify/receipt/{digest}"), None);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let check = resp.json();
    assert_eq!(check["valid"], true);
    assert_eq!(check["kid"], seal["kid"]);
    assert_eq!(
        check["pharmacy"],
        json!({"name": "Farmacia Recibo", "license": "LS-0001"})
    );
    assert!(check["sold_at"].is_string());
    assert!(
        !resp.text().contains(&sig),
        "the signature is the patient's capability"
    );
    assert!(!resp.text().contains("Pérez"));
    let unknown = app.get(&format!("/api/v2/verify/receipt/{}", "a".repeat(64)), None);
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json(), json!({"valid": false}));
}

/// A sale of Farmacia Honesta: the app, the pharmacy, and the receipt's seal.
fn one_sale(email: &str) -> (TestApp, TestPharmacy, Value) {
    let app = spawn_app();
    let p = Practice::new(&app, email, "Clínica Alterada");
    let a = register(&app, "Farmacia Honesta");
    let rx = prescribe(&app, &p);
    let (first, _) = med_ids(&rx);
    let seal = receipt_of(&burn(&app, &a, &signature(&rx), &[(first, 1)]));
    (app, a, seal)
}

#[test]
fn receta_verify_checks_a_receipt_file_offline() {
    let (app, a, seal) = one_sale("recibo-cli@example.mx");
    let digest = seal["digest"].as_str().unwrap().to_string();

    // Offline: the saved receipt verifies; one changed character in it does not.
    let dir = tempfile::tempdir().unwrap();
    let keys_file = dir.path().join("keys.json");
    std::fs::write(
        &keys_file,
        app.get("/.well-known/receta-keys.json", None).body,
    )
    .unwrap();
    let saved = app.get(&receipt_path(&digest), Some(&a.token)).text();
    let good = dir.path().join("receipt.json");
    std::fs::write(&good, &saved).unwrap();
    let altered = dir.path().join("altered.json");
    std::fs::write(
        &altered,
        saved.replace("Farmacia Honesta", "Farmacia Falsa"),
    )
    .unwrap();
    let reseal = dir.path().join("resealed.json");
    let sig = seal["sig"].as_str().unwrap();
    let flipped = format!(
        "{}{}",
        if sig.starts_with('A') { 'B' } else { 'A' },
        &sig[1..]
    );
    std::fs::write(&reseal, saved.replace(sig, &flipped)).unwrap();
    let verify = |file: &std::path::Path| {
        let out = Command::new(crate::helpers::verify_binary())
            .arg(file)
            .arg("--keys")
            .arg(&keys_file)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (ok, out) = verify(&good);
    assert!(ok && out.starts_with("VALID"), "{out}");
    assert!(out.contains(&digest), "{out}");
    let (ok, out) = verify(&altered);
    assert!(
        !ok && out.starts_with("INVALID") && out.contains("altered"),
        "{out}"
    );
    let (ok, out) = verify(&reseal);
    assert!(!ok && out.starts_with("INVALID"), "{out}");
}

#[test]
fn a_tampered_receipt_is_refused() {
    let (app, _, seal) = one_sale("recibo-alterado@example.mx");
    let digest = seal["digest"].as_str().unwrap().to_string();

    // In the database: receipts are immutable; changed behind the service's back, they are
    // refused (409) and the public check says invalid.
    let conn = rusqlite::Connection::open(app.database_file()).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .unwrap();
    let refused = conn
        .execute("UPDATE receipts SET document = document || ' '", [])
        .unwrap_err();
    assert!(refused.to_string().contains("immutable"), "{refused}");
    assert!(conn.execute("DELETE FROM receipts", []).is_err());
    conn.execute_batch(
        "DROP TRIGGER receipts_never_change; \
         UPDATE receipts SET document = replace(document, 'Honesta', 'Falsa');",
    )
    .unwrap();
    drop(conn);
    assert_message(&app.get(&receipt_path(&digest), Some(ADMIN_TOKEN)), 409);
    let check = app.get(&format!("/api/v2/verify/receipt/{digest}"), None);
    assert_eq!(check.status, 200);
    assert_eq!(check.json()["valid"], false);
}
