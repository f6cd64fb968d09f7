//! A prescription as an HL7 FHIR R4 (4.0.1) `Bundle` (docs/fhir.md): a `MedicationRequest` per
//! medication, the `Patient`, the `Practitioner`, the `Organization` (hospital), and per sale a
//! `MedicationDispense` per item with its pharmacy (`Organization`) and, when the pharmacy said
//! what it handed over, the `Medication` (GTIN, lot, expiry, serial), and per pharmacy status a
//! `Task` (as the NHS Prescription Status Update API). Shared by the medic's view
//! and the pharmacy's; each route authorizes and logs before it builds.

use serde_json::{Map, Value, json};

use common::codes::{Coded, Gender, Labelled, RxState};
use common::db::Db;
use common::types::Error;

use crate::bindings::catalog;
use crate::bindings::prescriptions::{
    self, DispensedItem, EfirmaStatus, LifecycleEvent, Medication, Prescription, StatusUpdate,
};
use crate::http::{self, Response};

/// The media type of FHIR's JSON format.
pub const FHIR_JSON: &str = "application/fhir+json";

/// The identifier systems (docs/fhir.md): the service's own, under one base.
const SID: &str = "https://receta.mx/fhir/sid";
/// GS1's GTIN, as FHIR implementation guides name it.
const GTIN: &str = "https://www.gs1.org/gtin";

/// Who reads a bundle, which decides the people's identifiers it carries (docs/fhir.md, "What a
/// pharmacy sees").
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The issuing medic or the API admin: every identifier on record (the patient's CURP, the
    /// medic's id, cédulas, RFC and CURP).
    Prescriber,
    /// A pharmacy holding the signature: only the identifiers its JSON lookup shows (the patient's
    /// `uid`; the hospital's, the medications' and the sales' ids; GTINs). No national identifier
    /// (CURP, RFC) of anyone, and none of the medic's: the pharmacy checks the prescriber's cédula
    /// at the public `GET /api/v2/verify/<signature>`.
    Pharmacy,
}

/// The bundle of `rx` (already read for its caller), as a 200 `application/fhir+json`.
pub fn respond(rx: &Prescription, audience: Audience) -> Result<Response, Error> {
    let db = Db::open()?;
    let source = prescriptions::get_fhir_source(db.lend().as_deref(), &rx.signature)?;
    let document: Value = serde_json::from_str(&source.document).unwrap_or(Value::Null);
    // RFC and CURP as registered now (they are not in the signed snapshot).
    let ids = match audience {
        Audience::Prescriber => Some(catalog::medic_identifiers(rx.medic_id)),
        Audience::Pharmacy => None,
    };
    let bundle = bundle(rx, &document, &source.dispenses, ids, &http::base_url());
    let body = serde_json::to_vec(&bundle).map_err(|e| Error::Internal(e.to_string()))?;
    Ok(Response::bytes(200, FHIR_JSON, body))
}

/// The bundle: `document` is the signed snapshot (names at issue), `dispenses` every sale;
/// `medic_ids` the medic's RFC and CURP for a prescriber's bundle, `None` for a pharmacy's (which
/// carries neither these nor any other identifier of a person but the patient's `uid`).
pub fn bundle(
    rx: &Prescription,
    document: &Value,
    dispenses: &[LifecycleEvent],
    medic_ids: Option<(Option<String>, Option<String>)>,
    base_url: &str,
) -> Value {
    let text = |path: &str| field(document, path);
    let patient_id = format!("patient-{}", rx.patient.uid);
    let medic_id = format!("medic-{}", rx.medic_id);
    let hospital_id = format!("hospital-{}", rx.hospital.id);
    let curp = match medic_ids {
        Some(_) => text("/patient/curp"),
        None => "",
    };
    let mut entries = vec![
        patient(rx, &patient_id, curp),
        practitioner(&medic_id, rx.medic_id, document, medic_ids),
        organization(
            &hospital_id,
            "hospital",
            rx.hospital.id,
            text("/hospital/name"),
            address(text("/hospital/location"), text("/hospital/zip_code")),
        ),
    ];
    for m in &rx.medications {
        entries.push(request(rx, m, &patient_id, &medic_id));
    }
    let mut pharmacies = Vec::new();
    for event in dispenses {
        let Some(pharmacy) = &event.pharmacy else {
            continue;
        };
        let pharmacy_id = format!("pharmacy-{}", pharmacy.id);
        if !pharmacies.contains(&pharmacy_id) {
            entries.push(organization(
                &pharmacy_id,
                "pharmacy",
                pharmacy.id,
                &pharmacy.name,
                None,
            ));
            pharmacies.push(pharmacy_id.clone());
        }
        for item in &event.items {
            let prescribed = rx.medications.iter().find(|m| m.id == item.medication);
            let (dispense, product) = dispense(
                event,
                item,
                prescribed,
                &patient_id,
                &pharmacy_id,
                &pharmacy.name,
            );
            entries.extend(product);
            entries.push(dispense);
        }
    }
    for update in &rx.status_updates {
        let pharmacy_id = format!("pharmacy-{}", update.pharmacy.id);
        if !pharmacies.contains(&pharmacy_id) {
            let p = &update.pharmacy;
            entries.push(organization(&pharmacy_id, "pharmacy", p.id, &p.name, None));
            pharmacies.push(pharmacy_id.clone());
        }
        entries.push(task(rx, update, &patient_id, &pharmacy_id));
    }
    let entry: Vec<Value> = entries
        .into_iter()
        .map(|resource| {
            let url = format!(
                "{}/fhir/{}/{}",
                base_url.trim_end_matches('/'),
                resource["resourceType"].as_str().unwrap_or_default(),
                resource["id"].as_str().unwrap_or_default()
            );
            json!({"fullUrl": url, "resource": resource})
        })
        .collect();
    let now = common::time::now_iso8601();
    json!({
        "resourceType": "Bundle",
        "id": rx.signature,
        "meta": {"lastUpdated": now},
        "identifier": {"system": format!("{SID}/rx-signature"), "value": rx.signature},
        "type": "collection",
        "timestamp": now,
        "entry": entry,
    })
}

/// `MedicationRequest.status` of a medication (FHIR R4's request-status codes).
fn status(rx: &Prescription, m: &Medication) -> &'static str {
    match rx.efirma.as_ref().map(|e| e.status) {
        Some(EfirmaStatus::AwaitingSignature) => return "draft",
        Some(EfirmaStatus::Expired) => return "cancelled",
        _ => {}
    }
    match rx.status.rx_status {
        RxState::Cancelled => "cancelled",
        RxState::Rejected | RxState::Expired => "stopped",
        RxState::Dispensed => "completed",
        _ if m.qty_total > 0 && m.bought_qty >= m.qty_total => "completed",
        _ => "active",
    }
}

fn request(rx: &Prescription, m: &Medication, patient: &str, medic: &str) -> Value {
    let mut dispense = Map::new();
    let mut period = Map::new();
    period.insert(
        "start".into(),
        json!(rx.created_at.get(..10).unwrap_or_default()),
    );
    if let Some(until) = &rx.valid_until {
        period.insert("end".into(), json!(until));
    }
    dispense.insert("validityPeriod".into(), Value::Object(period));
    dispense.insert(
        "numberOfRepeatsAllowed".into(),
        json!(rx.fills.saturating_sub(1)),
    );
    dispense.insert("quantity".into(), quantity(m.qty, &m.qty_label));
    json!({
        "resourceType": "MedicationRequest",
        "id": format!("rx-{}", m.id),
        "identifier": [{"system": format!("{SID}/medication-id"), "value": m.id.to_string()}],
        "groupIdentifier": {"system": format!("{SID}/rx-signature"), "value": rx.signature},
        "status": status(rx, m),
        "intent": "order",
        "medicationCodeableConcept": concept(&m.drug_upc, &m.drug, &m.presentation),
        "subject": {"reference": format!("Patient/{patient}")},
        "authoredOn": rx.created_at,
        "requester": {"reference": format!("Practitioner/{medic}")},
        "dosageInstruction": [{"text": nonempty(&m.instructions).unwrap_or("Sin indicaciones")}],
        "dispenseRequest": dispense,
        "substitution": {"allowedBoolean": m.substitution_allowed},
    })
}

/// One sold item: its `MedicationDispense`, and the `Medication` handed over when the pharmacy
/// said which (GTIN, lot, expiry, serial).
fn dispense(
    event: &LifecycleEvent,
    item: &DispensedItem,
    prescribed: Option<&Medication>,
    patient: &str,
    pharmacy: &str,
    pharmacy_name: &str,
) -> (Value, Option<Value>) {
    let id = format!("{}-{}", event.id, item.medication);
    let (upc, drug, presentation) = prescribed.map_or(("", "", ""), |m| {
        (
            m.drug_upc.as_str(),
            m.drug.as_str(),
            m.presentation.as_str(),
        )
    });
    let said = item.gtin.is_some() || item.lot.is_some() || item.expiry.is_some();
    let mut resource = json!({
        "resourceType": "MedicationDispense",
        "id": format!("dispense-{id}"),
        "identifier": [{"system": format!("{SID}/dispense-id"), "value": event.id.to_string()}],
        "status": "completed",
        "subject": {"reference": format!("Patient/{patient}")},
        "performer": [{"actor": {"reference": format!("Organization/{pharmacy}"), "display": pharmacy_name}}],
        "authorizingPrescription": [{"reference": format!("MedicationRequest/rx-{}", item.medication)}],
        "quantity": {"value": item.qty},
        "whenHandedOver": event.created_at,
    });
    let product = if said || item.serial.is_some() {
        let mut batch = Map::new();
        if let Some(lot) = &item.lot {
            batch.insert("lotNumber".into(), json!(lot));
        }
        if let Some(expiry) = &item.expiry {
            batch.insert("expirationDate".into(), json!(expiry));
        }
        let code = item.gtin.as_deref().unwrap_or(upc);
        let mut medication = json!({
            "resourceType": "Medication",
            "id": format!("product-{id}"),
            "code": concept(code, drug, presentation),
        });
        if !batch.is_empty() {
            medication["batch"] = Value::Object(batch);
        }
        if let Some(serial) = &item.serial {
            medication["identifier"] =
                json!([{"system": format!("{SID}/serial"), "value": serial}]);
        }
        resource["medicationReference"] = json!({"reference": format!("Medication/product-{id}")});
        Some(medication)
    } else {
        resource["medicationCodeableConcept"] = concept(upc, drug, presentation);
        None
    };
    let mut substitution = json!({"wasSubstituted": item.substituted});
    if let Some(reason) = item.substitution_reason.as_deref().and_then(nonempty) {
        substitution["reason"] = json!([{"text": reason}]);
    }
    resource["substitution"] = substitution;
    (resource, product)
}

fn patient(rx: &Prescription, id: &str, curp: &str) -> Value {
    let p = &rx.patient;
    let mut identifier = vec![json!({"system": format!("{SID}/patient-uid"), "value": p.uid})];
    // Only a valid CURP is an identifier (docs/patients.md); free text in `curp` is not.
    if let Some(curp) = common::curp::Curp::parse(curp) {
        identifier.push(json!({"system": format!("{SID}/curp"), "value": curp.as_str()}));
    }
    let mut resource = json!({
        "resourceType": "Patient",
        "id": id,
        "identifier": identifier,
        "name": [{"text": nonempty(&p.name).unwrap_or("Paciente")}],
        "gender": match p.gender {
            Gender::F => "female",
            Gender::O => "other",
            Gender::M | Gender::H => "male",
        },
    });
    let telecom: Vec<Value> = [("email", &p.email), ("phone", &p.phone)]
        .into_iter()
        .filter_map(|(system, v)| nonempty(v).map(|v| json!({"system": system, "value": v})))
        .collect();
    if !telecom.is_empty() {
        resource["telecom"] = json!(telecom);
    }
    if common::time::Date::parse(&p.date_of_birth).is_some() {
        resource["birthDate"] = json!(p.date_of_birth);
    }
    resource
}

/// A text field of the signed document, `""` when absent.
fn field<'a>(document: &'a Value, path: &str) -> &'a str {
    document.pointer(path).and_then(Value::as_str).unwrap_or("")
}

/// The medic; with `ids` (a prescriber's bundle) its id, cédulas, RFC and CURP as identifiers,
/// without (a pharmacy's) none.
fn practitioner(
    id: &str,
    medic: i64,
    document: &Value,
    ids: Option<(Option<String>, Option<String>)>,
) -> Value {
    let text = |path: &str| field(document, path);
    let mut resource = json!({
        "resourceType": "Practitioner",
        "id": id,
        "name": [{"text": nonempty(text("/medic/name")).unwrap_or("Médico")}],
    });
    if let Some((rfc, curp)) = &ids {
        let mut identifier =
            vec![json!({"system": format!("{SID}/medic-id"), "value": medic.to_string()})];
        for (system, value) in [
            ("cedula-profesional", nonempty(text("/medic/cedula_prof"))),
            ("rfc", rfc.as_deref()),
            ("curp", curp.as_deref()),
        ] {
            if let Some(value) = value.and_then(nonempty) {
                identifier.push(json!({"system": format!("{SID}/{system}"), "value": value}));
            }
        }
        resource["identifier"] = json!(identifier);
    }
    if let Some(specialty) = nonempty(text("/medic/specialty")) {
        let mut qualification = json!({"code": {"text": specialty}});
        if let Some(number) = nonempty(text("/medic/specialty_no")).filter(|_| ids.is_some()) {
            qualification["identifier"] =
                json!([{"system": format!("{SID}/cedula-especialidad"), "value": number}]);
        }
        resource["qualification"] = json!([qualification]);
    }
    resource
}

/// A pharmacy's status as a FHIR R4 `Task`, as the NHS Prescription Status Update API carries it:
/// `businessStatus` the code (and the Spanish label and sentence), `status` `completed` for
/// `dispatched`, `collected` and `not_dispensed`, `in-progress` otherwise; `basedOn` the
/// prescription's `MedicationRequest`s, `owner` the pharmacy, `statusReason` the reason of a
/// `not_dispensed`, `input` the pickup code.
fn task(rx: &Prescription, u: &StatusUpdate, patient: &str, pharmacy: &str) -> Value {
    use common::codes::PharmacyStatus::*;
    let status = match u.status {
        Dispatched | Collected | NotDispensed => "completed",
        _ => "in-progress",
    };
    let based_on: Vec<Value> = rx
        .medications
        .iter()
        .map(|m| json!({"reference": format!("MedicationRequest/rx-{}", m.id)}))
        .collect();
    let mut resource = json!({
        "resourceType": "Task",
        "id": format!("status-{}", u.id),
        "identifier": [{"system": format!("{SID}/pharmacy-status-id"), "value": u.id.to_string()}],
        "basedOn": based_on,
        "groupIdentifier": {"system": format!("{SID}/rx-signature"), "value": rx.signature},
        "status": status,
        "businessStatus": {
            "coding": [{
                "system": format!("{SID}/pharmacy-status"),
                "code": u.status.code(),
                "display": u.status.label(),
            }],
            "text": crate::views::status_json::sentence(u),
        },
        "intent": "order",
        "for": {"reference": format!("Patient/{patient}")},
        "owner": {"reference": format!("Organization/{pharmacy}")},
        "lastModified": u.created_at,
    });
    if let Some(reason) = &u.reason {
        resource["statusReason"] = json!({"text": reason});
    }
    if let Some(code) = &u.pickup_code {
        resource["input"] = json!([{"type": {"text": "pickup_code"}, "valueString": code}]);
    }
    resource
}

fn organization(id: &str, kind: &str, key: i64, name: &str, address: Option<Value>) -> Value {
    let mut resource = json!({
        "resourceType": "Organization",
        "id": id,
        "identifier": [{"system": format!("{SID}/{kind}-id"), "value": key.to_string()}],
        "name": nonempty(name).unwrap_or(kind),
    });
    if let Some(address) = address {
        resource["address"] = json!([address]);
    }
    resource
}

fn address(location: &str, zip: &str) -> Option<Value> {
    let mut a = Map::new();
    if let Some(l) = nonempty(location) {
        a.insert("text".into(), json!(l));
    }
    if let Some(z) = nonempty(zip) {
        a.insert("postalCode".into(), json!(z));
    }
    (!a.is_empty()).then_some(Value::Object(a))
}

/// A medication's code: its GTIN (as GTIN-14) when it is one, and its name.
fn concept(code: &str, drug: &str, presentation: &str) -> Value {
    let name = nonempty(presentation)
        .or(nonempty(drug))
        .unwrap_or("Medicamento");
    let mut concept = json!({"text": name});
    if let Some(gtin) = common::gtin::fourteen(code) {
        let mut coding = json!({"system": GTIN, "code": gtin});
        if let Some(drug) = nonempty(drug) {
            coding["display"] = json!(drug);
        }
        concept["coding"] = json!([coding]);
    }
    concept
}

fn quantity(value: u32, unit: &str) -> Value {
    match nonempty(unit) {
        Some(unit) => json!({"value": value, "unit": unit}),
        None => json!({"value": value}),
    }
}

/// FHIR forbids empty strings: `None` for a blank one.
fn nonempty(s: &str) -> Option<&str> {
    let s = s.trim();
    (!s.is_empty()).then_some(s)
}
