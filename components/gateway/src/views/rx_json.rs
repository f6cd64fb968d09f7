//! A prescription as the API writes it: the create, list and detail shapes (openapi/receta.json),
//! borrowed from the WIT record and serialized directly. The pharmacy calls add their fields to
//! the same shape.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::Serialize;
use serde_json::{Map, Value, json};

use common::types::Error;

use crate::bindings::prescriptions::{
    Constancia, ConstanciaStatus, EfirmaStatus, Medication, Prescription, RxEfirma, RxHospital,
    RxPatient, RxStatus, Seal, StatusUpdate,
};
use crate::views::status_json::{self, StatusJson};

/// `rx_status` as the public sees it (the verify, the patient's page and its JSON): a draft
/// awaiting its medic's e.firma is not issued, so not "Disponible":
/// `["awaiting_signature", "Pendiente de la e.firma del médico"]`, and one that expired unsigned
/// `["not_issued", "No emitida"]` (docs/verification.md); otherwise the state's own pair.
pub fn public_status(
    state: common::codes::RxState,
    efirma: Option<&RxEfirma>,
) -> (&'static str, &'static str) {
    use common::codes::{Coded, Labelled};
    match efirma.map(|e| e.status) {
        Some(EfirmaStatus::AwaitingSignature) => {
            ("awaiting_signature", "Pendiente de la e.firma del médico")
        }
        Some(EfirmaStatus::Expired) => ("not_issued", "No emitida"),
        _ => (state.code(), state.label()),
    }
}

/// Whether a prescription is still a draft (awaiting its medic's e.firma, or expired unsigned).
pub fn is_draft(efirma: Option<&RxEfirma>) -> bool {
    efirma.is_some_and(|e| e.status != EfirmaStatus::Signed)
}

/// A document's NOM-151 constancia as the API writes it: `{status, gen_time, tsa, digest}`,
/// `status` `pending`, `stamped` or `disabled` (docs/verification.md, "Constancias NOM-151").
#[derive(Serialize)]
pub struct ConstanciaJson<'a> {
    status: &'static str,
    gen_time: Option<&'a str>,
    tsa: Option<&'a str>,
    digest: &'a str,
}

pub fn constancia(c: &Constancia) -> ConstanciaJson<'_> {
    ConstanciaJson {
        status: match c.status {
            ConstanciaStatus::Pending => "pending",
            ConstanciaStatus::Stamped => "stamped",
            ConstanciaStatus::Disabled => "disabled",
        },
        gen_time: c.gen_time.as_deref(),
        tsa: c.tsa.as_deref(),
        digest: &c.digest,
    }
}

/// A prescription's e.firma as the API writes it: `{status, rfc, serial, signed_at}`, `status`
/// `awaiting_signature`, `signed` or `expired` (docs/verification.md, "The prescriber's e.firma").
#[derive(Serialize)]
pub struct EfirmaJson<'a> {
    status: &'static str,
    rfc: &'a str,
    serial: &'a str,
    signed_at: Option<&'a str>,
}

pub fn efirma(e: &RxEfirma) -> EfirmaJson<'_> {
    EfirmaJson {
        status: efirma_status(e.status),
        rfc: &e.rfc,
        serial: &e.serial,
        signed_at: e.signed_at.as_deref(),
    }
}

/// A 409 for `rx` when it is a draft awaiting its medic's e.firma (or one that expired so): it was
/// never issued, so nothing is sent for it (the resend).
pub fn issued(rx: &Prescription) -> Result<(), common::types::Error> {
    let why = match rx.efirma.as_ref().map(|e| e.status) {
        Some(EfirmaStatus::AwaitingSignature) => {
            "is awaiting the prescriber's e.firma: it is not issued yet"
        }
        Some(EfirmaStatus::Expired) => {
            "expired awaiting the prescriber's e.firma: it was never issued"
        }
        _ => return Ok(()),
    };
    Err(common::types::Error::Conflict(format!(
        "This prescription {why}, so it cannot be sent."
    )))
}

pub fn efirma_status(status: EfirmaStatus) -> &'static str {
    match status {
        EfirmaStatus::AwaitingSignature => "awaiting_signature",
        EfirmaStatus::Signed => "signed",
        EfirmaStatus::Expired => "expired",
    }
}

/// The create response (openapi/receta.json): `hospital` as its id, `patient` as `{uid, name, email}`, no status.
pub fn create_shape<'a>(
    rx: &'a Prescription,
    base_url: &str,
) -> RxJson<'a, i64, PatientRef<'a>, &'a [Medication]> {
    let patient = PatientRef {
        uid: &rx.patient.uid,
        name: &rx.patient.name,
        email: &rx.patient.email,
    };
    let mut v = shape(
        rx,
        base_url,
        rx.hospital.id,
        patient,
        rx.medications.as_slice(),
    );
    v.status = None;
    v.reason_of_rejected = None;
    v.seal = None;
    v.constancia = None;
    v.efirma = None;
    v.pharmacy_status = None;
    v.pharmacy_status_history = None;
    v
}

/// A draft's create response: the create shape plus `efirma: {status, to_sign, digest}`, `to_sign`
/// the base64 of the exact bytes to sign (the canonical document) and `digest` their SHA-256 (the
/// signature).
pub fn draft_body(rx: &Prescription, draft: &RxEfirma, base_url: &str) -> Result<Value, Error> {
    let mut body = serde_json::to_value(create_shape(rx, base_url))
        .map_err(|e| Error::Internal(e.to_string()))?;
    body["efirma"] = json!({
        "status": efirma_status(draft.status),
        "to_sign": BASE64.encode(draft.to_sign.as_deref().unwrap_or_default()),
        "digest": rx.signature,
    });
    Ok(body)
}

/// The list and detail shape: `hospital` `{id, patron, location}`, `patient` with phone, date of
/// birth and gender, `status` as `[code, label]` pairs, `created_at` as `YYYY-MM-DD`, `cta_link`.
pub fn detail_shape<'a>(
    rx: &'a Prescription,
    base_url: &str,
) -> RxJson<'a, &'a RxHospital, &'a RxPatient, &'a [Medication]> {
    shape(
        rx,
        base_url,
        &rx.hospital,
        &rx.patient,
        rx.medications.as_slice(),
    )
}

/// A prescription as the API writes it, borrowed from the record and serialized directly.
#[derive(Serialize)]
pub struct RxJson<'a, H, P, M> {
    id: i64,
    signature: &'a str,
    hospital: H,
    /// The stored JSON text, parsed (null when absent).
    clinic: Value,
    medic: &'a str,
    patient: P,
    diagnosis: &'a str,
    medications: M,
    extras: &'a str,
    created_at: &'a str,
    sent: Option<bool>,
    send_rx: bool,
    show_diagnosis: bool,
    rejected: bool,
    bought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a RxStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason_of_rejected: Option<&'a str>,
    /// `{kid, alg, sig}`, or null for a prescription issued before seals existed; not in the
    /// create shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    seal: Option<Option<&'a Seal>>,
    /// `YYYY-MM-DD`, the last day it may be filled (Mexico City); null: no limit (issued before
    /// validity existed).
    valid_until: Option<&'a str>,
    fills: u32,
    fills_used: u32,
    fill_interval_days: u32,
    antibiotic_repeat_reason: &'a str,
    /// The NOM-151 constancia; not in the create shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    constancia: Option<ConstanciaJson<'a>>,
    /// The medic's e.firma, or null for one created without; not in the create shape (a draft's
    /// create adds its own `efirma`: `prescriptions::create`).
    #[serde(skip_serializing_if = "Option::is_none")]
    efirma: Option<Option<EfirmaJson<'a>>>,
    /// The latest pharmacy status (`status_json`), or null; not in the create shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pharmacy_status: Option<Option<StatusJson<'a>>>,
    /// Every pharmacy status, oldest first; not in the create shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pharmacy_status_history: Option<Vec<StatusJson<'a>>>,
    /// The statuses the two fields above are written from (`for_pharmacy` keeps its own).
    #[serde(skip)]
    status_updates: &'a [StatusUpdate],
    cta_link: String,
    additional_data: Map<String, Value>,
}

impl<'a, H, P, M> RxJson<'a, H, P, M> {
    /// What pharmacy `pharmacy` is shown (its lookup, a burn's answer): the diagnosis only when
    /// the medic chose `show_diagnosis`, else an empty string (the field and its type stay, so
    /// clients written for the original service keep parsing; docs/api-notes.md, "What a pharmacy
    /// sees"); of the pharmacies' statuses, only its own.
    pub fn for_pharmacy(mut self, pharmacy: i64) -> Self {
        if !self.show_diagnosis {
            self.diagnosis = "";
        }
        let own: Vec<&'a StatusUpdate> = self
            .status_updates
            .iter()
            .filter(|u| u.pharmacy.id == pharmacy)
            .collect();
        self.pharmacy_status = Some(own.last().map(|u| status_json::status(u)));
        self.pharmacy_status_history = Some(own.into_iter().map(status_json::status).collect());
        self
    }
}

/// The create response's `patient`.
#[derive(Serialize)]
pub struct PatientRef<'a> {
    uid: &'a str,
    name: &'a str,
    email: &'a str,
}

/// A prescription as the API writes it, with the hospital, patient and medications in the shape
/// the endpoint uses.
pub fn shape<'a, H, P, M>(
    rx: &'a Prescription,
    base_url: &str,
    hospital: H,
    patient: P,
    medications: M,
) -> RxJson<'a, H, P, M> {
    // No `..`: a field added to the record must be placed here too.
    let Prescription {
        id,
        medic_id: _,
        signature,
        hospital: _,
        clinic,
        medic,
        patient: _,
        diagnosis,
        medications: _,
        extras,
        created_at,
        sent,
        send_rx,
        show_diagnosis,
        rejected,
        bought,
        status,
        reason_of_rejected,
        seal,
        valid_until,
        fills,
        fills_used,
        fill_interval_days,
        antibiotic_repeat_reason,
        constancia: stamp,
        efirma: signed,
        status_updates,
    } = rx;
    RxJson {
        id: *id,
        signature,
        hospital,
        clinic: clinic
            .as_deref()
            .and_then(|c| serde_json::from_str(c).ok())
            .unwrap_or(Value::Null),
        medic,
        patient,
        diagnosis,
        medications,
        extras,
        created_at: created_at.get(..10).unwrap_or(created_at),
        sent: *sent,
        send_rx: *send_rx,
        show_diagnosis: *show_diagnosis,
        rejected: *rejected,
        bought: *bought,
        status: Some(status),
        reason_of_rejected: Some(reason_of_rejected),
        seal: Some(seal.as_ref()),
        valid_until: valid_until.as_deref(),
        fills: *fills,
        fills_used: *fills_used,
        fill_interval_days: *fill_interval_days,
        antibiotic_repeat_reason,
        constancia: Some(constancia(stamp)),
        efirma: Some(signed.as_ref().map(efirma)),
        pharmacy_status: Some(status_json::latest(status_updates)),
        pharmacy_status_history: Some(status_json::history(status_updates)),
        status_updates,
        cta_link: format!("{base_url}/rx/{signature}"),
        additional_data: Map::new(),
    }
}
