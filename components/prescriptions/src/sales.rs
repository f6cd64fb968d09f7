//! The seal of each sale: every dispense of a prescription with its date, pharmacy (name and
//! license as they were) and quantities, oldest first. It is what a pharmacy stamps on a paper
//! prescription (Acuerdo DOF 27-05-2010, "sellar la receta"), shown to the next pharmacy (lookup) and
//! to the patient (the landing page).

use common::db::{Db, Row, int, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{Sale, SaleLine};
use crate::document::is_signature;

/// `?1` prescription: one row per medication sold per dispense, in order. Dispenses recorded before
/// 0012 have no details: fill 1, no license.
const SALES: &str = "SELECT e.id AS event_id, e.created_at, e.pharmacy_name, \
    COALESCE(x.pharmacy_license, '') AS pharmacy_license, COALESCE(x.fill, 1) AS fill, \
    i.medication_id, i.qty, m.presentation \
    FROM prescription_events e \
    LEFT JOIN dispense_details x ON x.event_id = e.id \
    JOIN dispensed_medications i ON i.event_id = e.id \
    JOIN medications m ON m.id = i.medication_id \
    WHERE e.prescription_id = ?1 AND e.kind = 'dispense' ORDER BY e.id, m.position";

const ID: &str = "SELECT id FROM prescriptions WHERE signature = ?";

/// The sales of the prescription `signature` names; `not-found` when unknown.
pub fn by_signature(signature: &str) -> Result<Vec<Sale>, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let id = db
        .query_opt(ID, &[text(signature)], |r| r.i64("id"))?
        .ok_or_else(Error::not_found)?;
    of(&db, id)
}

/// The sales of prescription `id`, oldest first.
pub fn of(db: &Db, id: i64) -> Result<Vec<Sale>, Error> {
    let rows = db.query(SALES, &[int(id)], |r: &Row| {
        Ok((
            r.i64("event_id")?,
            Sale {
                sold_at: r.string("created_at")?,
                fill: u32::try_from(r.i64("fill")?)?,
                pharmacy_name: r.string("pharmacy_name")?,
                pharmacy_license: r.string("pharmacy_license")?,
                lines: Vec::new(),
            },
            SaleLine {
                medication: r.i64("medication_id")?,
                presentation: r.string("presentation")?,
                qty: u32::try_from(r.i64("qty")?)?,
            },
        ))
    })?;
    let mut sales: Vec<(i64, Sale)> = Vec::new();
    for (event, sale, line) in rows {
        match sales.last_mut() {
            Some((last, s)) if *last == event => s.lines.push(line),
            _ => sales.push((
                event,
                Sale {
                    lines: vec![line],
                    ..sale
                },
            )),
        }
    }
    Ok(sales.into_iter().map(|(_, s)| s).collect())
}
