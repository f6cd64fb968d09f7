//! What exactly a pharmacy handed over in a sale (table `dispensed_products`, migration 0024;
//! docs/lifecycle.md, "What was handed over"): the product's GTIN, lot, expiry and serial, and
//! whether it was a substitute. Checked in the sale's transaction (a lot past its expiry, or a
//! substitute the prescriber did not allow, is 409), stored beside the sold units by the sale's
//! statement (migration 0032), and read back with them.

use common::db::Row;
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::DispensedItem;

/// The columns `from_row` reads, of `dispensed_products p` joined to a sold item.
pub const COLUMNS: &str = "p.gtin, p.lot, p.expiry, p.serial, COALESCE(p.substituted, 0) AS substituted, \
    p.substitution_reason";

/// Whether the item says anything of what was handed over.
pub fn says_anything(item: &DispensedItem) -> bool {
    item.gtin.is_some()
        || item.lot.is_some()
        || item.expiry.is_some()
        || item.serial.is_some()
        || item.substituted
}

/// The 409s of what was handed over, item by item (`n` from 1): a lot expired before `today`
/// (`YYYY-MM-DD`, Mexico City), a substitute where `allows_substitution(medication)` is false.
pub fn check(
    items: &[DispensedItem],
    today: &str,
    allows_substitution: impl Fn(i64) -> bool,
) -> Result<(), Error> {
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        if let Some(expiry) = &item.expiry
            && expiry.as_str() < today
        {
            return Err(Error::Conflict(format!(
                "Item {n}: lot expired: {} expired on {expiry}; an expired lot cannot be handed \
                 over.",
                item.lot.as_deref().unwrap_or("the lot")
            )));
        }
        if item.substituted && !allows_substitution(item.medication) {
            return Err(Error::Conflict(format!(
                "Item {n}: the prescriber did not allow substitution of medication {} (\"No \
                 sustituible\", RIS art. 31): hand over exactly what is prescribed.",
                item.medication
            )));
        }
    }
    Ok(())
}

/// A sale's items for its `prescription.dispensed` webhooks, when any says what was handed over
/// (`{id, bought_qty, gtin, lot, expiry, serial, substituted, substitution_reason}` each); `None`
/// keeps the event's body exactly `{signature, type}`, as before.
pub fn webhook_items(items: &[DispensedItem]) -> Option<serde_json::Value> {
    if !items.iter().any(says_anything) {
        return None;
    }
    Some(serde_json::Value::Array(
        items
            .iter()
            .map(|i| {
                serde_json::json!({
                    "id": i.medication,
                    "bought_qty": i.qty,
                    "gtin": i.gtin,
                    "lot": i.lot,
                    "expiry": i.expiry,
                    "serial": i.serial,
                    "substituted": i.substituted,
                    "substitution_reason": i.substitution_reason,
                })
            })
            .collect(),
    ))
}

/// A sold item from a row with `medication_id`, `qty` and `COLUMNS`.
pub fn item_from_row(r: &Row) -> anyhow::Result<DispensedItem> {
    Ok(DispensedItem {
        medication: r.i64("medication_id")?,
        qty: u32::try_from(r.i64("qty")?)?,
        gtin: r.opt_string("gtin")?,
        lot: r.opt_string("lot")?,
        expiry: r.opt_string("expiry")?,
        serial: r.opt_string("serial")?,
        substituted: r.bool("substituted")?,
        substitution_reason: r.opt_string("substitution_reason")?,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn item(medication: i64) -> DispensedItem {
        DispensedItem {
            medication,
            qty: 1,
            gtin: None,
            lot: None,
            expiry: None,
            serial: None,
            substituted: false,
            substitution_reason: None,
        }
    }

    #[test]
    fn an_expired_lot_and_a_forbidden_substitute_are_refused() {
        let mut old = item(1);
        old.lot = Some("L1".into());
        old.expiry = Some("2026-11-27".into());
        let e = check(&[item(2), old.clone()], "2026-11-28", |_| true).unwrap_err();
        assert!(
            matches!(&e, Error::Conflict(m) if m.starts_with("Item 2: lot expired")),
            "{e:?}"
        );
        old.expiry = Some("2026-11-28".into());
        assert!(
            check(&[old], "2026-11-28", |_| true).is_ok(),
            "good through its day"
        );
        let mut swapped = item(3);
        swapped.substituted = true;
        assert!(check(std::slice::from_ref(&swapped), "2026-11-28", |_| true).is_ok());
        let e = check(&[swapped], "2026-11-28", |m| m != 3).unwrap_err();
        assert!(
            matches!(&e, Error::Conflict(m) if m.contains("did not allow substitution")),
            "{e:?}"
        );
        assert!(!says_anything(&item(4)));
    }
}
