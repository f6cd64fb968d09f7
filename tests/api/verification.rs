//! The digital seal (docs/verification.md): the published keys, the seal on every prescription,
//! the QR code that carries it, the public verify call, key rotation, tamper evidence and
//! `receta-verify`. Seals are checked with `ed25519-compact`, an implementation independent of the
//! service's (`ed25519-dalek`), from what a verifier really has: the well-known keys and the text
//! decoded from the QR code of the PDF (`pdftoppm` + `zbarimg`).
//!
//! One file (over 500 lines): the seal's tests share their helpers (the keys, the QR code read from the PDF, the independent tools); split, each file would copy them.

use std::path::Path;
use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fixtures::{Practice, db, keys, verifies_message};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, assert_message, spawn_app, start};

/// A key seed, as the `signing_key` variable takes it (base64 of 32 bytes).
fn seed(byte: u8) -> String {
    STANDARD.encode([byte; 32])
}

/// The public key of `seed(byte)`, base64url (independent implementation).
fn public_of(byte: u8) -> String {
    let kp = ed25519_compact::KeyPair::from_seed(ed25519_compact::Seed::new([byte; 32]));
    URL_SAFE_NO_PAD.encode(*kp.pk)
}

/// Checks `seal` (`kid`, base64url `sig`) of `signature` against the published `keys`.
pub fn verifies(keys: &Value, signature: &str, kid: &str, sig: &str) -> bool {
    verifies_message(keys, &format!("receta:rx:v1:{signature}"), kid, sig)
}

/// The text of the QR code on page 1 of the prescription's stored PDF.
fn qr_text(app: &TestApp, p: &Practice, signature: &str) -> String {
    let resp = app.get(&format!("/api/v2/rx/pdf/{signature}/"), p.medic.token());
    assert_eq!(resp.status, 200);
    let pdf = STANDARD
        .decode(resp.json()["pdf"].as_str().unwrap())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rx.pdf");
    std::fs::write(&file, pdf).unwrap();
    let prefix = dir.path().join("page");
    run(
        "pdftoppm",
        &["-r", "200", "-png", "-singlefile", "-f", "1", "-l", "1"],
        &[&file, &prefix],
    );
    let png = dir.path().join("page.png");
    run("zbarimg", &["--raw", "-q"], &[&png])
        .trim_end()
        .to_string()
}

fn run(tool: &str, args: &[&str], paths: &[&Path]) -> String {
    let out = Command::new(tool)
        .args(args)
        .args(paths)
        .output()
        .unwrap_or_else(|e| panic!("{tool} (installed by `cargo xtask test`): {e}"));
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `(kid, sig)` of a QR text `<base_url>/rx/<signature>#<kid>.<sig>`.
fn seal_of_qr<'a>(qr: &'a str, base: &str, signature: &str) -> (&'a str, &'a str) {
    let fragment = qr
        .strip_prefix(&format!("{base}/rx/{signature}#"))
        .unwrap_or_else(|| panic!("the QR code is not the sealed patient link: {qr}"));
    fragment.split_once('.').unwrap()
}

fn base_url() -> &'static str {
    "http://127.0.0.1:3000"
}

#[test]
fn every_prescription_is_sealed_and_anyone_can_check_the_seal() {
    let app = spawn_app();
    let p = Practice::new(&app, "sello@example.mx", "Clínica Sello");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();

    // One active key, and the log says it was generated for development.
    let keys = keys(&app);
    let published = keys["keys"].as_array().unwrap();
    assert_eq!(published.len(), 1, "{keys}");
    let key = &published[0];
    assert_eq!(key["status"], "active");
    assert_eq!(key.as_object().unwrap().len(), 5, "{key}");
    let x = URL_SAFE_NO_PAD.decode(key["x"].as_str().unwrap()).unwrap();
    assert_eq!(x.len(), 32);
    let kid: String = Sha256::digest(&x)[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        key["kid"],
        kid.as_str(),
        "the kid is derived from the public key"
    );
    assert!(
        app.log().contains("generated a development signing key"),
        "{}",
        app.log()
    );

    // The QR code of the PDF carries the seal; it verifies independently, and is the one the
    // detail, the list, the pharmacy lookup and the landing JSON carry.
    let qr = qr_text(&app, &p, signature);
    let (qr_kid, qr_sig) = seal_of_qr(&qr, base_url(), signature);
    assert_eq!(qr_kid, kid);
    assert!(
        verifies(&keys, signature, qr_kid, qr_sig),
        "the QR's seal verifies"
    );
    let another = format!(
        "{}{}",
        &signature[..63],
        if signature.ends_with('0') { '1' } else { '0' }
    );
    assert!(
        !verifies(&keys, &another, qr_kid, qr_sig),
        "not another prescription's"
    );
    let detail = app
        .get(
            &format!("/api/v2/rx-endpoint/{signature}/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(
        detail["seal"],
        json!({"kid": kid, "alg": "EdDSA", "sig": qr_sig})
    );
    assert_eq!(detail["cta_link"], format!("{}/rx/{signature}", base_url()));
    let list = app.get("/api/v2/rx-endpoint/", p.medic.token()).json();
    assert_eq!(list["results"][0]["seal"], detail["seal"]);
    let landing = app
        .get(
            &format!("/api/v2/rx/patient-landing/{signature}/"),
            p.medic.token(),
        )
        .json();
    assert_eq!(landing["rx"]["seal"], detail["seal"]);
    let pharmacy = app.post(
        "/api/v2/pharmacies/",
        Some(ADMIN_TOKEN),
        &json!({"name": "Farmacia Verificadora"}),
    );
    let token = pharmacy.json()["token"].as_str().unwrap().to_string();
    let lookup = app.get(&format!("/api/v2/pharmacy/rx/{signature}"), Some(&token));
    assert_eq!(lookup.json()["seal"], detail["seal"]);

    // The document: its exact bytes hash to the signature.
    let doc = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/document/"),
        p.medic.token(),
    );
    assert_eq!(doc.status, 200);
    assert_eq!(doc.header("content-type"), Some("application/json"));
    let digest: String = Sha256::digest(&doc.body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(digest, signature);
    assert_eq!(
        app.get(
            &format!("/api/v2/rx-endpoint/{signature}/document/"),
            Some(ADMIN_TOKEN)
        )
        .status,
        200
    );
    let stranger = app.create_medic("sello-otro@example.mx");
    assert_message(
        &app.get(
            &format!("/api/v2/rx-endpoint/{signature}/document/"),
            stranger.token(),
        ),
        404,
    );

    // The public verify call: no token, nothing personal.
    let resp = app.get(&format!("/api/v2/verify/{signature}"), None);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let v = resp.json();
    assert_eq!(v["valid"], true);
    assert_eq!(v["kid"], kid.as_str());
    assert_eq!(v["rx_status"], json!(["available", "Disponible"]));
    assert_eq!(v["medic"]["name"], "Dr. José Núñez");
    assert_eq!(v["medic"]["cedula_prof"], "12345678");
    assert_eq!(v["hospital"]["name"], "Clínica Sello");
    assert!(
        v["issued_at"]
            .as_str()
            .unwrap()
            .starts_with(&detail["created_at"].as_str().unwrap()[..10])
    );
    let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "constancia",
            "efirma",
            "hospital",
            "issued_at",
            "kid",
            "medic",
            "rx_status",
            "valid",
            "valid_until"
        ]
    );
    assert!(!resp.text().contains("Juan"), "no patient data");
    let unknown = app.get(&format!("/api/v2/verify/{}", "0".repeat(64)), None);
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json(), json!({"valid": false}));
    assert_eq!(
        app.get("/api/v2/verify/nonsense/", None).json(),
        json!({"valid": false})
    );
}

#[test]
fn the_verify_call_is_rate_limited_per_client() {
    let app = spawn_app();
    let path = format!("/api/v2/verify/{}", "1".repeat(64));
    // The counters are per calendar minute: 61 calls that straddle one start over in the next (on
    // Spin 4.1 under the whole suite's load the 61 calls once took long enough to). Started late in
    // a minute, the calls wait for the next one.
    let second = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        % 60;
    if second >= 50 {
        std::thread::sleep(std::time::Duration::from_secs(60 - second));
    }
    for i in 0..60 {
        assert_eq!(app.get(&path, None).status, 404, "call {i}");
    }
    let limited = app.get(&path, None);
    assert_message(&limited, 429);
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
}

#[test]
fn rotated_keys_stay_published_and_old_seals_still_verify() {
    // A development key first.
    let app = spawn_app();
    let p = Practice::new(&app, "rotacion@example.mx", "Clínica Rotación");
    let first = p.prescribe(&app)["signature"].as_str().unwrap().to_string();
    let dev = keys(&app)["keys"][0].clone();
    let state = app.crash();

    // An operator configures key 1: the development key is published as retired.
    let with_key = |key: u8, retired: &str| {
        let mut config = AppConfig::with_variables(&[("signing_key", &seed(key))]);
        if !retired.is_empty() {
            config
                .env
                .push(("SPIN_VARIABLE_SIGNING_KEYS_RETIRED".into(), retired.into()));
        }
        config
    };
    let app = start(with_key(1, ""), state);
    let second = p.prescribe(&app)["signature"].as_str().unwrap().to_string();
    let k = keys(&app);
    assert_eq!(k["keys"][0]["status"], "active");
    assert_eq!(k["keys"][0]["x"], public_of(1).as_str());
    assert_eq!(k["keys"][1]["kid"], dev["kid"]);
    assert_eq!(k["keys"][1]["status"], "retired");
    let state = app.crash();

    // Rotation: key 2 active, key 1 listed as retired (base64 or base64url both accepted).
    let app = start(with_key(2, &public_of(1)), state);
    let third = p.prescribe(&app)["signature"].as_str().unwrap().to_string();
    let k = keys(&app);
    let statuses: Vec<(String, String)> = k["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["x"].as_str().unwrap().to_string(),
                k["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(statuses[0], (public_of(2), "active".to_string()));
    assert!(
        statuses.contains(&(public_of(1), "retired".to_string())),
        "{k}"
    );
    assert_eq!(
        statuses.len(),
        3,
        "key 2, key 1 and the development key: {k}"
    );

    // Every seal still verifies, independently and through the verify call.
    for signature in [&first, &second, &third] {
        let detail = app
            .get(
                &format!("/api/v2/rx-endpoint/{signature}/"),
                p.medic.token(),
            )
            .json();
        let seal = &detail["seal"];
        assert!(
            verifies(
                &k,
                signature,
                seal["kid"].as_str().unwrap(),
                seal["sig"].as_str().unwrap()
            ),
            "{signature}: {seal}"
        );
        let v = app.get(&format!("/api/v2/verify/{signature}"), None).json();
        assert_eq!(v["valid"], true, "{signature}: {v}");
    }
    let kid_of = |s: &str| {
        app.get(&format!("/api/v2/rx-endpoint/{s}/"), p.medic.token())
            .json()["seal"]["kid"]
            .clone()
    };
    assert_eq!(kid_of(&first), dev["kid"]);
    assert_eq!(kid_of(&third), k["keys"][0]["kid"]);
    assert_ne!(kid_of(&second), kid_of(&third));
}

#[test]
fn an_altered_prescription_is_not_served_as_genuine() {
    if crate::helpers::on_libsql() {
        return; // It changes a row in the database file: a local database only.
    }
    let app = spawn_app();
    let p = Practice::new(&app, "alterada@example.mx", "Clínica Alterada");
    let rx = p.prescribe(&app);
    let signature = rx["signature"].as_str().unwrap();
    let intact = p.prescribe(&app);
    assert_eq!(
        app.get(&format!("/api/v2/verify/{signature}"), None).json()["valid"],
        true
    );

    // One byte of the stored document changes behind the service's back.
    {
        let conn = rusqlite::Connection::open(app.state_dir.path().join("sqlite_db.db")).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        let changed = conn
            .execute(
                "UPDATE prescription_documents SET canonical = replace(canonical, 'Faringitis', 'Faringitiz') \
                 WHERE prescription_id = (SELECT id FROM prescriptions WHERE signature = ?)",
                [signature],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    let v = app.get(&format!("/api/v2/verify/{signature}"), None);
    assert_eq!(v.status, 200);
    assert_eq!(v.json()["valid"], false);
    for path in [
        format!("/api/v2/rx-endpoint/{signature}/"),
        format!("/api/v2/rx-endpoint/{signature}/document/"),
    ] {
        assert_message(&app.get(&path, p.medic.token()), 409);
    }
    let pharmacy = app.post(
        "/api/v2/pharmacies/",
        Some(ADMIN_TOKEN),
        &json!({"name": "Farmacia Atenta"}),
    );
    let token = pharmacy.json()["token"].as_str().unwrap().to_string();
    assert_message(
        &app.get(&format!("/api/v2/pharmacy/rx/{signature}"), Some(&token)),
        409,
    );
    // The other prescription is untouched.
    let other = intact["signature"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/api/v2/verify/{other}"), None).json()["valid"],
        true
    );
    let stored: String = db(&app)
        .query_row(
            "SELECT canonical FROM prescription_documents d JOIN prescriptions p ON p.id = d.prescription_id WHERE p.signature = ?",
            [signature],
            |r| r.get(0),
        )
        .unwrap();
    assert!(stored.contains("Faringitiz"));
}

#[test]
fn receta_verify_checks_a_qr_text_offline() {
    let app = spawn_app();
    let p = Practice::new(&app, "cli@example.mx", "Clínica CLI");
    let signature = p.prescribe(&app)["signature"].as_str().unwrap().to_string();
    let qr = qr_text(&app, &p, &signature);
    let dir = tempfile::tempdir().unwrap();
    let keys_file = dir.path().join("keys.json");
    std::fs::write(
        &keys_file,
        app.get("/.well-known/receta-keys.json", None).body,
    )
    .unwrap();
    drop(app); // offline

    let verify = |text: &str| {
        Command::new(crate::helpers::verify_binary())
            .args([text, "--keys"])
            .arg(&keys_file)
            .output()
            .unwrap()
    };
    let good = verify(&qr);
    let out = String::from_utf8_lossy(&good.stdout);
    assert!(good.status.success(), "{out}");
    assert!(out.starts_with("VALID"), "{out}");
    assert!(out.contains(&signature), "{out}");

    // A forged QR: the same seal on another signature, and a seal with one character changed.
    let other = format!(
        "{}{}",
        &signature[..63],
        if signature.ends_with('0') { '1' } else { '0' }
    );
    let forged = qr.replace(&signature, &other);
    let bad = verify(&forged);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stdout).starts_with("INVALID"));
    let (head, sig) = qr.rsplit_once('.').unwrap();
    let flipped = format!(
        "{head}.{}{}",
        if sig.starts_with('A') { 'B' } else { 'A' },
        &sig[1..]
    );
    assert!(!verify(&flipped).status.success());
    assert!(
        !verify(qr.split('#').next().unwrap()).status.success(),
        "no seal"
    );
}

/// The verify's counters are kept in the key-value store (`sqlite_key_value.db` in the state
/// directory, as Spin keeps it), not in the database; the outbox worker (cron, every second) deletes
/// those of minutes that no longer count.
#[test]
fn the_verify_counters_live_outside_the_records_and_old_ones_are_forgotten() {
    let app = spawn_app();
    let path = format!("/api/v2/verify/{}", "2".repeat(64));
    for _ in 0..3 {
        assert_eq!(app.get(&path, None).status, 404);
    }
    // With the database over HTTP (issue 87) they live in its `rate_counters` instead.
    let counters = |app: &TestApp| -> Vec<(String, i64)> {
        let (file, sql) = match crate::helpers::over_http() {
            true => (
                app.database_file(),
                "SELECT key, count FROM rate_counters WHERE key LIKE 'verify/%'",
            ),
            false => (
                app.state_dir.path().join("sqlite_key_value.db"),
                "SELECT key, value FROM spin_key_value WHERE key LIKE 'verify/%'",
            ),
        };
        // The server's file read-only (it keeps its own log of changes); the key-value file as
        // any client of it (a read-only one may miss its log on Spin).
        let store = match crate::helpers::over_http() {
            true => rusqlite::Connection::open_with_flags(
                file,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            ),
            false => rusqlite::Connection::open(file),
        }
        .unwrap();
        let mut stmt = store.prepare(sql).unwrap();
        stmt.query_map([], |r| {
            let count = match r.get_ref(1)? {
                rusqlite::types::ValueRef::Integer(n) => n,
                value => i64::from_le_bytes(value.as_blob()?.try_into().unwrap()),
            };
            Ok((r.get(0)?, count))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let now = counters(&app);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].1, 3, "three calls counted");
    assert!(now[0].0.ends_with("/127.0.0.1"), "{now:?}");

    // Three minutes later (the host's test clock), the next firing of the worker forgets them.
    let app = crate::fixtures::later(app, 180);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !counters(&app).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?} still kept",
            counters(&app)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
