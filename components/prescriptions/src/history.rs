//! A person's medication history for a medic they consented to (docs/patients.md, "A medication
//! history, only with consent"): their prescriptions from other medics, each as its detail reads
//! it with its events, and each read logged in the patient's access log under the reading medic's
//! name. Who may ask is decided before (`patients.history-access`); this reads and logs.

use common::codes::RxState;
use common::db::{Db, Param, int, numbered, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::HistoryEntry;

/// At most this many prescriptions are listed (a year of a person's prescriptions).
pub const MAX: i64 = 100;

/// `?1` the reader (excluded), `?2` since, `?3` limit, `?4`… the patient ids: issued prescriptions
/// (not drafts) of other medics, newest first, with what decides whether they are expired.
fn candidates(patients: usize) -> String {
    let listed = numbered(4, patients);
    format!(
        "SELECT p.id, p.signature, p.rx_status, p.expires_at, COALESCE(m.name, '') AS medic_name \
         FROM prescriptions p LEFT JOIN medics m ON m.id = p.medic_id \
         LEFT JOIN prescription_drafts dr ON dr.prescription_id = p.id \
         WHERE p.patient_id IN ({listed}) AND p.medic_id <> ?1 AND p.created_at >= ?2 \
         AND dr.prescription_id IS NULL ORDER BY p.id DESC LIMIT ?3"
    )
}

/// `?1` prescription, `?2` the reading medic's name, `?3` now: the patient's access-log entry.
const LOGGED: &str = "INSERT INTO access_log (prescription_id, action, actor, actor_name, created_at) \
    VALUES (?1, 'read', 'medic', ?2, ?3)";

/// See `prescriptions.history-of` in the WIT.
pub fn of(
    reader: i64,
    reader_name: &str,
    patients: &[i64],
    since: &str,
    active_only: bool,
) -> Result<Vec<HistoryEntry>, Error> {
    if patients.is_empty() {
        return Ok(Vec::new());
    }
    let db = Db::open()?;
    let mut params: Vec<Param> = vec![int(reader), text(since), int(MAX)];
    params.extend(patients.iter().map(|id| int(*id)));
    let rows = db.query(&candidates(patients.len()), &params, |r| {
        Ok((
            r.i64("id")?,
            r.string("signature")?,
            crate::read::shown_state(r)?,
            r.string("medic_name")?,
        ))
    })?;
    let now = common::time::now_iso8601();
    let mut entries = Vec::new();
    for (id, signature, shown, medic_name) in rows {
        let active = matches!(shown, RxState::Available | RxState::PartiallyDispensed);
        if active_only && !active {
            continue;
        }
        let prescription = crate::detail::for_pharmacy(&signature)?;
        let events = crate::lifecycle::events_of(&db, id)?;
        db.execute_log_grade(LOGGED, &[int(id), text(reader_name), text(&now)])?;
        entries.push(HistoryEntry {
            prescription,
            medic_name,
            events,
        });
    }
    Ok(entries)
}
