//! The patient landing: what the patient's link shows of a prescription (`landing-rx`), and its PDF.
//!
//! Two ways in: the JSON endpoint passes the caller (the issuing medic or the API admin; anyone else
//! gets `not-found`), the public page passes none (the unguessable signature is the capability).
//! Nothing of the patient beyond a first name leaves here, and never the diagnosis. The view carries
//! the access log (who looked); the JSON endpoint's read is itself logged, the public page's is not.

use common::db::{Db, Param, int, text};
use common::types::{Error, Principal};

use crate::access;
use crate::bindings::exports::receta::prescriptions::prescriptions::LandingRx;
use crate::document::is_signature;
use crate::read::{medication_from_row, medications_sql, seal_from_row, shown_state};
use crate::reads;

/// `?1` signature; `?2` the medic, or NULL for the API admin and for the public page. The medic's and
/// the hospital's names come from the signed document (the snapshot taken at issue); `raw_size` is
/// the length of the stored PDF (SQLite reads a blob's length without loading it).
/// A document altered so that it no longer parses names nobody (never a 500).
const SELECT_LANDING: &str = "SELECT p.id, p.signature, p.created_at, p.patient_name, \
    p.rx_status, p.reason_of_rejected, p.seal_kid, p.seal_sig, p.valid_until, p.expires_at, \
    p.fills, \
    CASE WHEN json_valid(p.canonical) THEN COALESCE(json_extract(p.canonical, '$.medic.name'), '') ELSE '' END AS medic_name, \
    CASE WHEN json_valid(p.canonical) THEN COALESCE(json_extract(p.canonical, '$.hospital.name'), '') ELSE '' END AS hospital_name, \
    p.raw_size, p.constancia_time, p.constancia_tsa, p.status_updates, p.draft_rfc, \
    p.draft_serial, p.draft_expires_at, p.efirma_rfc, p.efirma_serial, p.efirma_signed_at \
    FROM prescription_view p WHERE p.signature = ?1 AND (?2 IS NULL OR p.medic_id = ?2)";

const SELECT_PDF: &str = "SELECT d.pdf, dr.expires_at AS draft_expires_at \
    FROM prescription_documents d JOIN prescriptions p ON p.id = d.prescription_id \
    LEFT JOIN prescription_drafts dr ON dr.prescription_id = p.id WHERE p.signature = ?";

/// The first word of a name: all a greeting needs.
pub fn first_name(full: &str) -> String {
    full.split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

pub fn view(caller: Option<Principal>, signature: &str) -> Result<LandingRx, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let who = match &caller {
        Some(Principal::Medic(id)) => int(*id),
        Some(Principal::Admin) | None => Param::Null,
    };
    let db = Db::open()?;
    let found = db.query_opt(SELECT_LANDING, &[text(signature), who], |r| {
        Ok((
            r.i64("id")?,
            LandingRx {
                signature: r.string("signature")?,
                raw_size: r.i64("raw_size")?.max(0) as u64,
                created_at: r.string("created_at")?,
                medic_name: r.string("medic_name")?,
                hospital_name: r.string("hospital_name")?,
                patient_first_name: first_name(&r.string("patient_name")?),
                medications: Vec::new(),
                rx_status: shown_state(r)?,
                reason_of_rejected: r.string("reason_of_rejected")?,
                seal: seal_from_row(r)?,
                valid_until: r.opt_string("valid_until")?,
                fills: u32::try_from(r.i64("fills")?)?,
                sales: Vec::new(),
                access_log: Vec::new(),
                constancia: crate::constancia::from_row(r, &r.string("signature")?)?,
                efirma: crate::efirma::from_row(r)?,
                status_updates: crate::status_reads::from_row(r)?,
            },
        ))
    })?;
    let (id, mut rx) = found.ok_or_else(Error::not_found)?;
    rx.medications = db
        .query(&medications_sql(1), &[int(id)], medication_from_row)?
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    rx.sales = crate::sales::of(&db, id)?;
    if let Some(caller) = &caller {
        reads::record(&db, signature, caller)?;
    }
    // The queued reads first, so the log shows every read answered so far (this one included).
    if let Err(e) = reads::drain(&db) {
        eprintln!("receta: prescriptions: writing the queued reads: {e:?}");
    }
    rx.access_log = access::list(&db, id)?;
    Ok(rx)
}

pub fn pdf(signature: &str) -> Result<Vec<u8>, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let (pdf, draft) = db
        .query_opt(SELECT_PDF, &[text(signature)], |r| {
            Ok((r.blob("pdf")?, r.opt_string("draft_expires_at")?))
        })?
        .ok_or_else(Error::not_found)?;
    match crate::efirma::refusal(draft.as_deref()) {
        Some(refused) => Err(refused),
        None => Ok(pdf),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_names() {
        assert_eq!(first_name("  Juan   Pérez López"), "Juan");
        assert_eq!(first_name("María"), "María");
        assert_eq!(first_name(""), "");
    }

    #[test]
    fn the_medic_filter_is_there() {
        assert!(SELECT_LANDING.contains("(?2 IS NULL OR p.medic_id = ?2)"));
    }
}
