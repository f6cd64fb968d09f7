//! A prescription's pharmacy statuses as its reads carry them (`read::COLUMNS`, the landing): one
//! JSON array column, no extra round trip. Written by `status`.

use common::codes::{Coded, PharmacyStatus};
use common::db::Row;

use crate::bindings::exports::receta::prescriptions::prescriptions::{PharmacyRef, StatusUpdate};

/// A prescription's statuses as one JSON array column (`AS status_updates`, oldest first), for
/// the reads that carry them (`read::COLUMNS`, the landing): one correlated subquery on the
/// index `pharmacy_statuses_by_prescription`, no extra round trip.
macro_rules! updates_column {
    () => {
        "(SELECT json_group_array(json_object('id', u.id, 'code', u.code, 'pharmacy_id', \
         u.pharmacy_id, 'pharmacy_name', u.pharmacy_name, 'pickup_code', u.pickup_code, \
         'reason', u.reason, 'created_at', u.created_at)) FROM (SELECT * FROM pharmacy_statuses u \
         WHERE u.prescription_id = p.id ORDER BY u.id) u) AS status_updates"
    };
}
pub(crate) use updates_column;

/// The statuses of a row's `status_updates` column (`updates_column!`), oldest first; a
/// code this build does not know is left out.
pub fn from_row(r: &Row) -> anyhow::Result<Vec<StatusUpdate>> {
    let Some(column) = r.opt_string("status_updates")? else {
        return Ok(Vec::new());
    };
    let rows: Vec<serde_json::Value> = serde_json::from_str(&column)?;
    let opt = |v: &serde_json::Value| v.as_str().map(str::to_string);
    Ok(rows
        .iter()
        .filter_map(|u| {
            Some(StatusUpdate {
                id: u["id"].as_i64()?,
                status: PharmacyStatus::parse(u["code"].as_str()?)?,
                pharmacy: PharmacyRef {
                    id: u["pharmacy_id"].as_i64()?,
                    name: opt(&u["pharmacy_name"]).unwrap_or_default(),
                    license: String::new(),
                },
                pickup_code: opt(&u["pickup_code"]),
                reason: opt(&u["reason"]),
                created_at: opt(&u["created_at"]).unwrap_or_default(),
            })
        })
        .collect())
}
