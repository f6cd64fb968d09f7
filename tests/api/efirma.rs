//! The prescriber's e.firma, first part (issue 61): the medic's RFC and CURP (check digits), and
//! its registered FIEL certificate (`PUT/GET/DELETE /api/v2/medics/<id>/efirma/`), checked against
//! a test authority laid out as SAT's (`fiel.rs`, made with `openssl ca`).

use serde_json::{Value, json};

use crate::fixtures::Fiel;
use crate::helpers::{
    ADMIN_TOKEN, AppConfig, TestApp, field_errors, medic_body, spawn_app, spawn_app_with,
};

/// A person's RFC and CURP with valid check digits.
const RFC: &str = "HEGT7610034S2";
const CURP: &str = "SABC560626MDFLRN01";
const OTHER_RFC: &str = "GODE561231GR8";
const SIGNS: &str = "digitalSignature, nonRepudiation";

fn efirma_path(id: i64) -> String {
    format!("/api/v2/medics/{id}/efirma/")
}

fn put(app: &TestApp, token: &str, id: i64, certificate: &str) -> crate::helpers::TestResponse {
    app.request(
        "PUT",
        &efirma_path(id),
        Some(token),
        Some(&json!({ "certificate": certificate })),
    )
}

/// A 400 on `certificate`: its one sentence.
fn refused(resp: &crate::helpers::TestResponse) -> String {
    assert_eq!(resp.status, 400, "{}", resp.text());
    field_errors(resp)["certificate"][0]
        .as_str()
        .unwrap()
        .to_string()
}

fn medic_with_identity(app: &TestApp, email: &str) -> Value {
    let mut body = medic_body(email);
    body["rfc"] = json!(RFC.to_lowercase());
    body["curp"] = json!(CURP);
    let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    resp.json()
}

#[test]
fn a_medic_carries_an_rfc_and_a_curp_with_valid_check_digits() {
    let app = spawn_app();
    let medic = medic_with_identity(&app, "rfc@example.mx");
    assert_eq!(
        (medic["rfc"].as_str(), medic["curp"].as_str()),
        (Some(RFC), Some(CURP))
    );
    let id = medic["id"].as_i64().unwrap();
    let token = medic["token"].as_str().unwrap();
    let shown = app
        .get(&format!("/api/v2/medics/{id}/"), Some(token))
        .json();
    assert_eq!(
        (shown["rfc"].as_str(), shown["curp"].as_str()),
        (Some(RFC), Some(CURP))
    );

    for (field, bad, says) in [
        ("rfc", "HEGT7610034S3", "check digit"),
        ("rfc", "AAA010101AAA", "13 characters"),
        ("curp", "HEGT761003MDFRNN09", "check digit"),
        ("curp", "SABC560626", "18 characters"),
    ] {
        let mut body = medic_body(&format!("bad-{field}-{bad}@example.mx"));
        body[field] = json!(bad);
        let resp = app.post("/api/v2/medics/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 400, "{field} {bad}: {}", resp.text());
        let message = field_errors(&resp)[field][0].as_str().unwrap().to_string();
        assert!(message.contains(says), "{field} {bad}: {message}");
    }

    // PATCH sets, refuses a bad one, and null clears.
    let path = format!("/api/v2/medics/{id}/");
    let resp = app.patch(&path, Some(token), &json!({"rfc": OTHER_RFC}));
    assert_eq!(resp.status, 202, "{}", resp.text());
    assert_eq!(resp.json()["rfc"], OTHER_RFC);
    let resp = app.patch(&path, Some(token), &json!({"curp": "SABC560626MDFLRN02"}));
    assert_eq!(resp.status, 400, "{}", resp.text());
    let resp = app.patch(&path, Some(token), &json!({"curp": null}));
    assert_eq!(resp.status, 202, "{}", resp.text());
    assert_eq!(resp.json()["curp"], Value::Null);
    assert_eq!(resp.json()["rfc"], OTHER_RFC, "kept");
}

#[test]
fn without_efirma_ca_every_upload_is_refused_saying_so() {
    let app = spawn_app();
    let fiel = Fiel::new("AC de pruebas Receta");
    let medic = medic_with_identity(&app, "sin-ca@example.mx");
    let (id, token) = (
        medic["id"].as_i64().unwrap(),
        medic["token"].as_str().unwrap(),
    );
    let holder = fiel.issue(
        "valid",
        RFC,
        CURP,
        "20250101000000Z",
        "20300101000000Z",
        SIGNS,
    );
    let message = refused(&put(&app, token, id, &holder.pem()));
    assert!(message.contains("disabled"), "{message}");
}

#[test]
fn a_medic_registers_its_fiel_and_each_bad_certificate_is_refused_with_its_reason() {
    let fiel = Fiel::new("AC de pruebas Receta");
    let app = spawn_app_with(AppConfig::with_variables(&[("efirma_ca", &fiel.ca_pem())]));
    let medic = medic_with_identity(&app, "fiel@example.mx");
    let (id, token) = (
        medic["id"].as_i64().unwrap(),
        medic["token"].as_str().unwrap(),
    );
    let valid = fiel.issue(
        "valid",
        RFC,
        CURP,
        "20250101000000Z",
        "20300101000000Z",
        SIGNS,
    );

    // Refusals first: nothing is registered.
    let stranger = Fiel::new("AC ajena");
    let foreign = stranger.issue(
        "foreign",
        RFC,
        CURP,
        "20250101000000Z",
        "20300101000000Z",
        SIGNS,
    );
    let cases = [
        ("garbage".to_string(), "not an X.509 certificate"),
        (
            fiel.issue(
                "expired",
                RFC,
                CURP,
                "20200101000000Z",
                "20210101000000Z",
                SIGNS,
            )
            .pem(),
            "not valid now",
        ),
        (foreign.pem(), "does not chain"),
        (
            fiel.issue(
                "encipher",
                RFC,
                CURP,
                "20250101000000Z",
                "20300101000000Z",
                "keyEncipherment",
            )
            .pem(),
            "key usage",
        ),
        (
            fiel.issue(
                "someone",
                OTHER_RFC,
                CURP,
                "20250101000000Z",
                "20300101000000Z",
                SIGNS,
            )
            .pem(),
            "RFC",
        ),
        (
            fiel.issue(
                "curp",
                RFC,
                "MAPJ890812HDGRRN04",
                "20250101000000Z",
                "20300101000000Z",
                SIGNS,
            )
            .pem(),
            "CURP",
        ),
    ];
    for (certificate, says) in &cases {
        let message = refused(&put(&app, token, id, certificate));
        assert!(message.contains(says), "{says}: {message}");
    }
    assert_eq!(app.get(&efirma_path(id), Some(token)).status, 404);

    // The real one: PEM from the medic itself, and base64 of the DER from the admin.
    let resp = put(&app, token, id, &valid.pem());
    assert_eq!(resp.status, 200, "{}", resp.text());
    let efirma = resp.json()["efirma"].clone();
    assert_eq!(efirma["rfc"], RFC);
    assert_eq!(efirma["curp"], CURP);
    assert_eq!(efirma["issuer"], fiel.name());
    assert_eq!(
        efirma["serial"], "30001000000500000001",
        "SAT's certificate number"
    );
    assert_eq!(efirma["not_before"], "2025-01-01T00:00:00Z");
    assert_eq!(efirma["not_after"], "2030-01-01T00:00:00Z");
    let der_b64 = valid
        .pem()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<String>();
    let resp = put(&app, ADMIN_TOKEN, id, &der_b64);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        app.get(&efirma_path(id), Some(token)).json()["efirma"],
        efirma
    );

    // Another medic may not touch it; the admin and the medic may withdraw it.
    let other = app.create_medic("otro-fiel@example.mx");
    assert_eq!(app.get(&efirma_path(id), Some(&other.token)).status, 403);
    assert_eq!(put(&app, &other.token, id, &valid.pem()).status, 403);
    let resp = app.delete(&efirma_path(id), Some(token));
    assert_eq!(resp.status, 204, "{}", resp.text());
    assert_eq!(app.get(&efirma_path(id), Some(ADMIN_TOKEN)).status, 404);
    assert_eq!(app.delete(&efirma_path(id), Some(token)).status, 404);
}

#[test]
fn a_medic_without_an_rfc_is_told_to_set_it_first() {
    let fiel = Fiel::new("AC de pruebas Receta");
    let app = spawn_app_with(AppConfig::with_variables(&[("efirma_ca", &fiel.ca_pem())]));
    let medic = app.create_medic("sin-rfc@example.mx");
    let valid = fiel.issue(
        "valid",
        RFC,
        CURP,
        "20250101000000Z",
        "20300101000000Z",
        SIGNS,
    );
    let message = refused(&put(&app, &medic.token, medic.id, &valid.pem()));
    assert!(message.contains("no RFC"), "{message}");
}
