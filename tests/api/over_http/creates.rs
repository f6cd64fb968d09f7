//! A create's requests to the database over HTTP (issue 87), counted at a proxy: the token's check,
//! the prescriber, the patient and the webhooks in one request, the write in a second; and every
//! refusal as before, nothing written for it.

use serde_json::{Value, json};

use super::proxy::CommitCutter;
use super::{app_with, read_only};
use crate::helpers::{ADMIN_TOKEN, AppConfig, TestApp, TestResponse};
use crate::sqld::Sqld;

/// `body` posted to the create with `token`, and `Idempotency-Key: key` when given.
fn create(app: &TestApp, token: &str, body: &Value, key: Option<&str>) -> TestResponse {
    let auth = format!("Token {token}");
    let bytes = serde_json::to_vec(body).unwrap();
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    headers.extend(key.map(|k| ("Idempotency-Key", k)));
    app.request_with_headers("POST", "/api/v2/rx-endpoint/", &headers, Some(&bytes))
}

#[test]
fn a_create_is_two_requests_to_the_database_and_its_refusals_are_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = Sqld::primary(&dir.path().join("sqld"));
    let proxy = CommitCutter::to(&db.url);
    // A configured seal key, as in production: the development key is a database read once per
    // instance, which a host that makes an instance per request (Spin 4.1) pays on every create.
    let mut config = AppConfig {
        manifest: crate::paths::repo_root().join("spin.edge.toml"),
        scheduled: false,
        ..AppConfig::default()
    };
    config.env.push((
        "SPIN_VARIABLE_SIGNING_KEY".into(),
        "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=".into(),
    ));
    let app = app_with(config, &db, &proxy.url, &db.token.clone());
    let practice = crate::fixtures::Practice::new(&app, "crea@example.mx", "Clínica Crea");
    let token = practice.medic.token.clone();
    practice.prescribe(&app);
    let body = json!({
        "hospital": practice.hospital,
        "patient": {"uid": practice.patient["uid"]},
        "diagnosis": "Faringitis aguda",
        "medications": [
            {"presentation": "Paracetamol 500 mg tabletas", "instructions": "1 cada 8 horas"},
            {"presentation": "Loratadina", "instructions": "1 cada 24 horas", "drug_upc": "2000000000244"},
        ],
    });

    let mark = proxy.mark();
    let created = create(&app, &token, &body, None);
    assert_eq!(created.status, 200, "{}", created.text());
    let sent = proxy.since(mark);
    assert_eq!(sent.len(), 2, "the reads, then the write: {sent:#?}");
    assert!(
        sent[0].contains("holder.token_hash = ?1")
            && sent[0].contains("FROM patients")
            && sent[0].contains("FROM webhooks")
            && sent[0].contains("FROM drugs"),
        "the token's check travels with the prescriber, the patient, the webhooks and the \
         formulary: {}",
        sent[0]
    );
    assert!(
        sent[1].contains("INSERT INTO prescription_issues"),
        "{}",
        sent[1]
    );

    // Without `hospital` the webhooks wait for the prescriber's answer (the active hospital).
    let mut elsewhere = body.clone();
    elsewhere.as_object_mut().unwrap().remove("hospital");
    let mark = proxy.mark();
    let created = create(&app, &token, &elsewhere, None);
    assert_eq!(created.status, 200, "{}", created.text());
    assert_eq!(proxy.since(mark).len(), 3, "{:#?}", proxy.since(mark));

    // An `Idempotency-Key` is reserved with the reads (for the token's holder) and its answer
    // kept after the write: three requests; a retry is answered the first response again.
    let mark = proxy.mark();
    let first = create(&app, &token, &body, Some("clave-0001"));
    assert_eq!(first.status, 200, "{}", first.text());
    let sent = proxy.since(mark);
    assert_eq!(sent.len(), 3, "{sent:#?}");
    assert!(
        sent[0].contains("INSERT INTO idempotency_keys"),
        "{}",
        sent[0]
    );
    assert!(sent[2].contains("UPDATE idempotency_keys"), "{}", sent[2]);
    let again = create(&app, &token, &body, Some("clave-0001"));
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    let mut other = body.clone();
    other["diagnosis"] = json!("Otra cosa");
    let conflict = create(&app, &token, &other, Some("clave-0001"));
    assert_eq!(conflict.status, 409, "{}", conflict.text());
    // A refusal is not kept: the key is free again for the same medic.
    let refused = create(&app, &token, &json!({}), Some("clave-0002"));
    assert_eq!(refused.status, 400, "{}", refused.text());
    let file = read_only(&db);
    let kept: i64 = file
        .query_row(
            "SELECT count(*) FROM idempotency_keys WHERE key = 'clave-0002'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kept, 0, "a refusal releases its key");
    // Another medic's same key is its own.
    let other_medic = crate::fixtures::Practice::new(&app, "otra.crea@example.mx", "Clínica Otra");
    let mut theirs = body.clone();
    theirs["hospital"] = json!(other_medic.hospital);
    theirs["patient"] = json!({"uid": other_medic.patient["uid"]});
    let theirs = create(&app, &other_medic.medic.token, &theirs, Some("clave-0001"));
    assert_eq!(theirs.status, 200, "{}", theirs.text());
    assert_ne!(theirs.json()["signature"], first.json()["signature"]);

    let issued = |file: &rusqlite::Connection| -> i64 {
        file.query_row("SELECT count(*) FROM prescriptions", [], |r| r.get(0))
            .unwrap()
    };
    let before = issued(&read_only(&db));
    // Refused as before: a token nobody holds 401, a pharmacy's and the admin's 403, a bad field
    // 400 with every field's message, an unknown patient 400 on `patient`, an unverified medic 403.
    let nobody = create(&app, "not-anyones-token-0123456789abcdef", &body, None);
    assert_eq!(nobody.status, 401, "{}", nobody.text());
    assert_eq!(nobody.json(), json!({"message": "Invalid Token"}));
    let pharmacy = crate::fixtures::pharmacy::register(&app, "Farmacia Crea").token;
    assert_eq!(create(&app, &pharmacy, &body, None).status, 403);
    assert_eq!(create(&app, ADMIN_TOKEN, &body, None).status, 403);
    let mut bad = body.clone();
    bad["fills"] = json!(99);
    bad["patient"] = json!({"uid": "nadie"});
    let refused = create(&app, &token, &bad, None);
    assert_eq!(refused.status, 400, "{}", refused.text());
    let fields = refused.json();
    assert!(
        fields.get("fills").is_some() && fields.get("patient").is_some(),
        "{fields}"
    );
    let unverified = app.patch(
        &format!("/api/v2/medics/{}/", practice.medic.id),
        Some(ADMIN_TOKEN),
        &json!({"specialty_verified": false}),
    );
    assert!(unverified.status < 300, "{}", unverified.text());
    let refused = create(&app, &token, &body, None);
    assert_eq!(refused.status, 403, "{}", refused.text());
    let inactive = app.patch(
        &format!("/api/v2/medics/{}/", practice.medic.id),
        Some(ADMIN_TOKEN),
        &json!({"is_active": false}),
    );
    assert!(inactive.status < 300, "{}", inactive.text());
    assert_eq!(create(&app, &token, &body, None).status, 401);
    assert_eq!(
        issued(&read_only(&db)),
        before,
        "nothing refused was issued"
    );
}
