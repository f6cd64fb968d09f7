//! A prescription's pharmacy statuses as its reads carry them (`prescription_view.status_updates`,
//! migration 0041: one JSON array column, oldest first, no extra round trip). Written by `status`.

use common::codes::{Coded, PharmacyStatus};
use common::db::Row;

use crate::bindings::exports::receta::prescriptions::prescriptions::{PharmacyRef, StatusUpdate};

/// The statuses of a row's `status_updates` column, oldest first; a
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
