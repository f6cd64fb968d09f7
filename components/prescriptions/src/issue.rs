//! Issuing a prescription. Everything slow or fallible that does not write (drug look-ups, signing,
//! rendering) happens first; then the prescription, its medications, the signed document with the
//! PDF, the seal and the outbox rows are written in one statement (migration 0031's view: atomic,
//! so either all of it is there or none of it, and on a libSQL server one round trip), and their
//! ids read back. A create that asks for the medic's e.firma writes a draft instead of the seal
//! and the outbox rows (`signing`). The outbox rows are the patient's email (when one is due) and
//! one row per webhook delivery the gateway planned (`notifications.plan`); the notifications
//! component delivers them.

use serde_json::Value;

use common::codes::{Channel, Coded, RxState, SentState};
use common::db::{Db, Param, blob, boolean, int, opt_text, placeholders, text};
use common::types::{Error, FieldError};
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    Drug, IssueRequest, Medication, Prescription, RxHospital, RxPatient, RxStatus, Seal,
};
use crate::document::{self, Signed};
use crate::medications::{self, Resolved};
use crate::outbox;
use crate::pdf;
use crate::rules::{self, Terms};
use crate::seal;
use crate::signing;

/// The formulary's entries for `count` UPCs: one statement for all of a prescription's medications.
fn drugs_sql(count: usize) -> String {
    format!(
        "SELECT d.upc, d.name, d.category, d.fraccion, d.antibiotic FROM drugs d WHERE d.upc IN ({})",
        placeholders(count)
    )
}

/// Everything issuing writes, in one statement: migration 0031's view, whose `INSTEAD OF` trigger
/// writes every table (atomic without a transaction; on a libSQL server one round trip instead of
/// twelve under the write lock). `medications` and `outbox` are JSON arrays (0031 says of what).
const INSERT_ISSUE: &str = "INSERT INTO prescription_issues \
    (signature, medic_id, medic_email, hospital_id, hospital_patron, hospital_location, clinic, \
     patient_id, patient_uid, patient_name, patient_email, patient_phone, patient_date_of_birth, \
     patient_gender, diagnosis, extras, show_diagnosis, send_rx, created_at, rx_status, \
     sent_status, medications, valid_until, expires_at, fills, fill_interval_days, \
     antibiotic_repeat_reason, canonical, pdf, seal_kid, seal_sig, outbox, draft_rfc, \
     draft_serial, draft_email, draft_expires_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, \
     ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36)";

/// `?1` signature: the issued prescription's id and its medications' ids, in order.
const ISSUED_IDS: &str = "SELECT p.id, m.id AS medication_id FROM prescriptions p \
    LEFT JOIN medications m ON m.prescription_id = p.id WHERE p.signature = ?1 ORDER BY m.position";

pub fn issue(req: IssueRequest) -> Result<Prescription, Error> {
    let db = Db::open()?;
    let meds = resolve_all(&db, &req)?;
    let unlawful = rules::check(&meds, req.fills, &req.antibiotic_repeat_reason);
    if !unlawful.is_empty() {
        return Err(Error::Invalid(unlawful));
    }
    let clinic: Value = match &req.clinic {
        Some(json) => {
            serde_json::from_str(json).map_err(|e| anyhow::anyhow!("clinic is not JSON: {e}"))?
        }
        None => Value::Null,
    };
    let issued_at = common::time::now_iso8601();
    let valid_days = req.valid_days.unwrap_or_else(|| {
        rules::configured_valid_days(spin_sdk::variables::get("rx_valid_days").ok().as_deref())
    });
    let terms = rules::terms(
        &issued_at,
        valid_days,
        req.fills,
        req.fill_interval_days,
        &req.antibiotic_repeat_reason,
    )?;
    let doc = document::build(
        &req,
        &meds,
        &terms,
        &clinic,
        &issued_at,
        &document::new_nonce(),
    );
    let signed = document::sign(&doc);
    let seal = seal::signer(&db)?.seal(&signed.signature);
    // Rendered before the transaction, so the write lock is held only for the inserts.
    let pdf = pdf::render(
        &req,
        &meds,
        &terms,
        &signed.signature,
        &seal,
        &issued_at[..10],
        crate::constancia::configured(),
    )?;
    let email = email_target(&req);
    let sent_status = if email.is_some() {
        SentState::Pending
    } else {
        SentState::NotSent
    };
    let issued = Prepared {
        req,
        meds,
        terms,
        signed,
        seal,
        pdf,
        email,
        issued_at,
        sent_status,
    };
    let (id, medication_ids) = store(&db, &issued)?;
    Ok(answer(issued, id, medication_ids))
}

/// What issuing prepared before its transaction.
struct Prepared {
    req: IssueRequest,
    meds: Vec<Resolved>,
    terms: Terms,
    signed: Signed,
    seal: Seal,
    pdf: Vec<u8>,
    /// Where the patient's email goes, when one is due.
    email: Option<String>,
    issued_at: String,
    sent_status: SentState,
}

/// Writes the prescription (`INSERT_ISSUE`) and reads back its id and its medications' ids, in
/// order.
fn store(db: &Db, p: &Prepared) -> Result<(i64, Vec<i64>), Error> {
    let Prepared {
        req,
        meds,
        terms,
        signed,
        seal,
        pdf,
        email,
        issued_at,
        sent_status,
    } = p;
    let medications: Vec<Value> = meds
        .iter()
        .enumerate()
        .map(|(position, m)| {
            serde_json::json!({
                "position": position,
                "presentation": m.presentation,
                "instructions": m.instructions,
                "qty": m.qty,
                "drug_upc": m.drug_upc,
                "category": m.category.code(),
                "drug": m.drug,
                "qty_label": m.qty_label,
                "fraccion": m.fraccion,
                "antibiotic": m.antibiotic.map(i64::from),
                "fixed": i64::from(!m.substitution_allowed),
            })
        })
        .collect();
    // A draft's seal and email wait in its draft row; an issued one's outbox rows go now.
    let (outbox, draft) = match &req.efirma {
        Some(cert) => (
            Vec::new(),
            Some(signing::new_draft(cert, email.as_deref(), issued_at)?),
        ),
        None => (
            outbox::issued_rows(&signed.signature, email.as_deref(), &req.webhooks),
            None,
        ),
    };
    let draft_param = |f: fn(&signing::NewDraft) -> Param| draft.as_ref().map_or(Param::Null, f);
    let written = [
        text(&signed.signature),
        int(req.medic.id),
        text(&req.medic.email),
        int(req.hospital.id),
        text(&req.hospital.patron),
        text(&req.hospital.location),
        opt_text(req.clinic.as_deref()),
        int(req.patient.id),
        text(&req.patient.uid),
        text(&req.patient.name),
        text(&req.patient.email),
        text(&req.patient.phone),
        text(&req.patient.date_of_birth),
        text(req.patient.gender.code()),
        text(&req.diagnosis),
        text(&req.extras),
        boolean(req.show_diagnosis),
        boolean(req.send_rx),
        text(issued_at),
        text(RxState::Available.code()),
        text(sent_status.code()),
        text(&Value::Array(medications).to_string()),
        text(&terms.valid_until),
        text(&terms.expires_at),
        int(terms.fills.into()),
        int(terms.fill_interval_days.into()),
        text(&terms.antibiotic_repeat_reason),
        text(&signed.canonical),
        blob(pdf),
        text(&seal.kid),
        text(&seal.sig),
        text(&outbox::rows_json(&outbox)),
        draft_param(|d| text(&d.rfc)),
        draft_param(|d| text(&d.serial)),
        draft_param(|d| opt_text(d.email.as_deref())),
        draft_param(|d| text(&d.expires_at)),
    ];
    // Sent together: over HTTP one request writes it and reads its ids back.
    let signature = [text(&signed.signature)];
    let answers = db.together(&[(INSERT_ISSUE, &written), (ISSUED_IDS, &signature)])?;
    let rows = common::db::rows(&answers[1], |r| {
        Ok((r.i64("id")?, r.opt_i64("medication_id")?))
    })?;
    let id = rows.first().map(|(id, _)| *id).ok_or_else(|| {
        anyhow::anyhow!("prescription {} vanished after insert", signed.signature)
    })?;
    Ok((id, rows.into_iter().filter_map(|(_, m)| m).collect()))
}

/// The issued prescription in the answer's shape (`ids`: its medications', in order).
fn answer(p: Prepared, id: i64, ids: Vec<i64>) -> Prescription {
    let Prepared {
        req,
        meds,
        terms,
        signed,
        seal,
        issued_at,
        sent_status,
        ..
    } = p;
    let efirma = req
        .efirma
        .as_ref()
        .map(|cert| signing::awaiting(cert, &signed.canonical));
    Prescription {
        id,
        medic_id: req.medic.id,
        constancia: crate::constancia::queued(&signed.signature),
        efirma,
        status_updates: Vec::new(),
        signature: signed.signature,
        hospital: RxHospital {
            id: req.hospital.id,
            patron: req.hospital.patron.clone(),
            location: req.hospital.location.clone(),
        },
        clinic: req.clinic.clone(),
        medic: req.medic.email.clone(),
        patient: RxPatient {
            uid: req.patient.uid.clone(),
            name: req.patient.name.clone(),
            email: req.patient.email.clone(),
            phone: req.patient.phone.clone(),
            date_of_birth: req.patient.date_of_birth.clone(),
            gender: req.patient.gender,
        },
        diagnosis: req.diagnosis.clone(),
        medications: meds
            .into_iter()
            .zip(ids)
            .map(|(m, id)| Medication {
                id,
                presentation: m.presentation,
                instructions: m.instructions,
                qty: m.qty,
                drug_upc: m.drug_upc,
                category: m.category,
                drug: m.drug,
                cost: 0.0,
                bought: false,
                bought_qty: 0,
                order_id: 0,
                qty_label: m.qty_label,
                fraccion: m.fraccion,
                antibiotic: m.antibiotic,
                qty_total: m.qty * terms.fills,
                substitution_allowed: m.substitution_allowed,
            })
            .collect(),
        extras: req.extras.clone(),
        created_at: issued_at,
        sent: None,
        send_rx: req.send_rx,
        show_diagnosis: req.show_diagnosis,
        rejected: false,
        bought: false,
        status: RxStatus {
            rx_status: RxState::Available,
            sent_status,
        },
        reason_of_rejected: String::new(),
        // A draft carries its seal only once activated.
        seal: req.efirma.is_none().then_some(seal),
        valid_until: Some(terms.valid_until),
        fills: terms.fills,
        fills_used: 0,
        fill_interval_days: terms.fill_interval_days,
        antibiotic_repeat_reason: terms.antibiotic_repeat_reason,
    }
}

/// The statement reading the formulary's entries for `upcs` (blanks skipped), `None` without any
/// (`prescriptions.formulary-read`).
pub fn formulary_read<'a>(upcs: impl IntoIterator<Item = &'a str>) -> Option<(String, Vec<Param>)> {
    let upcs: Vec<Param> = upcs
        .into_iter()
        .map(str::trim)
        .filter(|upc| !upc.is_empty())
        .map(text)
        .collect();
    (!upcs.is_empty()).then(|| (drugs_sql(upcs.len()), upcs))
}

/// The formulary's entries in `read`, the result of [`formulary_read`]'s statement
/// (`prescriptions.formulary-of`).
pub fn formulary_of(read: &QueryResult) -> Result<Vec<Drug>, Error> {
    Ok(common::db::rows(read, crate::drugs::from_row)?)
}

/// Every medication resolved against the formulary (as the request carries it, else read here),
/// or one 400 on `medications` naming each bad item.
fn resolve_all(db: &Db, req: &IssueRequest) -> Result<Vec<Resolved>, Error> {
    let read;
    let entries = match &req.formulary {
        Some(entries) => entries,
        None => {
            let upcs = req.medications.iter().map(|m| m.drug_upc.as_str());
            read = match formulary_read(upcs) {
                Some((sql, params)) => formulary_of(&db.execute(&sql, &params)?)?,
                None => Vec::new(),
            };
            &read
        }
    };
    let mut resolved = Vec::with_capacity(req.medications.len());
    let mut messages = Vec::new();
    for (i, med) in req.medications.iter().enumerate() {
        let upc = med.drug_upc.trim();
        let entry = entries.iter().find(|d| !upc.is_empty() && d.upc == upc);
        match medications::resolve(med, entry) {
            Ok(r) => resolved.push(r),
            Err(message) => messages.push(format!("Item {}: {message}", i + 1)),
        }
    }
    if messages.is_empty() {
        Ok(resolved)
    } else {
        Err(Error::Invalid(vec![FieldError {
            field: "medications".into(),
            messages,
        }]))
    }
}

/// Where the patient's email goes, when one is to be sent: `send_rx` is true, the hospital sends
/// emails, the patient chose `email` among its channels, and the patient's `email` is an address
/// (it may hold another identifier, or be empty).
fn email_target(req: &IssueRequest) -> Option<String> {
    let email = req.patient.email.trim();
    let chosen = req.patient.channels.contains(&Channel::Email);
    (req.send_rx && req.hospital.send_emails && chosen && common::fields::is_valid_email(email))
        .then(|| email.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::tests::request;

    #[test]
    fn email_only_when_asked_allowed_and_addressable() {
        assert_eq!(email_target(&request()).as_deref(), Some("juan@example.mx"));
        let mut r = request();
        r.send_rx = false;
        assert_eq!(email_target(&r), None);
        let mut r = request();
        r.hospital.send_emails = false;
        assert_eq!(email_target(&r), None);
        for not_an_address in ["", "EXP-12345"] {
            let mut r = request();
            r.patient.email = not_an_address.into();
            assert_eq!(email_target(&r), None, "{not_an_address}");
        }
        let mut r = request();
        r.patient.channels = vec![Channel::Sms];
        assert_eq!(email_target(&r), None, "email not chosen");
    }
}
