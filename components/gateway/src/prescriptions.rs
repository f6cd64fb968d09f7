//! `/api/v2/rx-endpoint/` (medic token): create, list, detail by id, detail by signature.
//!
//! A create is orchestrated here, each domain component doing its part (they never call each other):
//! `auth.authenticate` → `catalog.get-medic` (not `specialty_verified`: 403) → the body's shape →
//! `catalog.prescribing-hospital` (no live membership: 400 on `hospital`) → `patients.get-owned`
//! (not the medic's: 400 on `patient`) → `notifications.plan` (the webhook subscriptions listing the
//! medic or the hospital) → `prescriptions.issue`, which applies the formulary rules, signs, and
//! writes everything, the outbox rows included, in one transaction. The request delivers nothing:
//! the background jobs (`components/jobs`, every second) deliver the new outbox rows.
//!
//! One file (over 500 lines): the prescription routes and the create's orchestration across the domain components, which read best in one place; the body's parsing is here too so every field error of a create is found in one pass.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use common::codes::{Coded, DrugCategory};
use serde::Serialize;
use serde_json::{Map, Value, json};

use common::db::{Db, Param};
use common::fields::Fields;
use common::types::{Error, FieldError, PageRequest, Principal, RxEvent};
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::catalog::{self, ImageKind, Prescriber};
use crate::bindings::notifications;
use crate::bindings::patients::{self, PatientKey};
use crate::bindings::prescriptions::{
    self, HospitalSnapshot, IssueRequest, LifecycleEvent, LifecycleKind, MedicKey, MedicSnapshot,
    Medication, NewMedication, PatientSnapshot, PharmacyRef, Prescription, Reader, StateChange,
};
use crate::http::{self, Request, Response};
use crate::input::body::{FRACCIONES, object_items, search_param};
use crate::input::idempotency::Key;
use crate::roles::{MedicId, Outcome};
use crate::views::rx_json::{create_shape, detail_shape};

/// Length limits, strictly under (characters).
const TEXT: Option<usize> = Some(4096);
const PRESENTATION: Option<usize> = Some(512);
/// `drug_upc`: an identifier from someone's catalog, not always a GTIN: any text without control
/// characters, at most 255 characters.
const UPC: Option<usize> = Some(256);
const CLINIC: usize = 256;
/// Medications per prescription, at most.
const MAX_MEDICATIONS: usize = 50;
/// Boxes per medication, at most.
const MAX_QTY: i64 = 9999;

/// `antibiotic_repeat_reason`: at most 1023 characters.
const REASON: Option<usize> = Some(1024);

const UNVERIFIED: &str =
    "Only a medic whose specialty is verified (specialty_verified) may create prescriptions.";

/// `POST /api/v2/rx-endpoint/` → 200 Prescription (create shape); 400 field errors; 403. With an
/// `Idempotency-Key`, a retry answers the first response again (`idempotency`).
///
/// Over HTTP the medic may come as its token's hash (`roles::medic_key`): the create's reads find
/// the token's holder themselves, so the token's check, the prescriber, the patient and the webhooks
/// are one request to the database, and the write the second (issue 87). Once they found the holder
/// the create's answer stands, a refusal included, so nothing runs twice; a token nobody holds is
/// settled by `token_first` (401 or 403) before anything was written. An `Idempotency-Key` is kept
/// per medic (`medic:<id>`) and reserved with the reads, the token's holder found by the
/// reservation's own statement (`idempotency::Key::reserve_for`).
pub fn create(req: &Request, medic: MedicKey) -> Result<Response, Error> {
    let key = Key::of(req)?;
    let answer = issue(req, &medic, key.as_ref());
    match medic {
        MedicKey::Token(_) => Ok(answer?.unwrap_or_else(Response::error)),
        MedicKey::Id(_) => answer?,
    }
}

/// The create: `Err` only when it did not find the medic (before anything was written), else its
/// answer.
fn issue(req: &Request, medic: &MedicKey, key: Option<&Key>) -> Result<Outcome, Error> {
    // One connection for the whole create, lent to each component it calls.
    let db = Db::open()?;
    let mut body = req.json_fields();
    // `hospital` left out (or null) means the medic's active hospital.
    let hospital_id = body.as_mut().ok().and_then(|f| f.optional_i64("hospital"));
    // A bad `patient` waits in `body` with its field's error, told after the medic's checks.
    let patient_uid = body.as_mut().ok().and_then(patient_uid);
    let upcs = body.as_ref().map(sent_upcs).unwrap_or_default();
    let reservation = key.map(|key| key.reserve_for(medic));
    let asked = Asked {
        medic,
        hospital: hospital_id,
        patient: patient_uid.as_deref(),
        upcs,
        reservation,
    };
    let mut reads = Reads::new(&db, asked)?;
    // For a token: no active medic holds it. By id: a valid token whose medic is gone cannot
    // happen (auth checks the row); treat it as no token.
    let prescriber = catalog::prescriber_of(&reads.prescriber)?.ok_or(Error::Unauthorized)?;
    let principal = format!("medic:{}", prescriber.medic.id);
    let run = |reads| issue_as(&db, prescriber, body, hospital_id, patient_uid, reads);
    Ok(match (key, reads.reservation.take()) {
        (Some(key), Some(reservation)) => {
            key.once_reserved(&db, &principal, &reservation, || run(reads))
        }
        _ => run(reads),
    })
}

/// The create once its medic is known: its checks, then the write.
fn issue_as(
    db: &Db,
    prescriber: Prescriber,
    body: Result<Fields, Error>,
    hospital_id: Option<i64>,
    patient_uid: Option<String>,
    mut reads: Reads,
) -> Outcome {
    // The medic and its hospital in one read; an unverified medic is refused before its body is.
    let Prescriber { medic, hospital } = prescriber;
    let medic_id = medic.id;
    if !medic.specialty_verified {
        return Err(Error::forbidden(UNVERIFIED));
    }
    let mut f = body?;
    let hospital_field_ok =
        hospital_id.is_some() || matches!(f.raw("hospital"), None | Some(Value::Null));
    let clinic = clinic(&mut f);
    let diagnosis = f.optional_str("diagnosis", TEXT).unwrap_or_default();
    let extras = f.optional_str("extras", TEXT).unwrap_or_default();
    let show_diagnosis = f.optional_bool("show_diagnosis").unwrap_or(false);
    let send_rx = f.optional_bool("send_rx").unwrap_or(true);
    let medications = medications(&mut f);
    let valid_days = f.optional_in("valid_days", 1, 365);
    let fills = f.optional_in("fills", 1, 12).unwrap_or(1);
    let fill_interval_days = f.optional_in("fill_interval_days", 0, 90).unwrap_or(0);
    let antibiotic_repeat_reason = f
        .optional_str("antibiotic_repeat_reason", REASON)
        .unwrap_or_default();
    let efirma = if f.optional_bool("efirma") == Some(true) {
        crate::input::efirma::certificate(&mut f, medic_id)?
    } else {
        None
    };

    // The hospital and the patient are checked even when other fields are bad, so one 400 names
    // every problem; infrastructure errors still end the request.
    let hospital = if hospital_field_ok {
        match hospital {
            Ok(h) => Some(h),
            Err(Error::Invalid(errors)) => {
                merge(&mut f, errors);
                None
            }
            Err(other) => return Err(other),
        }
    } else {
        None
    };
    let patient = match (&patient_uid, reads.patient.take()) {
        (Some(uid), Some(read)) => match patients::owned_of(&read) {
            Ok(p) => Some(p),
            Err(Error::NotFound(_)) => {
                f.error("patient", format!("Patient with uid \"{uid}\" not found."));
                None
            }
            Err(other) => return Err(other),
        },
        _ => None,
    };
    // Each of the two is `None` only with its field's error recorded.
    let (hospital, patient) = f.finish_with(hospital.zip(patient))?;

    let image = |present: bool, kind| {
        if present {
            catalog::get_hospital_image(db.lend().as_deref(), hospital.id, kind)
        } else {
            None
        }
    };
    let (patient_id, curp_valid, medic_name) = (patient.id, patient.curp_valid, medic.name.clone());
    let webhooks = match reads.webhooks.take() {
        Some(read) => notifications::plan_of(RxEvent::Created, &read)?,
        None => notifications::plan(
            db.lend().as_deref(),
            medic_id,
            hospital.id,
            RxEvent::Created,
        )?,
    };
    let base_url = http::base_url();
    let request = IssueRequest {
        medic: MedicSnapshot {
            id: medic.id,
            name: medic.name,
            email: medic.email,
            cedula_prof: medic.cedula_prof,
            specialty: medic.specialty,
            specialty_no: medic.specialty_no,
            alma_mater: medic.alma_mater,
        },
        hospital: HospitalSnapshot {
            id: hospital.id,
            picture: image(hospital.picture.is_some(), ImageKind::Picture),
            university_logo: image(
                hospital.university_logo.is_some(),
                ImageKind::UniversityLogo,
            ),
            name: hospital.name,
            patron: hospital.patron,
            location: hospital.location,
            contact: hospital.contact,
            headline: hospital.headline,
            zip_code: hospital.zip_code,
            page_size: hospital.page_size,
            info: hospital.info,
            send_emails: hospital.send_emails,
        },
        patient: PatientSnapshot {
            id: patient_id,
            uid: patient.uid,
            name: patient.name,
            email: patient.email,
            phone: patient.phone,
            date_of_birth: patient.date_of_birth,
            gender: patient.gender,
            curp: patient.curp,
            channels: patient.channels,
        },
        clinic,
        diagnosis,
        extras,
        show_diagnosis,
        send_rx,
        medications,
        valid_days: valid_days.map(|d| d as u32),
        fills: fills as u32,
        fill_interval_days: fill_interval_days as u32,
        antibiotic_repeat_reason,
        base_url: base_url.clone(),
        webhooks,
        efirma,
        formulary: reads
            .formulary
            .take()
            .map(|read| prescriptions::formulary_of(&read))
            .transpose()?,
    };
    let issued = prescriptions::issue(db.lend().as_deref(), &request)?;
    let mut body = match &issued.efirma {
        Some(draft) => crate::views::rx_json::draft_body(&issued, draft, &base_url)?,
        None => serde_json::to_value(create_shape(&issued, &base_url))
            .map_err(|e| Error::Internal(e.to_string()))?,
    };
    body["warnings"] = Value::Array(warnings(&medic_name, &issued, curp_valid, patient_id));
    Ok(Response::json(200, &body))
}

/// What a create reads before it writes, each domain component's own statement
/// (`catalog.prescriber-read`, `patients.owned-read`, `notifications.plan-read`,
/// `prescriptions.formulary-read`) sent together, with the `Idempotency-Key`'s reservation: over
/// HTTP one request to the database instead of one each (issue 87). The webhooks are among them
/// when the body names the hospital; otherwise the hospital is the medic's active one, known only
/// from the prescriber's answer, and they are read after it.
struct Reads {
    prescriber: QueryResult,
    patient: Option<QueryResult>,
    webhooks: Option<QueryResult>,
    formulary: Option<QueryResult>,
    /// The `Idempotency-Key`'s reservation, when the request has one.
    reservation: Option<QueryResult>,
}

/// What a create's [`Reads`] are asked for, from its body as sent.
struct Asked<'a> {
    medic: &'a MedicKey,
    hospital: Option<i64>,
    /// The patient's `uid`.
    patient: Option<&'a str>,
    /// The medications' `drug_upc`s.
    upcs: Vec<String>,
    reservation: Option<(String, Vec<Param>)>,
}

impl Reads {
    fn new(db: &Db, asked: Asked) -> Result<Reads, Error> {
        let Asked {
            medic,
            hospital,
            patient: uid,
            upcs,
            reservation,
        } = asked;
        let reserving = reservation.is_some();
        let patient = uid.map(|uid| patients::owned_read(medic, &PatientKey::Uid(uid.into())));
        let webhooks = hospital.map(|h| notifications::plan_read(medic, h, RxEvent::Created));
        let prescriber = Some(catalog::prescriber_read(medic, hospital));
        let formulary = prescriptions::formulary_read(&upcs);
        let reading_formulary = formulary.is_some();
        let statements: Vec<_> = [prescriber, patient, webhooks, formulary, reservation]
            .into_iter()
            .flatten()
            .collect();
        let steps: Vec<(&str, &[Param])> = statements
            .iter()
            .map(|(sql, params)| (sql.as_str(), params.as_slice()))
            .collect();
        let mut answers = db.together(&steps)?.into_iter();
        let mut next = |asked: bool| asked.then(|| answers.next()).flatten();
        Ok(Reads {
            prescriber: next(true).ok_or_else(|| Error::Internal("no prescriber read".into()))?,
            patient: next(uid.is_some()),
            webhooks: next(hospital.is_some()),
            formulary: next(reading_formulary),
            reservation: next(reserving),
        })
    }
}

/// The medications' `drug_upc`s as sent, for the formulary's read: unchecked (`medications` checks
/// each), and no more than a create may list.
fn sent_upcs(f: &Fields) -> Vec<String> {
    let Some(Value::Array(items)) = f.raw("medications") else {
        return Vec::new();
    };
    items
        .iter()
        .take(MAX_MEDICATIONS)
        .filter_map(|m| m.get("drug_upc")?.as_str())
        .map(str::to_string)
        .collect()
}

/// The create's `warnings` (docs/patients.md): when the person's consent covers the medic, each
/// new medication sharing an active ingredient with an active prescription of another medic.
/// Best effort: the prescription is issued whatever happens here (a failure is logged). `medic` is
/// the creating medic's name, for the access-log entries of the prescriptions it reads.
fn warnings(medic: &str, issued: &Prescription, curp_valid: bool, patient: i64) -> Vec<Value> {
    if !curp_valid {
        return Vec::new();
    }
    let key = PatientKey::Id(patient);
    match crate::views::history::read(issued.medic_id, Some(medic), &key, true) {
        Ok(active) => crate::views::history::warnings(&issued.medications, &active),
        Err(Error::Forbidden(_)) => Vec::new(),
        Err(e) => {
            eprintln!("receta: the create's warnings for patient {patient}: {e:?}");
            Vec::new()
        }
    }
}

/// `GET /api/v2/rx-endpoint/?limit&offset&search` → 200 paginated list of the medic's prescriptions,
/// newest first; `search` matches the patient's name or email or the diagnosis.
pub fn list(req: &Request, medic: MedicKey) -> Result<Response, Error> {
    let page = req.page()?;
    let search = search_param(req)?;
    let db = Db::open()?;
    let found =
        prescriptions::list_prescriptions(db.lend().as_deref(), &medic, search.as_deref(), page)?;
    let base_url = http::base_url();
    let results: Vec<_> = found
        .results
        .iter()
        .map(|rx| detail_shape(rx, &base_url))
        .collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/medications/?limit&offset` (medic token) → 200 paginated: the medications the medic
/// prescribed, newest prescription first, in the prescription's medication shape plus `ad_id` (`""`).
pub fn prescribed(req: &Request, medic: MedicId) -> Result<Response, Error> {
    let medic = medic.get();
    let page = req.page()?;
    let found = prescriptions::list_medications(Db::open()?.lend().as_deref(), medic, page)?;
    #[derive(Serialize)]
    struct WithAd<'a> {
        #[serde(flatten)]
        medication: &'a Medication,
        ad_id: &'static str,
    }
    let results: Vec<WithAd> = found
        .results
        .iter()
        .map(|medication| WithAd {
            medication,
            ad_id: "",
        })
        .collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// Whether a `rx-endpoint/<key>` names a prescription by id (digits) rather than by signature.
pub fn is_id(key: &str) -> bool {
    !key.is_empty() && key.len() < 20 && key.bytes().all(|b| b.is_ascii_digit())
}

/// `GET /api/v2/rx-endpoint/<id>` (`is_id`) → 200 paginated list with one result (the medic's own);
/// 404 `{message}` for another's or an unknown id.
pub fn by_id(req: &Request, medic: MedicId, key: &str) -> Result<Response, Error> {
    let medic = medic.get();
    let id: i64 = key.parse().map_err(|_| Error::not_found())?;
    let found = prescriptions::get_by_id(Db::open()?.lend().as_deref(), medic, id)?;
    let one = PageRequest {
        limit: 1,
        offset: 0,
    };
    Ok(Response::page(
        req,
        &one,
        1,
        &[detail_shape(&found, &http::base_url())],
    ))
}

/// `GET /api/v2/rx-endpoint/<signature>/` → 200 one Prescription (the issuing medic or the API admin).
/// Anything else: 404 `{message}`.
pub fn detail(reader: Reader, key: &str) -> Result<Response, Error> {
    let found = prescriptions::get_by_signature(Db::open()?.lend().as_deref(), &reader, key)?;
    Ok(Response::json(
        200,
        &detail_shape(&found, &http::base_url()),
    ))
}

/// `GET /api/v2/rx/pdf/<signature>/` → 200 `{pdf}` (the PDF stored at issue, base64); 404 `{error}` for
/// an unknown signature or a caller other than the issuing medic or the API admin.
pub fn pdf(caller: Principal, signature: &str) -> Result<Response, Error> {
    match prescriptions::get_pdf(Db::open()?.lend().as_deref(), caller, signature) {
        // `{"pdf": "<base64>"}` written straight into the body: base64 needs no JSON escaping.
        Ok(bytes) => {
            let mut body = String::with_capacity(bytes.len().div_ceil(3) * 4 + 12);
            body.push_str(r#"{"pdf":""#);
            BASE64.encode_string(bytes, &mut body);
            body.push_str(r#""}"#);
            Ok(Response::bytes(200, "application/json", body.into_bytes()))
        }
        Err(Error::NotFound(message)) => Ok(Response::json(404, &json!({ "error": message }))),
        Err(other) => Err(other),
    }
}

/// `GET /api/v2/rx-endpoint/<signature>/document/` (the issuing medic or the API admin; anyone else
/// 404) → 200 `application/json`: the canonical document's exact bytes, whose SHA-256 is the
/// signature. 409 when the stored document no longer hashes to it (altered outside the service).
pub fn document(caller: Principal, signature: &str) -> Result<Response, Error> {
    let canonical = prescriptions::get_document(Db::open()?.lend().as_deref(), caller, signature)?;
    Ok(Response::bytes(
        200,
        "application/json",
        canonical.into_bytes(),
    ))
}

/// `GET /api/v2/rx-endpoint/<signature>/constancia/` (the issuing medic or the API admin; anyone
/// else 404) → 200 `application/timestamp-reply`: the NOM-151 constancia, the timestamp authority's
/// `TimeStampResp` (DER) exactly as stored; 404 `{"message"}` while there is none
/// (docs/verification.md, "Constancias NOM-151").
pub fn constancia(caller: Principal, signature: &str) -> Result<Response, Error> {
    let reply = prescriptions::get_constancia(Db::open()?.lend().as_deref(), caller, signature)?;
    Ok(Response::bytes(200, http::TIMESTAMP_REPLY, reply))
}

/// `GET /api/v2/rx-endpoint/<signature>/fhir/` (the issuing medic or the API admin; anyone else
/// 404) → 200 `application/fhir+json`: the prescription as a FHIR R4 `Bundle` (docs/fhir.md). A
/// read like the detail's (the access log).
pub fn fhir(caller: Principal, signature: &str) -> Result<Response, Error> {
    let rx = prescriptions::get_by_signature(
        Db::open()?.lend().as_deref(),
        &Reader::Caller(caller),
        signature,
    )?;
    crate::views::fhir_json::respond(&rx, crate::views::fhir_json::Audience::Prescriber)
}

/// `POST /api/v2/rx-endpoint/<signature>/cancel/` `{reason}` (the issuing medic; another medic or
/// an unknown signature: 404) → 200 the prescription in the detail shape, `cancelled`. 409 once
/// anything was dispensed, after a rejection, or a second time.
pub fn cancel(req: &Request, medic: MedicId, signature: &str) -> Result<Response, Error> {
    let medic = medic.get();
    // Not a read of the access log's kind: the cancellation logs itself.
    let rx = match prescriptions::get_for_pharmacy(Db::open()?.lend().as_deref(), signature) {
        Ok(view) if view.prescription.medic_id == medic => view.prescription,
        Ok(_) | Err(Error::NotFound(_)) => return Err(Error::not_found()),
        Err(other) => return Err(other),
    };
    let mut f = req.json_fields()?;
    let reason = f.required_str("reason", Some(1024));
    let reason = f.finish_with(reason)?.trim().to_string();
    let db = Db::open()?;
    let webhooks = notifications::plan(
        db.lend().as_deref(),
        medic,
        rx.hospital.id,
        RxEvent::Cancelled,
    )?;
    let change = StateChange {
        signature: signature.to_string(),
        reason,
        webhooks,
    };
    let cancelled =
        prescriptions::cancel(db.lend().as_deref(), medic, &change).map_err(|e| match e {
            Error::NotFound(_) => Error::not_found(),
            other => other,
        })?;
    Ok(Response::json(
        200,
        &detail_shape(&cancelled, &http::base_url()),
    ))
}

/// `GET /api/v2/rx-endpoint/<signature>/dispenses/?limit&offset` (the issuing medic or the API
/// admin; anyone else 404) → 200 paginated: every dispense, rejection and cancellation, oldest
/// first, `{id, kind, pharmacy: {id, name} | null, sales_code, reason, medications: [{id,
/// bought_qty}], created_at}`, each item with `gtin`, `lot`, `expiry`, `serial`, `substituted` and
/// `substitution_reason` when the pharmacy said them.
pub fn events(req: &Request, caller: Principal, signature: &str) -> Result<Response, Error> {
    let page = req.page()?;
    let all = prescriptions::list_events(Db::open()?.lend().as_deref(), caller, signature)?;
    let results: Vec<EventJson> = all
        .iter()
        .skip(page.offset as usize)
        .take(page.limit as usize)
        .map(EventJson::from)
        .collect();
    Ok(Response::page(req, &page, all.len() as u64, &results))
}

/// One event of a prescription's life after issue, as the API shows it.
#[derive(Serialize)]
struct EventJson<'a> {
    id: i64,
    /// `dispense`, `rejection` or `cancellation`.
    kind: &'static str,
    pharmacy: Option<PharmacyJson<'a>>,
    sales_code: &'a str,
    reason: &'a str,
    medications: Vec<SoldJson<'a>>,
    created_at: &'a str,
}

/// The pharmacy of an event: its id and its name at the time.
#[derive(Serialize)]
struct PharmacyJson<'a> {
    id: i64,
    name: &'a str,
}

/// Units of one medication sold in a dispense, and what was handed over: each of those only when
/// the pharmacy said it, so a sale that said nothing reads `{id, bought_qty}` as before.
#[derive(Serialize)]
struct SoldJson<'a> {
    id: i64,
    bought_qty: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    gtin: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lot: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expiry: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    serial: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    substituted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    substitution_reason: Option<&'a str>,
}

impl<'a> From<&'a LifecycleEvent> for EventJson<'a> {
    fn from(e: &'a LifecycleEvent) -> Self {
        EventJson {
            id: e.id,
            kind: match e.kind {
                LifecycleKind::Dispense => "dispense",
                LifecycleKind::Rejection => "rejection",
                LifecycleKind::Cancellation => "cancellation",
            },
            pharmacy: e.pharmacy.as_ref().map(|p: &PharmacyRef| PharmacyJson {
                id: p.id,
                name: &p.name,
            }),
            sales_code: &e.sales_code,
            reason: &e.reason,
            medications: e
                .items
                .iter()
                .map(|i| SoldJson {
                    id: i.medication,
                    bought_qty: i.qty,
                    gtin: i.gtin.as_deref(),
                    lot: i.lot.as_deref(),
                    expiry: i.expiry.as_deref(),
                    serial: i.serial.as_deref(),
                    substituted: i.substituted,
                    substitution_reason: i.substitution_reason.as_deref(),
                })
                .collect(),
            created_at: &e.created_at,
        }
    }
}

/// `patient`: `{"uid": "..."}` (a bare uid string is accepted too). Required.
fn patient_uid(f: &mut Fields) -> Option<String> {
    let uid = match f.raw("patient") {
        None | Some(Value::Null) => {
            f.error("patient", common::fields::REQUIRED);
            return None;
        }
        Some(Value::Object(map)) => match map.get("uid") {
            Some(Value::String(s)) => s.trim().to_string(),
            None | Some(Value::Null) => {
                f.error("patient", "uid: This field is required.");
                return None;
            }
            Some(_) => {
                f.error("patient", "uid: Not a valid string.");
                return None;
            }
        },
        Some(Value::String(s)) => s.trim().to_string(),
        Some(_) => {
            f.error(
                "patient",
                "Invalid data. Expected an object {\"uid\": \"...\"}.",
            );
            return None;
        }
    };
    if uid.is_empty() || uid.len() > 64 {
        f.error(
            "patient",
            format!("Patient with uid \"{}\" not found.", truncate(&uid, 64)),
        );
        return None;
    }
    Some(uid)
}

/// `clinic`: null, an integer (a clinic id) or a name; kept as JSON text. `None` when absent.
fn clinic(f: &mut Fields) -> Option<String> {
    match f.raw("clinic")? {
        Value::Null => None,
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::String(s) if s.chars().count() < CLINIC => {
            if let Some(message) = common::text::refused(s, false) {
                f.error("clinic", message);
                return None;
            }
            Some(Value::String(s.clone()).to_string())
        }
        Value::String(_) => {
            f.error(
                "clinic",
                format!("Ensure this field has fewer than {CLINIC} characters."),
            );
            None
        }
        _ => {
            f.error(
                "clinic",
                "A clinic id (integer), a clinic name (string) or null is required.",
            );
            None
        }
    }
}

/// `medications`: a non-empty list (at most `MAX_MEDICATIONS`) of objects with `presentation` and
/// `instructions` (required, non-blank), `qty` (1 to 9999, default 1), `drug_upc` (default empty),
/// `category` (a `DrugCategory` code), `fraccion` (one of `FRACCIONES`) and `antibiotic` (a boolean),
/// those two null or absent: not declared; `substitution_allowed` (a boolean, default true). Every problem is a message on `medications`, `Item N, field: …`.
fn medications(f: &mut Fields) -> Vec<NewMedication> {
    object_items(f, "medications", MAX_MEDICATIONS, medication)
}

/// One medication object, or its field errors.
fn medication(map: Map<String, Value>) -> Result<NewMedication, Vec<FieldError>> {
    let mut m = Fields::from_map(map);
    let presentation = m.required_str("presentation", PRESENTATION);
    let instructions = m.required_str("instructions", TEXT);
    let qty = match m.optional_i64("qty") {
        None => 1,
        Some(q) if q < 1 => {
            m.error("qty", "Ensure this value is greater than or equal to 1.");
            1
        }
        Some(q) if q > MAX_QTY => {
            m.error(
                "qty",
                format!("Ensure this value is less than or equal to {MAX_QTY}."),
            );
            1
        }
        Some(q) => q,
    };
    let drug_upc = m.optional_str("drug_upc", UPC).unwrap_or_default();
    let category = m.coded("category", DrugCategory::ALL, true);
    let fraccion = m.choice("fraccion", &FRACCIONES, true);
    let antibiotic = m.optional_bool("antibiotic");
    let substitution_allowed = m.optional_bool("substitution_allowed").unwrap_or(true);
    m.finish_item_then(|| {
        Some(NewMedication {
            presentation: presentation?,
            instructions: instructions?,
            qty: qty as u32,
            drug_upc,
            category,
            fraccion,
            antibiotic,
            substitution_allowed,
        })
    })
}

fn merge(f: &mut Fields, errors: Vec<FieldError>) {
    for e in errors {
        for message in e.messages {
            f.error(&e.field, message);
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(v: Value) -> Fields {
        Fields::from_json(v.to_string().as_bytes()).unwrap()
    }

    fn errors(f: Fields) -> Map<String, Value> {
        match f.finish() {
            Err(Error::Invalid(errors)) => errors
                .into_iter()
                .map(|e| (e.field, json!(e.messages)))
                .collect(),
            other => panic!("expected field errors, got {other:?}"),
        }
    }

    #[test]
    fn medications_defaults() {
        let mut f = fields(
            json!({"medications": [{"presentation": "Paracetamol 500 mg", "instructions": "1 c/8 h"}]}),
        );
        let meds = medications(&mut f);
        assert!(f.finish().is_ok());
        assert_eq!(meds[0].qty, 1);
        assert_eq!(meds[0].drug_upc, "");
        assert_eq!(meds[0].category, None);
    }

    #[test]
    fn medications_every_problem_is_named() {
        let mut f = fields(json!({"medications": [
            {"presentation": "", "instructions": "x", "qty": 0},
            "text",
            {"presentation": "A", "qty": "many", "category": "otc"},
            {"presentation": "B", "instructions": "y", "qty": 10000},
            {"presentation": "C", "instructions": "z", "qty": -1, "drug_upc": 5},
        ]}));
        medications(&mut f);
        let e = errors(f);
        let messages: Vec<String> = e["medications"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect();
        let has = |s: &str| messages.iter().any(|m| m.starts_with(s));
        assert!(has("Item 1, presentation: "), "{messages:?}");
        assert!(
            has("Item 1, qty: Ensure this value is greater than or equal to 1."),
            "{messages:?}"
        );
        assert!(
            has("Item 2: Invalid data. Expected a dictionary"),
            "{messages:?}"
        );
        assert!(
            has("Item 3, instructions: This field is required."),
            "{messages:?}"
        );
        assert!(
            has("Item 3, qty: A valid integer is required."),
            "{messages:?}"
        );
        assert!(
            has("Item 3, category: \"otc\" is not a valid choice."),
            "{messages:?}"
        );
        assert!(
            has("Item 4, qty: Ensure this value is less than or equal to 9999."),
            "{messages:?}"
        );
        assert!(
            has("Item 5, qty: Ensure this value is greater than or equal to 1."),
            "{messages:?}"
        );
    }

    #[test]
    fn medications_must_be_a_non_empty_list() {
        for (body, message) in [
            (json!({}), "This field is required."),
            (json!({"medications": null}), "This field is required."),
            (json!({"medications": []}), "This list may not be empty."),
            (
                json!({"medications": "Paracetamol"}),
                "Expected a list of items but got type \"str\".",
            ),
            (
                json!({"medications": {"presentation": "x"}}),
                "Expected a list of items but got type \"dict\".",
            ),
        ] {
            let mut f = fields(body.clone());
            medications(&mut f);
            assert_eq!(errors(f)["medications"], json!([message]), "{body}");
        }
    }

    #[test]
    fn patient_reference() {
        let mut f = fields(json!({"patient": {"uid": "abc"}}));
        assert_eq!(patient_uid(&mut f).as_deref(), Some("abc"));
        let mut f = fields(json!({"patient": "abc"}));
        assert_eq!(patient_uid(&mut f).as_deref(), Some("abc"));
        for bad in [
            json!({}),
            json!({"patient": {}}),
            json!({"patient": 5}),
            json!({"patient": {"uid": 5}}),
        ] {
            let mut f = fields(bad.clone());
            assert_eq!(patient_uid(&mut f), None);
            assert!(errors(f)["patient"][0].is_string(), "{bad}");
        }
    }

    #[test]
    fn clinic_values() {
        let mut f = fields(json!({"clinic": 3}));
        assert_eq!(clinic(&mut f).as_deref(), Some("3"));
        let mut f = fields(json!({"clinic": "Consultorio 2"}));
        assert_eq!(clinic(&mut f).as_deref(), Some("\"Consultorio 2\""));
        let mut f = fields(json!({"clinic": null}));
        assert_eq!(clinic(&mut f), None);
        for bad in [
            json!({"clinic": [1]}),
            json!({"clinic": 1.5}),
            json!({"clinic": "x".repeat(300)}),
        ] {
            let mut f = fields(bad);
            assert_eq!(clinic(&mut f), None);
            assert!(f.finish().is_err());
        }
    }
}
