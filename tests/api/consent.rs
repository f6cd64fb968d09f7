//! A medication history shared only with consent (issue 72, docs/patients.md): the patient gives
//! and withdraws consents on their page (JSON or the page's forms); a medic reads the person's
//! prescriptions from other medics only while a consent names them or their hospital; each read is
//! in the patient's access log; the history is valid FHIR too; and a create warns of a medication
//! with the same active ingredient as another medic's active prescription.

use serde_json::{Value, json};

use crate::fixtures::{
    ANA, BETO, Practice, medication_history, page_json, prescribe, prescribed_for,
};
use crate::helpers::{TestApp, assert_message, field_errors, spawn_app};

/// The folios the history lists (it names prescriptions by folio, never by signature).
fn history_signatures(app: &TestApp, p: &Practice) -> Vec<String> {
    let resp = medication_history(app, p);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let json = resp.json();
    assert_eq!(
        json["count"],
        json!(json["results"].as_array().unwrap().len())
    );
    json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["folio"].as_str().unwrap().to_string())
        .collect()
}

fn folio(signature: &str) -> String {
    signature[..12].to_string()
}

#[test]
fn a_history_needs_a_standing_consent_and_every_read_is_logged() {
    let app = spawn_app();
    let mut a = Practice::new(&app, "historia-a@example.mx", "Clínica Historia A");
    let mut b = Practice::new(&app, "historia-b@example.mx", "Clínica Historia B");
    let mut c = Practice::new(&app, "historia-c@example.mx", "Clínica Historia C");
    let from_a = prescribed_for(&app, &mut a, ANA);
    let from_b = prescribed_for(&app, &mut b, ANA);
    let _other_person = prescribed_for(&app, &mut c, BETO);

    // Without consent: 403, saying how the patient gives it.
    let refused = medication_history(&app, &b);
    assert_message(&refused, 403);
    assert!(refused.json()["message"].as_str().unwrap().contains("/rx/"));

    // The patient allows medic B on the page of A's prescription (JSON).
    let consents = format!("/rx/{from_a}/consents");
    let given = page_json(&app, "POST", &consents, Some(&json!({"medic": b.medic.id})));
    assert_eq!(given.status, 201, "{}", given.text());
    let consent = given.json();
    assert_eq!(consent["medic"], json!(b.medic.id));
    assert_eq!(consent["hospital"], Value::Null);
    assert_eq!(consent["given_via"], "page_json");
    assert_eq!(consent["given_on"], json!(folio(&from_a)));
    assert_eq!(consent["given_here"], json!(true));
    assert_eq!(consent["withdrawn_at"], Value::Null);
    let again = page_json(&app, "POST", &consents, Some(&json!({"medic": b.medic.id})));
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["id"], consent["id"]);

    // B now sees A's prescription (not its own, not another person's), without the diagnosis.
    assert_eq!(history_signatures(&app, &b), vec![folio(&from_a)]);
    let entry = &medication_history(&app, &b).json()["results"][0];
    assert!(entry.get("diagnosis").is_none());
    assert_eq!(entry["rx_status"], json!(["available", "Disponible"]));
    assert_eq!(entry["medications"].as_array().unwrap().len(), 2);
    // Medic A, whom nobody named, still cannot.
    assert_message(&medication_history(&app, &a), 403);

    // The patient sees B's reads on A's prescription.
    let log = app
        .get(
            &format!("/api/v2/rx/patient-landing/{from_a}/"),
            a.medic.token(),
        )
        .json()["rx"]["access_log"]
        .clone();
    let b_name = app
        .get(&format!("/api/v2/medics/{}", b.medic.id), b.medic.token())
        .json()["name"]
        .as_str()
        .unwrap()
        .to_string();
    let reads: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "read" && e["name"] == json!(b_name))
        .collect();
    assert!(reads.len() >= 2, "{log:#?}");
    assert!(reads[0]["text"].as_str().unwrap().contains(&b_name));

    // The same history as FHIR R4, valid for an independent validator.
    let uid = b.patient["uid"].as_str().unwrap();
    let fhir = app.get(
        &format!("/api/v2/patient/{uid}/medication-history/fhir/"),
        b.medic.token(),
    );
    assert_eq!(fhir.status, 200, "{}", fhir.text());
    assert_eq!(fhir.header("content-type"), Some("application/fhir+json"));
    crate::fixtures::validate(&fhir.body).unwrap_or_else(|e| panic!("{e}\n{}", fhir.text()));
    let text = fhir.text();
    assert!(text.contains(&folio(&from_a)) && !text.contains(&from_a) && !text.contains(&from_b));

    // Listed on the pages of the record it was given on, not on another record's (B's record
    // proved nothing of A's); withdrawn there, and the history closes again.
    let listed = page_json(&app, "GET", &format!("/rx/{from_b}/consents"), None).json();
    assert_eq!(listed["consents"], json!([]));
    assert_eq!(listed["issuing_medic"]["id"], json!(b.medic.id));
    let id = consent["id"].as_i64().unwrap();
    assert_message(
        &page_json(&app, "DELETE", &format!("/rx/{from_b}/consents/{id}"), None),
        404,
    );
    let withdrawn = page_json(&app, "DELETE", &format!("{consents}/{id}"), None);
    assert_eq!(withdrawn.status, 200, "{}", withdrawn.text());
    assert!(withdrawn.json()["withdrawn_at"].is_string());
    assert_message(&medication_history(&app, &b), 403);
    // Kept as the record that it existed.
    let listed = page_json(&app, "GET", &consents, None).json();
    assert!(listed["consents"][0]["withdrawn_at"].is_string());

    // Every medic of B's hospital, through the page's form: back to the page, and open again.
    let form = format!("hospital={}", b.hospital);
    let resp = app.raw(
        "POST",
        &consents,
        None,
        Some(("application/x-www-form-urlencoded", form.as_bytes())),
    );
    assert_eq!(resp.status, 303, "{}", resp.text());
    assert_eq!(
        resp.header("location"),
        Some(format!("/rx/{from_a}/consents").as_str())
    );
    assert_eq!(history_signatures(&app, &b), vec![folio(&from_a)]);
    let page = app.get(&consents, None);
    assert!(page.text().contains("Retirar permiso"), "{}", page.text());
}

#[test]
fn consents_refuse_what_names_nobody_and_records_without_a_person() {
    let app = spawn_app();
    let mut a = Practice::new(&app, "permiso@example.mx", "Clínica Permiso");
    let sig = prescribed_for(&app, &mut a, ANA);
    let consents = format!("/rx/{sig}/consents");
    field_errors(&page_json(&app, "POST", &consents, Some(&json!({}))));
    field_errors(&page_json(
        &app,
        "POST",
        &consents,
        Some(&json!({"medic": 999_999})),
    ));
    field_errors(&page_json(
        &app,
        "POST",
        &consents,
        Some(&json!({"medic": a.medic.id, "hospital": a.hospital})),
    ));
    assert_message(
        &page_json(
            &app,
            "GET",
            &format!("/rx/{}/consents", "1".repeat(64)),
            None,
        ),
        404,
    );
    assert_message(
        &page_json(&app, "DELETE", &format!("{consents}/999999"), None),
        404,
    );
    let free = prescribed_for(&app, &mut a, "ABCTEST");
    assert_message(
        &page_json(&app, "GET", &format!("/rx/{free}/consents"), None),
        409,
    );
    // A record without a valid CURP has no history to share; another medic's patient is 404.
    assert_message(&medication_history(&app, &a), 403);
    let stranger = Practice::new(&app, "ajeno-h@example.mx", "Clínica Ajena");
    let uid = a.patient["uid"].as_str().unwrap();
    assert_message(
        &app.get(
            &format!("/api/v2/patient/{uid}/medication-history/"),
            stranger.medic.token(),
        ),
        404,
    );
}

#[test]
fn a_create_warns_of_the_same_active_ingredient_only_with_consent() {
    let app = spawn_app();
    let mut a = Practice::new(&app, "aviso-a@example.mx", "Clínica Aviso A");
    let mut b = Practice::new(&app, "aviso-b@example.mx", "Clínica Aviso B");
    let from_a = prescribed_for(&app, &mut a, ANA);
    let _ = prescribed_for(&app, &mut b, ANA);
    // Without consent: no warning, but the list is there.
    let rx = prescribe(&app, &b);
    assert_eq!(rx["warnings"], json!([]));

    let given = page_json(
        &app,
        "POST",
        &format!("/rx/{from_a}/consents"),
        Some(&json!({"medic": b.medic.id})),
    );
    assert_eq!(given.status, 201);
    let rx = prescribe(&app, &b);
    let warnings = rx["warnings"].as_array().unwrap();
    let amoxicillin: Vec<&Value> = warnings
        .iter()
        .filter(|w| {
            w["ingredient"] == "amoxicilina" && w["other"]["folio"] == json!(folio(&from_a))
        })
        .collect();
    assert_eq!(amoxicillin.len(), 1, "{warnings:#?}");
    let w = amoxicillin[0];
    assert_eq!(w["code"], "same_active_ingredient");
    assert_eq!(w["medication"], rx["medications"][0]["id"]);
    assert!(w["message"].as_str().unwrap().contains("amoxicilina"));
    // The paracetamol is shared too; nothing else.
    assert!(
        warnings
            .iter()
            .all(|w| w["ingredient"] == "amoxicilina" || w["ingredient"] == "paracetamol")
    );
}
