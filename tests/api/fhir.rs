//! FHIR R4 views (issue 62): `GET /api/v2/rx-endpoint/<signature>/fhir/` and the pharmacy's
//! `GET /api/v2/pharmacy/rx/<signature>/fhir/`, `application/fhir+json` `Bundle`s, each validated
//! by a third-party library, PyPI `fhir.resources` (its R4B models, pydantic), not by the
//! project's own schema; and the validator shown to fail on a broken copy.

use serde_json::{Value, json};

use crate::fixtures::{Practice, TestPharmacy, later, register, signature, validate};
use crate::helpers::{TestApp, spawn_app};

/// The medic's bundle of `sig`, validated; parsed.
fn bundle(app: &TestApp, p: &Practice, sig: &str) -> Value {
    let resp = app.get(&format!("/api/v2/rx-endpoint/{sig}/fhir/"), p.medic.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.header("content-type"), Some("application/fhir+json"));
    let entries = validate(&resp.body).unwrap_or_else(|e| panic!("{e}\n{}", resp.text()));
    let bundle = resp.json();
    assert_eq!(bundle["entry"].as_array().unwrap().len(), entries);
    bundle
}

fn resources<'a>(bundle: &'a Value, kind: &str) -> Vec<&'a Value> {
    bundle["entry"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["resource"])
        .filter(|r| r["resourceType"] == kind)
        .collect()
}

fn statuses(bundle: &Value) -> Vec<String> {
    resources(bundle, "MedicationRequest")
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect()
}

/// Two medications, the first a catalog product (a GTIN), the second not substitutable.
fn prescribe(app: &TestApp, p: &Practice, extra: Value) -> (String, i64, i64) {
    let mut body = json!({
        "hospital": p.hospital,
        "patient": {"uid": p.patient["uid"]},
        "diagnosis": "Hipertensión",
        "medications": [
            {"presentation": "Paracetamol 500 mg", "instructions": "1 c/8 h", "qty": 2, "drug_upc": "2000000000015"},
            {"presentation": "Losartán 50 mg (Cozaar)", "instructions": "1 diaria", "qty": 1, "substitution_allowed": false},
        ],
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let resp = app.post("/api/v2/rx-endpoint/", p.medic.token(), &body);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let rx = resp.json();
    let id = |i: usize| rx["medications"][i]["id"].as_i64().unwrap();
    (signature(&rx), id(0), id(1))
}

fn burn(app: &TestApp, ph: &TestPharmacy, sig: &str, items: Value) {
    let resp = app.post(
        &format!("/api/v1/prescriptions/burn/{sig}"),
        ph.token(),
        &json!({"sales_code": "F-1", "medications": items}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
}

#[test]
fn available_partly_dispensed_and_cancelled_prescriptions_are_valid_fhir_bundles() {
    let app = spawn_app();
    let p = Practice::new(&app, "fhir@example.mx", "Clínica Interoperable");
    let ph = register(&app, "Farmacia FHIR");

    // Available: one MedicationRequest per medication, the parties, nothing dispensed.
    let (sig, para, losartan) = prescribe(&app, &p, json!({}));
    let available = bundle(&app, &p, &sig);
    assert_eq!(available["type"], "collection");
    assert_eq!(statuses(&available), ["active", "active"]);
    for kind in ["Patient", "Practitioner", "Organization"] {
        assert_eq!(resources(&available, kind).len(), 1, "{kind}");
    }
    let requests = resources(&available, "MedicationRequest");
    assert_eq!(requests[0]["intent"], "order");
    assert_eq!(requests[0]["dispenseRequest"]["numberOfRepeatsAllowed"], 0);
    assert_eq!(
        requests[0]["medicationCodeableConcept"]["coding"][0]["code"],
        "02000000000015"
    );
    assert_eq!(requests[1]["substitution"]["allowedBoolean"], false);
    assert!(resources(&available, "MedicationDispense").is_empty());

    // Partly dispensed: two sales, the second with a lot and a substitute.
    burn(&app, &ph, &sig, json!([{"id": losartan, "bought_qty": 1}]));
    burn(
        &app,
        &ph,
        &sig,
        json!([{"id": para, "bought_qty": 1, "gtin": "7501055300075", "lot": "LP-22", "expiry": "2031-05-31", "substituted": true, "substitution_reason": "Sin existencia de la marca"}]),
    );
    let partly = bundle(&app, &p, &sig);
    let dispenses = resources(&partly, "MedicationDispense");
    assert_eq!(dispenses.len(), 2);
    let substituted = dispenses
        .iter()
        .find(|d| d["substitution"]["wasSubstituted"] == true)
        .unwrap();
    assert_eq!(
        substituted["authorizingPrescription"][0]["reference"],
        format!("MedicationRequest/rx-{para}")
    );
    let product = resources(&partly, "Medication")[0];
    assert_eq!(product["batch"]["lotNumber"], "LP-22");
    assert_eq!(product["batch"]["expirationDate"], "2031-05-31");
    assert_eq!(product["code"]["coding"][0]["code"], "07501055300075");
    assert_eq!(
        resources(&partly, "Organization").len(),
        2,
        "the hospital and the pharmacy"
    );

    // The pharmacy's view: the same bundle, logged as a lookup.
    let resp = app.get(&format!("/api/v2/pharmacy/rx/{sig}/fhir/"), ph.token());
    assert_eq!(resp.status, 200, "{}", resp.text());
    validate(&resp.body).unwrap();
    assert_eq!(
        app.get(
            &format!("/api/v2/pharmacy/rx/{}/fhir/", "0".repeat(64)),
            ph.token()
        )
        .status,
        404
    );

    // Cancelled.
    let (cancelled, _, _) = prescribe(&app, &p, json!({}));
    let resp = app.post(
        &format!("/api/v2/rx-endpoint/{cancelled}/cancel/"),
        p.medic.token(),
        &json!({"reason": "Error de captura"}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        statuses(&bundle(&app, &p, &cancelled)),
        ["cancelled", "cancelled"]
    );

    // Another medic cannot read it; a broken copy fails the validator.
    let other = app.create_medic("fhir-otro@example.mx");
    assert_eq!(
        app.get(
            &format!("/api/v2/rx-endpoint/{sig}/fhir/"),
            Some(&other.token)
        )
        .status,
        404
    );
    let mut broken = partly.clone();
    let request = broken["entry"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["resource"]["resourceType"] == "MedicationRequest")
        .unwrap();
    request["resource"]
        .as_object_mut()
        .unwrap()
        .remove("status");
    let e = validate(broken.to_string().as_bytes()).unwrap_err();
    assert!(e.contains("status"), "{e}");
}

#[test]
fn an_expired_prescription_is_a_stopped_request() {
    let app = spawn_app();
    let p = Practice::new(&app, "fhir-vencida@example.mx", "Clínica Vencida");
    let (sig, _, _) = prescribe(&app, &p, json!({"valid_days": 1}));
    // Three days later (the host's test clock), its validity is over.
    let app = later(app, 3 * 24 * 3600);
    assert_eq!(statuses(&bundle(&app, &p, &sig)), ["stopped", "stopped"]);
}

/// Every identifier `value` of a bundle's resources of `kind`.
fn identifiers(bundle: &Value, kind: &str) -> Vec<String> {
    resources(bundle, kind)
        .iter()
        .flat_map(|r| r["identifier"].as_array().cloned().unwrap_or_default())
        .map(|i| i["value"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_pharmacy_sees_neither_a_hidden_diagnosis_nor_a_national_identifier() {
    // A valid CURP (python-stdnum): only a valid one is a FHIR identifier (docs/patients.md).
    const PATIENT_CURP: &str = "LOMM850228MDFPRR01";
    const MEDIC_RFC: &str = "HEGT7610034S2";
    const MEDIC_CURP: &str = "SABC560626MDFLRN01";
    let app = spawn_app();
    let mut p = Practice::new(&app, "reserva@example.mx", "Clínica Reserva");
    let resp = app.patch(
        &format!("/api/v2/medics/{}/", p.medic.id),
        p.medic.token(),
        &json!({"rfc": MEDIC_RFC, "curp": MEDIC_CURP}),
    );
    assert_eq!(resp.status, 202, "{}", resp.text());
    let resp = app.post(
        "/api/v2/patient/",
        p.medic.token(),
        &json!({"name": "Marta López", "date_of_birth": "1985-02-28", "curp": PATIENT_CURP}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    p.patient = resp.json();
    let ph = register(&app, "Farmacia Reserva");

    for show in [false, true] {
        let (sig, para, _) = prescribe(&app, &p, json!({"show_diagnosis": show}));
        let shown = if show { "Hipertensión" } else { "" };
        // The JSON lookup and a burn's answer: the diagnosis only as the medic chose, the field
        // always there as a string.
        let found = app.get(&format!("/api/v2/pharmacy/rx/{sig}"), ph.token());
        assert_eq!(found.status, 200, "{}", found.text());
        assert_eq!(found.json()["diagnosis"], json!(shown), "{}", found.text());
        let sold = app.post(
            &format!("/api/v1/prescriptions/burn/{sig}"),
            ph.token(),
            &json!({"sales_code": "R-1", "medications": [{"id": para, "bought_qty": 1}]}),
        );
        assert_eq!(sold.status, 200, "{}", sold.text());
        assert_eq!(sold.json()["diagnosis"], json!(shown), "{}", sold.text());
        // The medic still reads it.
        let detail = app.get(&format!("/api/v2/rx-endpoint/{sig}/"), p.medic.token());
        assert_eq!(detail.json()["diagnosis"], json!("Hipertensión"));
        let lookup_text = found.text();
        for national in [PATIENT_CURP, MEDIC_RFC, MEDIC_CURP] {
            assert!(!lookup_text.contains(national), "{national} in the lookup");
        }

        // The pharmacy's bundle: valid FHIR, no identifier its lookup does not show.
        let resp = app.get(&format!("/api/v2/pharmacy/rx/{sig}/fhir/"), ph.token());
        assert_eq!(resp.status, 200, "{}", resp.text());
        validate(&resp.body).unwrap_or_else(|e| panic!("{e}\n{}", resp.text()));
        let theirs = resp.json();
        let text = resp.text();
        for hidden in [
            PATIENT_CURP,
            MEDIC_RFC,
            MEDIC_CURP,
            "Hipertensión",
            "12345678",
        ] {
            assert!(!text.contains(hidden), "{hidden} in the pharmacy's bundle");
        }
        assert_eq!(
            identifiers(&theirs, "Patient"),
            [p.patient["uid"].as_str().unwrap()]
        );
        assert!(identifiers(&theirs, "Practitioner").is_empty());
        for kind in [
            "Patient",
            "Practitioner",
            "Organization",
            "MedicationRequest",
        ] {
            for value in identifiers(&theirs, kind) {
                assert!(
                    lookup_text.contains(&value),
                    "{kind} {value} not in the lookup"
                );
            }
        }

        // The medic's bundle keeps every identifier on record.
        let mine = bundle(&app, &p, &sig);
        let patient_ids = identifiers(&mine, "Patient");
        assert!(
            patient_ids.contains(&PATIENT_CURP.to_string()),
            "{patient_ids:?}"
        );
        let medic_ids = identifiers(&mine, "Practitioner");
        for id in [MEDIC_RFC, MEDIC_CURP, "12345678"] {
            assert!(medic_ids.contains(&id.to_string()), "{id}: {medic_ids:?}");
        }
    }
}
