//! The seal of each sale: every dispense of a prescription with its date, pharmacy (name and
//! license as they were) and quantities, oldest first. It is what a pharmacy stamps on a paper
//! prescription (Acuerdo DOF 27-05-2010, "sellar la receta"), shown to the next pharmacy (lookup) and
//! to the patient (the landing page).

use common::db::{Db, int};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{Sale, SaleLine};

/// `?1` prescription: its sales (`prescription_view.sales`, migration 0041: one object per
/// medication sold per dispense, in order; dispenses recorded before 0012 have fill 1, no license).
const SALES: &str = "SELECT sales FROM prescription_view WHERE id = ?1";

/// The sales of prescription `id`, oldest first.
pub fn of(db: &Db, id: i64) -> Result<Vec<Sale>, Error> {
    let column = db.query_opt(SALES, &[int(id)], |r| r.opt_string("sales"))?;
    Ok(parse(column.flatten().as_deref())?)
}

/// The sales of a `sales` column (NULL: none), oldest first.
pub fn parse(column: Option<&str>) -> anyhow::Result<Vec<Sale>> {
    let Some(column) = column else {
        return Ok(Vec::new());
    };
    let lines: Vec<serde_json::Value> = serde_json::from_str(column)?;
    let mut sales: Vec<(i64, Sale)> = Vec::new();
    for l in &lines {
        let number = |key: &str| {
            l[key]
                .as_i64()
                .ok_or_else(|| anyhow::anyhow!("a sale line without {key}: {l}"))
        };
        let text = |key: &str| l[key].as_str().unwrap_or_default().to_string();
        let event = number("event")?;
        let line = SaleLine {
            medication: number("medication")?,
            presentation: text("presentation"),
            qty: u32::try_from(number("qty")?)?,
        };
        match sales.last_mut() {
            Some((last, s)) if *last == event => s.lines.push(line),
            _ => sales.push((
                event,
                Sale {
                    sold_at: text("sold_at"),
                    fill: u32::try_from(number("fill")?)?,
                    pharmacy_name: text("pharmacy_name"),
                    pharmacy_license: text("pharmacy_license"),
                    lines: vec![line],
                },
            )),
        }
    }
    Ok(sales.into_iter().map(|(_, s)| s).collect())
}
