//! What a pharmacy may dispense now of one person's prescriptions (the counter lookup,
//! docs/patients.md "At the counter"): issued (not a draft awaiting its medic's e.firma),
//! `available` or `partially_dispensed` and not past its validity, and not held by another
//! pharmacy's live claim. Newest first, at most `MAX`.

use common::codes::{Coded, RxState};
use common::db::{Db, Param, int, numbered, text};
use common::types::Error;

/// At most this many prescriptions are listed (a person rarely has more than a few open).
pub const MAX: i64 = 50;

/// `?1` now, `?2` the pharmacy, `?3` limit, `?4`… the patient ids: the candidates, with what decides
/// whether they are shown as expired.
fn candidates(patients: usize) -> String {
    format!(
        "SELECT p.signature, p.rx_status, p.expires_at FROM prescriptions p \
         LEFT JOIN prescription_drafts dr ON dr.prescription_id = p.id \
         LEFT JOIN claims c ON c.prescription_id = p.id AND c.expires_at > ?1 \
         WHERE p.patient_id IN ({}) AND p.rx_status IN ('{}', '{}') \
         AND dr.prescription_id IS NULL AND (c.pharmacy_id IS NULL OR c.pharmacy_id = ?2) \
         ORDER BY p.id DESC LIMIT ?3",
        numbered(4, patients),
        RxState::Available.code(),
        RxState::PartiallyDispensed.code(),
    )
}

/// The signatures of `patients`' prescriptions that `pharmacy` may dispense now.
pub fn for_patients(pharmacy: i64, patients: &[i64]) -> Result<Vec<String>, Error> {
    if patients.is_empty() {
        return Ok(Vec::new());
    }
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let mut params: Vec<Param> = vec![text(&now), int(pharmacy), int(MAX)];
    params.extend(patients.iter().map(|id| int(*id)));
    let rows = db.query(&candidates(patients.len()), &params, |r| {
        let shown = crate::read::shown_state(r)?;
        Ok((r.string("signature")?, shown))
    })?;
    Ok(rows
        .into_iter()
        .filter(|(_, shown)| matches!(shown, RxState::Available | RxState::PartiallyDispensed))
        .map(|(signature, _)| signature)
        .collect())
}
