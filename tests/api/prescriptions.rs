//! `/api/v2/rx-endpoint/` and `/api/v2/drugs/` (openapi/receta.json, docs/lifecycle.md, docs/api.md; decisions): create, list,
//! detail by id and by signature, the issuing rules, the drug-catalog rules, the stored document, the
//! outbox rows, and concurrency.
//!
//! One file (over 500 lines): the black-box tests of one resource, the prescription, sharing their setup (`Setup`); split by resource, not by size.

use std::collections::HashSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::fixtures::{create_patient, patient_body};
use crate::helpers::{
    ADMIN_TOKEN, AppConfig, FormPart, TestApp, TestMedic, medic_body, spawn_app, spawn_app_with,
};
use receta_test_host::concurrently;

/// A seed-catalog drug (migration 0004): Amoxicilina 500 mg, 12 cápsulas.
const SEED_UPC: &str = "2000000000107";
const SEED_NAME: &str = "Amoxicilina 500 mg, 12 cápsulas";

/// A verified medic with an active hospital and a patient with an email address.
struct Setup {
    medic: TestMedic,
    hospital: i64,
    patient: Value,
}

fn setup(app: &TestApp, email: &str) -> Setup {
    let (medic, hospital) = app.medic_admin_of_new_hospital(email, &format!("Clínica de {email}"));
    let mut body = patient_body("Juan Pérez");
    body["email"] = json!(format!("paciente.{email}"));
    body["phone"] = json!("5512345678");
    body["gender"] = json!("H");
    let patient = create_patient(app, &medic, &body);
    Setup {
        medic,
        hospital,
        patient,
    }
}

impl Setup {
    fn uid(&self) -> &str {
        self.patient["uid"].as_str().unwrap()
    }

    /// The smallest valid body, for this setup's patient at its hospital.
    fn body(&self) -> Value {
        json!({
            "hospital": self.hospital,
            "patient": {"uid": self.uid()},
            "medications": [{"presentation": "Paracetamol 500 mg tabletas", "instructions": "1 cada 8 horas si hay dolor"}],
        })
    }
}

fn create(app: &TestApp, medic: &TestMedic, body: &Value) -> Value {
    let resp = app.post("/api/v2/rx-endpoint/", medic.token(), body);
    assert_eq!(resp.status, 200, "creating a prescription: {}", resp.text());
    resp.json()
}

fn is_signature(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(list: &[&str]) -> Vec<String> {
    let mut k: Vec<String> = list.iter().map(|s| s.to_string()).collect();
    k.sort();
    k
}

const MEDICATION_KEYS: [&str; 16] = [
    "id",
    "presentation",
    "instructions",
    "qty",
    "drug_upc",
    "category",
    "drug",
    "cost",
    "bought",
    "bought_qty",
    "order_id",
    "qty_label",
    "fraccion",
    "antibiotic",
    "qty_total",
    "substitution_allowed",
];
const COMMON_KEYS: [&str; 22] = [
    "id",
    "hospital",
    "clinic",
    "medic",
    "patient",
    "diagnosis",
    "medications",
    "extras",
    "signature",
    "created_at",
    "sent",
    "send_rx",
    "show_diagnosis",
    "additional_data",
    "rejected",
    "bought",
    "cta_link",
    // Mexican rules (docs/mexican-rules.md).
    "valid_until",
    "fills",
    "fills_used",
    "fill_interval_days",
    "antibiotic_repeat_reason",
];

/// The database of a running app, for checking what was stored (read-only).
fn db(app: &TestApp) -> rusqlite::Connection {
    let path = app.database_file();
    rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the app's database")
}

fn count(app: &TestApp, table: &str) -> i64 {
    db(app)
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn create_answers_200_in_the_create_shape_with_every_default() {
    let base_url = "https://recetas.example.mx";
    let mut config = AppConfig::default();
    config
        .env
        .push(("SPIN_VARIABLE_BASE_URL".into(), base_url.into()));
    let app = spawn_app_with(config);
    let s = setup(&app, "rx-create@example.mx");
    let rx = create(&app, &s.medic, &s.body());

    // The create also answers its `warnings` (docs/patients.md), empty here.
    let mut expected = COMMON_KEYS.to_vec();
    expected.push("warnings");
    assert_eq!(keys(&rx), sorted(&expected), "{rx}");
    assert_eq!(rx["warnings"], json!([]));
    assert!(rx["id"].as_i64().unwrap() > 0);
    assert_eq!(
        rx["hospital"], s.hospital,
        "hospital is an integer on create"
    );
    assert_eq!(rx["clinic"], Value::Null);
    assert_eq!(rx["medic"], "rx-create@example.mx");
    assert_eq!(
        rx["patient"],
        json!({"uid": s.uid(), "name": "Juan Pérez", "email": "paciente.rx-create@example.mx"})
    );
    assert_eq!(rx["diagnosis"], "");
    assert_eq!(rx["extras"], "");
    let signature = rx["signature"].as_str().unwrap();
    assert!(is_signature(signature), "{signature}");
    let created = rx["created_at"].as_str().unwrap();
    assert_eq!(created.len(), 10, "YYYY-MM-DD: {created}");
    assert!(
        created.starts_with("20") && created.as_bytes()[4] == b'-' && created.as_bytes()[7] == b'-'
    );
    assert_eq!(rx["sent"], Value::Null);
    assert_eq!(rx["send_rx"], true);
    assert_eq!(rx["show_diagnosis"], false);
    assert_eq!(rx["additional_data"], json!({}));
    assert_eq!(rx["rejected"], false);
    assert_eq!(rx["bought"], false);
    assert_eq!(rx["cta_link"], format!("{base_url}/rx/{signature}"));

    let meds = rx["medications"].as_array().unwrap();
    assert_eq!(meds.len(), 1);
    let m = &meds[0];
    assert_eq!(keys(m), sorted(&MEDICATION_KEYS));
    assert!(m["id"].as_i64().unwrap() > 0);
    assert_eq!(m["presentation"], "Paracetamol 500 mg tabletas");
    assert_eq!(m["instructions"], "1 cada 8 horas si hay dolor");
    assert_eq!(m["qty"], 1, "qty defaults to 1");
    assert_eq!(m["drug_upc"], "");
    assert_eq!(m["category"], "standard_drug");
    assert_eq!(m["drug"], "");
    assert_eq!(m["cost"], json!(0.0));
    assert!(
        m["cost"].is_f64(),
        "cost is a number with a fraction: {}",
        m["cost"]
    );
    assert_eq!(m["bought"], false);
    assert_eq!(m["bought_qty"], 0);
    assert_eq!(m["order_id"], 0);
    assert_eq!(m["qty_label"], "1 caja");

    // Every field sent is returned as sent.
    let mut body = s.body();
    body["clinic"] = json!(4);
    body["diagnosis"] = json!("Faringitis aguda");
    body["extras"] = json!("Tomar abundantes líquidos");
    body["show_diagnosis"] = json!(true);
    body["send_rx"] = json!(false);
    body["medications"] = json!([
        {"presentation": "Ibuprofeno 400 mg", "instructions": "1 cada 12 horas", "qty": 3, "drug_upc": "", "category": "standard_drug"},
        {"presentation": "Gárgaras de agua con sal", "instructions": "3 veces al día", "category": "unstructured_drug"},
    ]);
    let rx = create(&app, &s.medic, &body);
    assert_eq!(rx["clinic"], 4);
    assert_eq!(rx["diagnosis"], "Faringitis aguda");
    assert_eq!(rx["extras"], "Tomar abundantes líquidos");
    assert_eq!(rx["show_diagnosis"], true);
    assert_eq!(rx["send_rx"], false);
    let meds = rx["medications"].as_array().unwrap();
    assert_eq!(
        (meds[0]["qty"].as_i64(), meds[0]["qty_label"].as_str()),
        (Some(3), Some("3 cajas"))
    );
    assert_eq!(meds[1]["category"], "unstructured_drug");
    assert!(
        meds[0]["id"].as_i64() < meds[1]["id"].as_i64(),
        "medications keep their order"
    );
    let clinic_name = create(&app, &s.medic, &{
        let mut b = s.body();
        b["clinic"] = json!("Consultorio 3");
        b
    });
    assert_eq!(clinic_name["clinic"], "Consultorio 3");
}

#[test]
fn detail_by_signature_is_one_object_and_by_id_a_page_of_one() {
    let app = spawn_app();
    let s = setup(&app, "rx-detail@example.mx");
    let mut body = s.body();
    body["diagnosis"] = json!("Otitis media");
    let rx = create(&app, &s.medic, &body);
    let signature = rx["signature"].as_str().unwrap();
    let id = rx["id"].as_i64().unwrap();

    let resp = app.get(
        &format!("/api/v2/rx-endpoint/{signature}/"),
        s.medic.token(),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    let detail = resp.json();
    let mut expected = COMMON_KEYS.to_vec();
    expected.extend([
        "status",
        "reason_of_rejected",
        "seal",
        "constancia",
        "efirma",
        "pharmacy_status",
        "pharmacy_status_history",
    ]);
    assert_eq!(keys(&detail), sorted(&expected));
    let hospital = app
        .get(
            &format!("/api/v2/hospital/{}", s.hospital),
            Some(ADMIN_TOKEN),
        )
        .json();
    assert_eq!(
        detail["hospital"],
        json!({"id": s.hospital, "patron": hospital["patron"], "location": hospital["location"]})
    );
    assert_eq!(
        detail["patient"],
        json!({
            "uid": s.uid(), "name": "Juan Pérez", "email": "paciente.rx-detail@example.mx",
            "phone": "5512345678", "date_of_birth": "1990-06-15", "gender": "H",
        })
    );
    assert_eq!(
        detail["status"],
        json!({"rx_status": ["available", "Disponible"], "sent_status": ["pending", "pending send"]})
    );
    assert_eq!(detail["reason_of_rejected"], "");
    assert_eq!(detail["sent"], Value::Null);
    for k in [
        "id",
        "signature",
        "medic",
        "diagnosis",
        "medications",
        "created_at",
        "cta_link",
        "clinic",
        "extras",
    ] {
        assert_eq!(
            detail[k], rx[k],
            "{k} is the same in the create response and the detail"
        );
    }
    // Without the trailing slash too, and for the API admin (webhook consumers use it).
    assert_eq!(
        app.get(&format!("/api/v2/rx-endpoint/{signature}"), s.medic.token())
            .json(),
        detail
    );
    assert_eq!(
        app.get(
            &format!("/api/v2/rx-endpoint/{signature}/"),
            Some(ADMIN_TOKEN)
        )
        .json(),
        detail
    );

    let resp = app.get(&format!("/api/v2/rx-endpoint/{id}"), s.medic.token());
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json(),
        json!({"count": 1, "next": null, "previous": null, "results": [detail]})
    );
    assert_eq!(
        app.get(&format!("/api/v2/rx-endpoint/{id}/"), s.medic.token())
            .status,
        200
    );

    let not_found = json!({"message": "Not found."});
    let unknown_signature = "0".repeat(63) + "a";
    for path in [
        format!("/api/v2/rx-endpoint/{}/", id + 1000),
        format!("/api/v2/rx-endpoint/{unknown_signature}/"),
        format!("/api/v2/rx-endpoint/{}/", signature.to_uppercase()),
        format!("/api/v2/rx-endpoint/{}/", &signature[..63]),
        "/api/v2/rx-endpoint/not-a-signature/".to_string(),
        "/api/v2/rx-endpoint/99999999999999999999999/".to_string(),
    ] {
        let resp = app.get(&path, s.medic.token());
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(resp.json(), not_found, "{path}");
    }

    // Another medic sees nothing, by id or by signature; no token is 401.
    let other = setup(&app, "rx-detail-other@example.mx");
    for path in [
        format!("/api/v2/rx-endpoint/{id}"),
        format!("/api/v2/rx-endpoint/{signature}/"),
    ] {
        let resp = app.get(&path, other.medic.token());
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(resp.json(), not_found);
        assert_eq!(app.get(&path, None).status, 401);
    }
}

#[test]
fn send_rx_false_stays_unsent_with_its_own_code() {
    let app = spawn_app();
    let s = setup(&app, "rx-unsent@example.mx");
    let mut body = s.body();
    body["send_rx"] = json!(false);
    let rx = create(&app, &s.medic, &body);
    assert_eq!(rx["send_rx"], false);
    assert_eq!(rx["sent"], Value::Null);
    let detail = app
        .get(
            &format!("/api/v2/rx-endpoint/{}/", rx["signature"].as_str().unwrap()),
            s.medic.token(),
        )
        .json();
    assert_eq!(
        detail["status"]["sent_status"],
        json!(["not_sent", "not sent"])
    );
    assert_eq!(
        detail["status"]["rx_status"],
        json!(["available", "Disponible"])
    );
    assert_eq!(detail["sent"], Value::Null);
}

#[test]
fn the_outbox_gets_one_email_row_only_when_an_email_is_due() {
    let app = spawn_app();
    let s = setup(&app, "rx-outbox@example.mx");
    let sent = create(&app, &s.medic, &s.body());
    let conn = db(&app);
    let row: (String, i64, String, String, String, i64, Option<String>) = conn
        .query_row(
            "SELECT kind, prescription_id, target, payload, status, attempts, lease_until FROM outbox",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    assert_eq!(row.0, "email");
    assert_eq!(row.1, sent["id"].as_i64().unwrap());
    assert_eq!(row.2, "paciente.rx-outbox@example.mx");
    let payload: Value = serde_json::from_str(&row.3).unwrap();
    assert_eq!(payload["signature"], sent["signature"]);
    assert_eq!(payload["to"], json!(["paciente.rx-outbox@example.mx"]));
    assert_eq!((row.4.as_str(), row.5, row.6), ("pending", 0, None));

    // send_rx false, a patient whose `email` is not an address, a hospital that sends no emails:
    // no row, and the prescription says it will not be sent.
    let mut unsent = s.body();
    unsent["send_rx"] = json!(false);
    create(&app, &s.medic, &unsent);
    let mut id_only = patient_body("Sin Correo");
    id_only["email"] = json!("EXP-12345");
    let no_address = create_patient(&app, &s.medic, &id_only);
    let mut body = s.body();
    body["patient"] = json!({"uid": no_address["uid"]});
    let rx = create(&app, &s.medic, &body);
    let detail = app
        .get(
            &format!("/api/v2/rx-endpoint/{}/", rx["signature"].as_str().unwrap()),
            s.medic.token(),
        )
        .json();
    assert_eq!(
        detail["status"]["sent_status"],
        json!(["not_sent", "not sent"])
    );

    let mut quiet = crate::helpers::hospital_body("Consultorio silencioso");
    quiet["send_emails"] = json!(false);
    let quiet = app
        .post("/api/v2/hospital/", Some(ADMIN_TOKEN), &quiet)
        .json()["id"]
        .as_i64()
        .unwrap();
    app.add_membership(s.medic.id, quiet, "MEMBER");
    let mut body = s.body();
    body["hospital"] = json!(quiet);
    create(&app, &s.medic, &body);
    assert_eq!(count(&app, "outbox"), 1);
    assert_eq!(count(&app, "prescriptions"), 4);
}

#[test]
fn the_stored_document_hashes_to_the_signature_and_holds_a_nonce() {
    let app = spawn_app();
    let s = setup(&app, "rx-signed@example.mx");
    let body = s.body();
    let a = create(&app, &s.medic, &body);
    let b = create(&app, &s.medic, &body);
    assert_ne!(
        a["signature"], b["signature"],
        "the same content twice: two signatures"
    );
    let conn = db(&app);
    for rx in [&a, &b] {
        let canonical: String = conn
            .query_row(
                "SELECT d.canonical FROM prescription_documents d JOIN prescriptions p ON p.id = d.prescription_id WHERE p.signature = ?",
                [rx["signature"].as_str().unwrap()],
                |r| r.get(0),
            )
            .unwrap();
        let digest: String = Sha256::digest(canonical.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest, rx["signature"].as_str().unwrap());
        let doc: Value = serde_json::from_str(&canonical).unwrap();
        let nonce = doc["nonce"].as_str().unwrap();
        assert_eq!(nonce.len(), 32, "128 random bits in hex");
        assert_eq!(doc["patient"]["uid"], s.uid());
        assert_eq!(
            doc["medications"][0]["presentation"],
            "Paracetamol 500 mg tabletas"
        );
        assert_eq!(doc["medic"]["email"], "rx-signed@example.mx");
        // Canonical: keys sorted, no whitespace between tokens.
        assert!(
            canonical.starts_with("{\"antibiotic_repeat_reason\":\"\",\"clinic\":"),
            "{canonical}"
        );
        assert_eq!(doc["version"], 3);
        assert_eq!(doc["medications"][0]["substitution_allowed"], true);
        assert_eq!(doc["fills"], 1);
        assert!(doc["valid_until"].is_string());
        assert!(!canonical.contains("\": ") && !canonical.contains(", \""));
    }
}

#[test]
fn an_issued_prescription_does_not_change_when_its_patient_does() {
    let app = spawn_app();
    let s = setup(&app, "rx-immutable@example.mx");
    let rx = create(&app, &s.medic, &s.body());
    let before = app
        .get(
            &format!("/api/v2/rx-endpoint/{}/", rx["signature"].as_str().unwrap()),
            s.medic.token(),
        )
        .json();
    let resp = app.patch(
        &format!("/api/v2/patient/{}/", s.uid()),
        s.medic.token(),
        &json!({"name": "Otro Nombre", "phone": "0"}),
    );
    assert_eq!(resp.status, 202);
    let after = app
        .get(
            &format!("/api/v2/rx-endpoint/{}/", rx["signature"].as_str().unwrap()),
            s.medic.token(),
        )
        .json();
    assert_eq!(before, after);
    assert_eq!(after["patient"]["name"], "Juan Pérez");
    // There is no way to change or delete a prescription.
    for method in ["PATCH", "PUT", "DELETE"] {
        let path = format!("/api/v2/rx-endpoint/{}/", rx["signature"].as_str().unwrap());
        let resp = app.request(
            method,
            &path,
            s.medic.token(),
            Some(&json!({"diagnosis": "x"})),
        );
        assert_eq!(resp.status, 405, "{method}");
        assert_eq!(resp.header("allow"), Some("GET"), "{method}");
    }
}

#[test]
fn the_pdf_is_rendered_once_at_issue_and_served_to_the_issuer_and_the_admin() {
    let app = spawn_app();
    let s = setup(&app, "rx-pdf@example.mx");
    let rx = create(&app, &s.medic, &s.body());
    let signature = rx["signature"].as_str().unwrap();
    let path = format!("/api/v2/rx/pdf/{signature}/");

    let resp = app.get(&path, s.medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    let body = resp.json();
    assert_eq!(keys(&body), ["pdf"]);
    let pdf = BASE64
        .decode(body["pdf"].as_str().unwrap())
        .expect("base64");
    assert!(
        pdf.starts_with(b"%PDF-") && pdf.len() > 1000,
        "{} bytes",
        pdf.len()
    );
    // The stored bytes, always the same ones; the API admin gets them too.
    assert_eq!(app.get(&path, s.medic.token()).json(), body);
    assert_eq!(
        app.get(&format!("/api/v2/rx/pdf/{signature}"), Some(ADMIN_TOKEN))
            .json(),
        body
    );
    let stored: Vec<u8> = db(&app)
        .query_row(
            "SELECT d.pdf FROM prescription_documents d JOIN prescriptions p ON p.id = d.prescription_id WHERE p.signature = ?",
            [signature],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, pdf);

    // Anyone else, or an unknown signature: 404 {error}. No token: 401.
    let other = setup(&app, "rx-pdf-other@example.mx");
    let unknown = format!("/api/v2/rx/pdf/{}/", "f".repeat(64));
    for (path, token) in [
        (&path, other.medic.token()),
        (&unknown, s.medic.token()),
        (&"/api/v2/rx/pdf/xyz/".to_string(), s.medic.token()),
    ] {
        let resp = app.get(path, token);
        assert_eq!(resp.status, 404, "{path}");
        let body = resp.json();
        assert_eq!(keys(&body), ["error"], "{body}");
    }
    assert_eq!(app.get(&path, None).status, 401);

    // A hospital with images: they go into the PDF (a file the renderer cannot use is left out, never
    // an error).
    let picture = crate::helpers::jpeg(2048);
    let resp = app.multipart(
        "POST",
        "/api/v2/hospital/",
        Some(ADMIN_TOKEN),
        &[
            FormPart::Text("name", "Con logo"),
            FormPart::Text("patron", "Dr. Logo"),
            FormPart::Text("location", "Calle 1, 01000 CDMX"),
            FormPart::Text("contact", "55 0000 0000"),
            FormPart::File {
                name: "picture",
                filename: "logo.jpg",
                bytes: &picture,
            },
        ],
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let with_logo = resp.json()["id"].as_i64().unwrap();
    app.add_membership(s.medic.id, with_logo, "MEMBER");
    let mut body = s.body();
    body["hospital"] = json!(with_logo);
    let rx = create(&app, &s.medic, &body);
    let resp = app.get(
        &format!("/api/v2/rx/pdf/{}/", rx["signature"].as_str().unwrap()),
        s.medic.token(),
    );
    assert_eq!(resp.status, 200);
}

#[test]
fn only_a_verified_medic_may_prescribe() {
    let app = spawn_app();
    let mut body = medic_body("unverified@example.mx");
    body["specialty_verified"] = json!(false);
    let medic = app.create_medic_from(&body);
    let hospital = app.create_hospital(ADMIN_TOKEN, "Clínica X");
    app.add_membership(medic.id, hospital, "MEMBER");
    let patient = create_patient(&app, &medic, &patient_body("P"));
    let resp = app.post(
        "/api/v2/rx-endpoint/",
        medic.token(),
        &json!({"hospital": hospital, "patient": {"uid": patient["uid"]}, "medications": [{"presentation": "a", "instructions": "b"}]}),
    );
    assert_eq!(resp.status, 403, "{}", resp.text());
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("specialty_verified")
    );
    // Even with an invalid body, the right is checked first.
    assert_eq!(
        app.post("/api/v2/rx-endpoint/", medic.token(), &json!({}))
            .status,
        403
    );
    // The API admin is not a medic.
    let resp = app.post("/api/v2/rx-endpoint/", Some(ADMIN_TOKEN), &json!({}));
    assert_eq!(resp.status, 403);
    assert_eq!(
        app.post("/api/v2/rx-endpoint/", None, &json!({})).status,
        401
    );
    assert_eq!(
        app.get("/api/v2/rx-endpoint/", Some(ADMIN_TOKEN)).status,
        403
    );
}

#[test]
fn the_hospital_must_be_one_with_a_live_membership() {
    let app = spawn_app();
    let s = setup(&app, "rx-hospital@example.mx");
    let foreign = app.create_hospital(ADMIN_TOKEN, "Ajena");

    for (hospital, why) in [
        (json!(foreign), "no membership there"),
        (json!(999_999), "does not exist"),
        (json!("abc"), "not an integer"),
        (json!(1.5), "not an integer"),
        (json!({"id": s.hospital}), "not an integer"),
    ] {
        let mut body = s.body();
        body["hospital"] = hospital.clone();
        let resp = app.post("/api/v2/rx-endpoint/", s.medic.token(), &body);
        assert_eq!(resp.status, 400, "{why}: {}", resp.text());
        let errors = resp.json();
        assert!(errors["hospital"][0].is_string(), "{why}: {errors}");
        assert_eq!(errors.as_object().unwrap().len(), 1, "{why}: {errors}");
    }

    // Left out (or null): the active hospital.
    let mut body = s.body();
    body.as_object_mut().unwrap().remove("hospital");
    assert_eq!(create(&app, &s.medic, &body)["hospital"], s.hospital);
    body["hospital"] = Value::Null;
    assert_eq!(create(&app, &s.medic, &body)["hospital"], s.hospital);
    // …which follows locations/update.
    let second = app.create_hospital(ADMIN_TOKEN, "Segunda");
    let membership = app.add_membership(s.medic.id, second, "MEMBER");
    let resp = app.patch(
        "/api/v2/locations/update/",
        s.medic.token(),
        &json!({"hospital_id": second}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    body.as_object_mut().unwrap().remove("hospital");
    assert_eq!(create(&app, &s.medic, &body)["hospital"], second);

    // A deleted membership no longer allows it.
    let resp = app.delete(
        &format!("/api/v2/management/memberships/{membership}/"),
        Some(ADMIN_TOKEN),
    );
    assert_eq!(resp.status, 204);
    let mut body = s.body();
    body["hospital"] = json!(second);
    let resp = app.post("/api/v2/rx-endpoint/", s.medic.token(), &body);
    assert_eq!(resp.status, 400);
    assert!(resp.json()["hospital"][0].is_string());

    // A medic with no hospital at all cannot leave it out.
    let lone = app.create_medic("lone@example.mx");
    let patient = create_patient(&app, &lone, &patient_body("P"));
    let resp = app.post(
        "/api/v2/rx-endpoint/",
        lone.token(),
        &json!({"patient": {"uid": patient["uid"]}, "medications": [{"presentation": "a", "instructions": "b"}]}),
    );
    assert_eq!(resp.status, 400);
    assert!(resp.json()["hospital"][0].is_string());
}

#[test]
fn the_patient_must_be_the_medics_own() {
    let app = spawn_app();
    let s = setup(&app, "rx-patient@example.mx");
    let other = setup(&app, "rx-patient-other@example.mx");
    for (patient, why) in [
        (json!({"uid": other.uid()}), "another medic's patient"),
        (
            json!({"uid": "0123456789abcdef0123456789abcdef"}),
            "no such patient",
        ),
        (json!({"uid": ""}), "empty uid"),
        (json!({"uid": 5}), "uid not a string"),
        (json!({}), "no uid"),
        (json!(17), "not an object"),
        (Value::Null, "null"),
        (json!({"uid": "' OR 1=1 --"}), "injection-looking uid"),
    ] {
        let mut body = s.body();
        body["patient"] = patient;
        let resp = app.post("/api/v2/rx-endpoint/", s.medic.token(), &body);
        assert_eq!(resp.status, 400, "{why}: {}", resp.text());
        let errors = resp.json();
        assert!(errors["patient"][0].is_string(), "{why}: {errors}");
        assert_eq!(errors.as_object().unwrap().len(), 1, "{why}: {errors}");
    }
    let mut body = s.body();
    body.as_object_mut().unwrap().remove("patient");
    let resp = app.post("/api/v2/rx-endpoint/", s.medic.token(), &body);
    assert_eq!(resp.json()["patient"], json!(["This field is required."]));
    // The other medic's data never shows up.
    assert_eq!(
        app.get("/api/v2/rx-endpoint/", s.medic.token()).json()["count"],
        0
    );
}

#[test]
fn medications_are_required_each_with_presentation_and_instructions() {
    let app = spawn_app();
    let s = setup(&app, "rx-meds@example.mx");
    let cases = [
        (Value::Null, "missing"),
        (json!([]), "empty"),
        (json!("Paracetamol"), "not a list"),
        (json!([{"instructions": "x"}]), "no presentation"),
        (json!([{"presentation": "x"}]), "no instructions"),
        (
            json!([{"presentation": " ", "instructions": "x"}]),
            "blank presentation",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "qty": 0}]),
            "qty 0",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "qty": -3}]),
            "qty negative",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "qty": "two"}]),
            "qty text",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "qty": 1.5}]),
            "qty fraction",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "qty": 1e30}]),
            "qty huge",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "category": "otc"}]),
            "unknown category",
        ),
        (
            json!([{"presentation": "x", "instructions": "y", "drug_upc": ["1"]}]),
            "drug_upc not a string",
        ),
        (
            json!([{"presentation": "x".repeat(600), "instructions": "y"}]),
            "presentation too long",
        ),
        (
            json!([{"presentation": "x", "instructions": "y"}, "z"]),
            "an item not an object",
        ),
        (
            json!(vec![json!({"presentation": "x", "instructions": "y"}); 51]),
            "too many",
        ),
    ];
    for (meds, why) in cases {
        let mut body = s.body();
        if meds.is_null() {
            body.as_object_mut().unwrap().remove("medications");
        } else {
            body["medications"] = meds;
        }
        let resp = app.post("/api/v2/rx-endpoint/", s.medic.token(), &body);
        assert_eq!(resp.status, 400, "{why}: {}", resp.text());
        let errors = resp.json();
        assert!(errors["medications"][0].is_string(), "{why}: {errors}");
        assert_eq!(errors.as_object().unwrap().len(), 1, "{why}: {errors}");
    }
    // Nothing was written by any of them.
    assert_eq!(count(&app, "prescriptions"), 0);
    assert_eq!(count(&app, "medications"), 0);
}

#[test]
fn one_400_names_every_bad_field() {
    let app = spawn_app();
    let s = setup(&app, "rx-many@example.mx");
    let resp = app.post(
        "/api/v2/rx-endpoint/",
        s.medic.token(),
        &json!({
            "hospital": 999_999,
            "patient": {"uid": "nope"},
            "medications": [{"presentation": "x", "qty": 0}],
            "show_diagnosis": "maybe",
            "send_rx": 7,
            "diagnosis": {"a": 1},
            "extras": ["x"],
            "clinic": {"id": 1},
        }),
    );
    assert_eq!(resp.status, 400);
    let errors = resp.json();
    for field in [
        "hospital",
        "patient",
        "medications",
        "show_diagnosis",
        "send_rx",
        "diagnosis",
        "extras",
        "clinic",
    ] {
        assert!(errors[field][0].is_string(), "{field} in {errors}");
    }
    let meds: Vec<&str> = errors["medications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        meds.iter().any(|m| m.starts_with("Item 1, instructions:")),
        "{meds:?}"
    );
    assert!(
        meds.iter().any(|m| m.starts_with("Item 1, qty:")),
        "{meds:?}"
    );
}

#[test]
fn drug_catalog_rules_for_drug_upc_and_category() {
    let app = spawn_app();
    let s = setup(&app, "rx-drugs@example.mx");
    let med = |upc: &str, category: Option<&str>| {
        let mut m = json!({"presentation": "Una caja", "instructions": "Según indicación", "drug_upc": upc});
        if let Some(c) = category {
            m["category"] = json!(c);
        }
        m
    };
    let issue = |meds: Vec<Value>| {
        let mut body = s.body();
        body["medications"] = json!(meds);
        app.post("/api/v2/rx-endpoint/", s.medic.token(), &body)
    };

    // A UPC from the service catalog: its category and its name.
    let rx = issue(vec![
        med(SEED_UPC, None),
        med(SEED_UPC, Some("standard_drug")),
        med(SEED_UPC, Some("basic_drug")),
    ]);
    assert_eq!(rx.status, 200, "{}", rx.text());
    let meds = rx.json()["medications"].clone();
    for (i, category) in ["standard_drug", "standard_drug", "basic_drug"]
        .iter()
        .enumerate()
    {
        assert_eq!(meds[i]["drug_upc"], SEED_UPC);
        assert_eq!(meds[i]["category"], *category, "item {i}");
        assert_eq!(meds[i]["drug"], SEED_NAME, "item {i}");
    }

    // A UPC not in it: only as the integrator's own product (basic_drug).
    let own = "7501234567897";
    let rx = issue(vec![med(own, Some("basic_drug"))]);
    assert_eq!(rx.status, 200, "{}", rx.text());
    let m = &rx.json()["medications"][0];
    assert_eq!(
        (
            m["category"].as_str(),
            m["drug"].as_str(),
            m["drug_upc"].as_str()
        ),
        (Some("basic_drug"), Some(""), Some(own))
    );
    for category in [None, Some("standard_drug"), Some("unstructured_drug")] {
        let resp = issue(vec![med(SEED_UPC, None), med(own, category)]);
        assert_eq!(resp.status, 400, "{category:?}");
        let errors = resp.json();
        assert_eq!(errors.as_object().unwrap().len(), 1, "{errors}");
        let message = errors["medications"][0].as_str().unwrap();
        assert!(
            message.starts_with("Item 2: ")
                && message.contains(own)
                && message.contains("basic_drug"),
            "{message}"
        );
    }
    // Free text has no UPC.
    let resp = issue(vec![med(SEED_UPC, Some("unstructured_drug"))]);
    assert_eq!(resp.status, 400);
    assert!(resp.json()["medications"][0].is_string());

    // No UPC: no rule.
    let rx = issue(vec![
        med("", None),
        med("", Some("unstructured_drug")),
        med("", Some("basic_drug")),
    ]);
    assert_eq!(rx.status, 200);
    let meds = rx.json()["medications"].clone();
    let cats: Vec<&str> = meds
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["category"].as_str().unwrap())
        .collect();
    assert_eq!(cats, ["standard_drug", "unstructured_drug", "basic_drug"]);

    // The catalog decides the category of its products: a product loaded as basic_drug is one.
    let loaded = app.post(
        "/api/v2/drugs/",
        Some(ADMIN_TOKEN),
        &json!([{"upc": "2000000009995", "name": "Producto básico", "category": "basic_drug"}]),
    );
    assert_eq!(loaded.status, 200, "{}", loaded.text());
    let rx = issue(vec![med("2000000009995", None)]);
    let m = &rx.json()["medications"][0];
    assert_eq!(
        (m["category"].as_str(), m["drug"].as_str()),
        (Some("basic_drug"), Some("Producto básico"))
    );
    // Every rejected create left nothing behind.
    assert_eq!(count(&app, "prescriptions"), 4);
}

#[test]
fn the_drug_catalog_is_loaded_by_the_admin_and_searched_by_anyone_with_a_token() {
    let app = spawn_app();
    let medic = app.create_medic("drugs@example.mx");

    // The seed catalog is there in a new database.
    let seed = app.get("/api/v2/drugs/?limit=100", medic.token());
    assert_eq!(seed.status, 200);
    let seed = seed.json();
    assert!(seed["count"].as_u64().unwrap() >= 40, "{}", seed["count"]);
    for d in seed["results"].as_array().unwrap() {
        assert_eq!(
            keys(d),
            sorted(&["upc", "name", "category", "fraccion", "antibiotic"])
        );
        assert!(
            d["upc"].as_str().unwrap().starts_with('2'),
            "in-store GS1 range"
        );
    }
    let found = app.get("/api/v2/drugs/?search=amoxi", medic.token()).json();
    assert!(
        found["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["upc"] == SEED_UPC && d["name"] == SEED_NAME)
    );
    let by_code = app
        .get(
            &format!("/api/v2/drugs/?search={}", &SEED_UPC[..12]),
            medic.token(),
        )
        .json();
    assert_eq!(by_code["count"], 1);
    assert_eq!(
        app.get("/api/v2/drugs/?search=%25", medic.token()).json()["count"],
        1,
        "only the one with a % in its name"
    );

    let load = json!([
        {"upc": "7501055300075", "name": "Paracetamol 500 mg, 20 tabletas"},
        {"upc": "036000291452", "name": "Producto propio", "category": "basic_drug"},
    ]);
    let resp = app.post("/api/v2/drugs/", Some(ADMIN_TOKEN), &load);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json(), json!({"created": 2, "updated": 0}));
    let resp = app.post(
        "/api/v2/drugs/",
        Some(ADMIN_TOKEN),
        &json!([{"upc": "7501055300075", "name": "Paracetamol 500 mg, 10 tabletas"}]),
    );
    assert_eq!(resp.json(), json!({"created": 0, "updated": 1}));
    let found = app
        .get("/api/v2/drugs/?search=7501055300075", medic.token())
        .json();
    assert_eq!(
        found["results"],
        json!([{"upc": "7501055300075", "name": "Paracetamol 500 mg, 10 tabletas", "category": "standard_drug", "fraccion": null, "antibiotic": null}])
    );

    // Only the API admin loads; a bad item refuses the whole load.
    assert_eq!(app.post("/api/v2/drugs/", medic.token(), &load).status, 403);
    assert_eq!(app.post("/api/v2/drugs/", None, &load).status, 401);
    assert_eq!(app.get("/api/v2/drugs/", None).status, 401);
    let resp = app.post(
        "/api/v2/drugs/",
        Some(ADMIN_TOKEN),
        &json!([{"upc": "2000000009988", "name": "Bien"}, {"upc": "12345", "name": "Mal"}, {"upc": "2000000009971", "category": "otc"}]),
    );
    assert_eq!(resp.status, 400);
    let messages = resp.json()["drugs"].clone();
    assert!(
        messages[0].as_str().unwrap().starts_with("Item 2, upc:"),
        "{messages}"
    );
    assert_eq!(
        app.get("/api/v2/drugs/?search=2000000009988", medic.token())
            .json()["count"],
        0,
        "all or nothing"
    );
    for bad in [json!({"upc": "x"}), json!([]), json!("x")] {
        let resp = app.post("/api/v2/drugs/", Some(ADMIN_TOKEN), &bad);
        assert_eq!(resp.status, 400, "{bad}");
        assert!(resp.json().is_object());
    }
}

#[test]
fn the_list_is_the_medics_own_paginated_and_searchable() {
    let app = spawn_app();
    let s = setup(&app, "rx-list@example.mx");
    let mut maria = patient_body("María Fernanda Ortiz");
    maria["email"] = json!("mafer@correo.mx");
    let maria = create_patient(&app, &s.medic, &maria);
    let mut created = Vec::new();
    for (patient, diagnosis) in [
        (s.uid().to_string(), "Rinofaringitis"),
        (
            maria["uid"].as_str().unwrap().to_string(),
            "Dermatitis 50%_off",
        ),
        (s.uid().to_string(), "Gastritis"),
    ] {
        let mut body = s.body();
        body["patient"] = json!({"uid": patient});
        body["diagnosis"] = json!(diagnosis);
        created.push(create(&app, &s.medic, &body));
    }
    let other = setup(&app, "rx-list-other@example.mx");
    let mut body = other.body();
    body["diagnosis"] = json!("Rinofaringitis");
    create(&app, &other.medic, &body);

    let resp = app.get("/api/v2/rx-endpoint/", s.medic.token());
    assert_eq!(resp.status, 200);
    let page = resp.json();
    assert_eq!(page["count"], 3);
    let ids: Vec<i64> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    let mut newest_first: Vec<i64> = created.iter().map(|r| r["id"].as_i64().unwrap()).collect();
    newest_first.reverse();
    assert_eq!(ids, newest_first);
    let first = &page["results"][0];
    assert!(
        first["hospital"].is_object()
            && first["status"].is_object()
            && first["patient"]["gender"].is_string()
    );
    assert_eq!(first["medications"].as_array().unwrap().len(), 1);

    let page = app
        .get("/api/v2/rx-endpoint/?limit=2", s.medic.token())
        .json();
    assert_eq!(page["results"].as_array().unwrap().len(), 2);
    assert!(
        page["next"]
            .as_str()
            .unwrap()
            .ends_with("/api/v2/rx-endpoint/?limit=2&offset=2"),
        "{}",
        page["next"]
    );
    let last = app
        .get("/api/v2/rx-endpoint/?limit=2&offset=2", s.medic.token())
        .json();
    assert_eq!(last["results"].as_array().unwrap().len(), 1);
    assert_eq!(last["count"], 3);
    assert_eq!(last["next"], Value::Null);
    assert!(last["previous"].is_string());
    let past = app
        .get("/api/v2/rx-endpoint/?offset=10", s.medic.token())
        .json();
    assert_eq!(
        (
            past["count"].as_u64(),
            past["results"].as_array().unwrap().len()
        ),
        (Some(3), 0)
    );

    let search = |q: &str| -> Vec<String> {
        let resp = app.get(&format!("/api/v2/rx-endpoint/?search={q}"), s.medic.token());
        assert_eq!(resp.status, 200, "{q}");
        let body = resp.json();
        assert_eq!(
            body["count"].as_u64().unwrap() as usize,
            body["results"].as_array().unwrap().len()
        );
        body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["diagnosis"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(search("fernanda"), ["Dermatitis 50%_off"], "patient name");
    assert_eq!(
        search("mafer%40correo"),
        ["Dermatitis 50%_off"],
        "patient email"
    );
    assert_eq!(
        search("paciente.rx-list"),
        ["Gastritis", "Rinofaringitis"],
        "patient email"
    );
    assert_eq!(search("GASTRI"), ["Gastritis"], "diagnosis, any case");
    assert_eq!(search("%25_"), ["Dermatitis 50%_off"], "% and _ literally");
    assert_eq!(search("t_s"), Vec::<String>::new(), "_ is not a wildcard");
    // The search tests the three fields joined by U+001F in one `LIKE` (migration 0019): no match
    // across two fields, and a term cannot hold the separator.
    assert_eq!(
        search("Ortiz%20mafer"),
        Vec::<String>::new(),
        "not across fields"
    );
    let resp = app.get("/api/v2/rx-endpoint/?search=Ortiz%1Fmafer", s.medic.token());
    assert_eq!(resp.status, 400, "{}", resp.text());
    // The total comes from the page when the page is not full, from a count when it is.
    let counted = |q: &str| -> (u64, usize) {
        let body = app
            .get(&format!("/api/v2/rx-endpoint/?{q}"), s.medic.token())
            .json();
        (
            body["count"].as_u64().unwrap(),
            body["results"].as_array().unwrap().len(),
        )
    };
    assert_eq!(counted("search=paciente.rx-list&limit=1"), (2, 1));
    assert_eq!(counted("search=paciente.rx-list&limit=1&offset=1"), (2, 1));
    assert_eq!(counted("search=paciente.rx-list&offset=1"), (2, 1));
    assert_eq!(counted("search=paciente.rx-list&offset=5"), (2, 0));
    assert_eq!(counted("search=nadie"), (0, 0));
    assert_eq!(
        search("%27%3B%20DROP%20TABLE%20prescriptions%3B%20--"),
        Vec::<String>::new()
    );
    assert_eq!(search("Rinofaringitis").len(), 1, "not the other medic's");
    assert_eq!(
        app.get("/api/v2/rx-endpoint/", other.medic.token()).json()["count"],
        1
    );
    for bad in ["limit=-1", "offset=x", "limit=0"] {
        assert_eq!(
            app.get(&format!("/api/v2/rx-endpoint/?{bad}"), s.medic.token())
                .status,
            400,
            "{bad}"
        );
    }
}

#[test]
fn bad_input_is_a_4xx_in_the_spec_shape_never_a_500() {
    let app = spawn_app();
    let s = setup(&app, "rx-bad@example.mx");
    let token = s.medic.token();
    let mut bodies: Vec<(String, Vec<u8>)> = vec![
        ("malformed".into(), b"{\"patient\":".to_vec()),
        ("an array".into(), b"[1,2,3]".to_vec()),
        ("a string".into(), b"\"rx\"".to_vec()),
        ("empty".into(), Vec::new()),
        (
            "not utf-8".into(),
            b"{\"diagnosis\": \"\xff\xfe\"}".to_vec(),
        ),
    ];
    let mut with = |name: &str, f: &dyn Fn(&mut Value)| {
        let mut body = s.body();
        f(&mut body);
        bodies.push((name.into(), serde_json::to_vec(&body).unwrap()));
    };
    with("huge diagnosis", &|b| {
        b["diagnosis"] = json!("x".repeat(5000))
    });
    with("huge extras", &|b| b["extras"] = json!("ñ".repeat(5000)));
    with("huge instructions", &|b| {
        b["medications"][0]["instructions"] = json!("x".repeat(5000))
    });
    with("huge upc", &|b| {
        b["medications"][0]["drug_upc"] = json!("7".repeat(100))
    });
    with("huge clinic", &|b| b["clinic"] = json!("c".repeat(1000)));
    with("hospital overflow", &|b| b["hospital"] = json!(u64::MAX));
    with("hospital negative", &|b| b["hospital"] = json!(-1));
    with("medications object", &|b| {
        b["medications"] = json!({"0": {}})
    });
    with("medication null", &|b| b["medications"] = json!([null]));
    with("qty overflow", &|b| {
        b["medications"][0]["qty"] = json!(u64::MAX)
    });
    with("qty bool", &|b| b["medications"][0]["qty"] = json!(true));
    with("send_rx text", &|b| b["send_rx"] = json!("sí"));
    with("nested patient", &|b| {
        b["patient"] = json!({"uid": {"uid": "x"}})
    });
    with("injection patient", &|b| {
        b["patient"] = json!({"uid": "x' OR '1'='1"})
    });
    for (name, body) in &bodies {
        let resp = app.raw(
            "POST",
            "/api/v2/rx-endpoint/",
            token,
            Some(("application/json", body)),
        );
        assert!(
            (400..500).contains(&resp.status),
            "{name}: {} {}",
            resp.status,
            resp.text()
        );
        assert!(resp.json().is_object(), "{name}: {}", resp.text());
    }
    let mut big = s.body();
    big["diagnosis"] = json!("x".repeat(1_100_000));
    assert_eq!(app.post("/api/v2/rx-endpoint/", token, &big).status, 413);

    // Text that looks like SQL or HTML is stored and returned as text.
    let mut body = s.body();
    body["diagnosis"] = json!("'); DROP TABLE prescriptions; -- <script>alert(1)</script>");
    body["medications"][0]["presentation"] = json!("50% \\ _ \" '");
    let rx = create(&app, &s.medic, &body);
    assert_eq!(rx["diagnosis"], body["diagnosis"]);
    assert_eq!(rx["medications"][0]["presentation"], "50% \\ _ \" '");
    assert_eq!(app.get("/api/v2/rx-endpoint/", token).json()["count"], 1);
    assert!(!app.log().contains("internal error"), "{}", app.log());
}

#[test]
fn fifty_concurrent_creates_make_fifty_distinct_prescriptions() {
    let app = spawn_app();
    let s = setup(&app, "rx-concurrent@example.mx");
    let body = s.body();
    let signatures = concurrently(10, 5, |_| {
        let resp = app.post("/api/v2/rx-endpoint/", s.medic.token(), &body);
        assert_eq!(resp.status, 200, "{}", resp.text());
        resp.json()["signature"].as_str().unwrap().to_string()
    });
    assert_eq!(signatures.len(), 50);
    assert_eq!(
        signatures.iter().collect::<HashSet<_>>().len(),
        50,
        "50 distinct signatures"
    );
    assert_eq!(
        app.get("/api/v2/rx-endpoint/", s.medic.token()).json()["count"],
        50
    );
    for table in [
        "prescriptions",
        "medications",
        "prescription_documents",
        "outbox",
    ] {
        assert_eq!(count(&app, table), 50, "{table}");
    }
    let log = app.log();
    assert!(
        !log.contains("database is locked") && !log.contains("internal error"),
        "{log}"
    );
}
