//! The antibiotic register (Acuerdo DOF 27-05-2010): one row per antibiotic medication a pharmacy
//! sold, with what the agreement asks the pharmacy to record: date of sale, generic and/or brand
//! name, presentation, quantity, and the prescriber's name, cédula and address. The prescriber's
//! data come from the signed document (the snapshot taken at issue).

use common::db::{Db, Param, Row, int, text};
use common::time::{Date, end_of_mexico_city_day};
use common::types::{Error, PageRequest};

use crate::bindings::exports::receta::prescriptions::prescriptions::{RegisterPage, RegisterRow};

/// `?1` pharmacy, `?2` from (inclusive), `?3` to (exclusive), both stored UTC timestamps: the
/// pharmacy's antibiotic sales in that period.
const FROM: &str = "FROM prescription_events e \
    JOIN dispensed_medications i ON i.event_id = e.id \
    JOIN medications m ON m.id = i.medication_id \
    JOIN prescriptions p ON p.id = e.prescription_id \
    JOIN prescription_documents doc ON doc.prescription_id = p.id \
    LEFT JOIN dispensed_products h ON h.event_id = e.id AND h.medication_id = i.medication_id \
    WHERE e.pharmacy_id = ?1 AND e.kind = 'dispense' AND m.antibiotic = 1 AND e.created_at >= ?2 \
    AND e.created_at < ?3";

/// A document field, or '' when the document does not parse (an altered one names nobody).
fn field(path: &str) -> String {
    format!(
        "CASE WHEN json_valid(doc.canonical) THEN COALESCE(json_extract(doc.canonical, '{path}'), '') ELSE '' END"
    )
}

fn count_sql() -> String {
    format!("SELECT COUNT(*) {FROM}")
}

/// `?4` limit (-1: all), `?5` offset.
fn page_sql() -> String {
    format!(
        "SELECT e.created_at AS sold_at, m.drug, m.drug_upc, m.presentation, i.qty, \
         {} AS medic_name, {} AS medic_cedula_prof, {} AS hospital_location, {} AS hospital_zip, \
         p.signature, e.sales_code, h.gtin, h.lot, h.expiry, \
         COALESCE(h.substituted, 0) AS substituted {FROM} ORDER BY e.created_at, e.id, m.position LIMIT ?4 OFFSET ?5",
        field("$.medic.name"),
        field("$.medic.cedula_prof"),
        field("$.hospital.location"),
        field("$.hospital.zip_code"),
    )
}

fn from_row(r: &Row) -> anyhow::Result<RegisterRow> {
    let drug = r.string("drug")?;
    let presentation = r.string("presentation")?;
    let location = r.string("hospital_location")?;
    let zip = r.string("hospital_zip")?;
    let hospital_address = if zip.trim().is_empty() || location.contains(zip.trim()) {
        location
    } else {
        format!("{}, C.P. {}", location.trim(), zip.trim())
    };
    Ok(RegisterRow {
        sold_at: r.string("sold_at")?,
        drug_name: if drug.trim().is_empty() {
            presentation.clone()
        } else {
            drug
        },
        drug_upc: r.string("drug_upc")?,
        presentation,
        qty: u32::try_from(r.i64("qty")?)?,
        medic_name: r.string("medic_name")?,
        medic_cedula_prof: r.string("medic_cedula_prof")?,
        hospital_address,
        signature: r.string("signature")?,
        sales_code: r.string("sales_code")?,
        gtin: r.opt_string("gtin")?,
        lot: r.opt_string("lot")?,
        expiry: r.opt_string("expiry")?,
        substituted: r.bool("substituted")?,
    })
}

/// The register of `pharmacy` for the Mexico City days `from` to `to` (both included).
pub fn read(
    pharmacy: i64,
    from: &str,
    to: &str,
    page: Option<PageRequest>,
) -> Result<RegisterPage, Error> {
    let day = |field: &str, s: &str| {
        Date::parse(s).ok_or_else(|| Error::field(field, "Enter a date as YYYY-MM-DD."))
    };
    let (first, last) = (day("from", from)?, day("to", to)?);
    if first > last {
        return Err(Error::field("from", "Must not be after `to`."));
    }
    let start = first
        .plus_days(-1)
        .map(|d| end_of_mexico_city_day(&d))
        .unwrap_or_default();
    let end = end_of_mexico_city_day(&last);
    let db = Db::open()?;
    let period = [int(pharmacy), text(&start), text(&end)];
    let count = db.scalar_i64(&count_sql(), &period)? as u64;
    let (limit, offset) = page.map_or((-1, 0), |p| (p.limit.into(), p.offset.into()));
    let params: Vec<Param> = period
        .into_iter()
        .chain([int(limit), int(offset)])
        .collect();
    let results = db.query(&page_sql(), &params, from_row)?;
    Ok(RegisterPage { count, results })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pharmacys_antibiotic_dispenses() {
        let sql = page_sql();
        for part in [
            "e.pharmacy_id = ?1",
            "e.kind = 'dispense'",
            "m.antibiotic = 1",
            "e.created_at >= ?2 AND e.created_at < ?3",
        ] {
            assert!(sql.contains(part), "{part}");
            assert!(count_sql().contains(part), "{part}");
        }
    }
}
