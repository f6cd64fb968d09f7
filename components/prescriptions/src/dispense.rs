//! A pharmacy's sale (a dispense) of a prescription, with its receipt (docs/lifecycle.md).
//!
//! It runs in one `BEGIN IMMEDIATE … COMMIT`: the state is read, checked and changed under the
//! database's write lock, the event is recorded (`prescription_events`, `dispensed_medications`)
//! and the webhook rows are queued, all or nothing. Each medication's total is raised by a
//! conditional UPDATE (`bought_qty + n <= qty × fills`, `n <= qty`), so no interleaving of
//! requests, instances or nodes can sell more than was prescribed: the rule lives in the database,
//! not in component memory. Validity and the interval between fills are decided by time inside the
//! same transaction (docs/mexican-rules.md). Another pharmacy's live claim (`claims`) refuses a
//! sale, in the same transaction too.

use std::collections::{HashMap, HashSet};

use common::codes::{Coded, RxState};
use common::db::{Db, int, text};
use common::types::{Error, FieldError};

use crate::access;
use crate::bindings::exports::receta::prescriptions::prescriptions::{
    DispenseRequest, Dispensed, DispensedItem,
};
use crate::claims;
use crate::detail;
use crate::handover;
use crate::outbox;
use crate::receipts::{self, Line, Sale};
use crate::rules;
use crate::state::{State, closed, state};

use crate::lifecycle::{Actor, insert_event};

const MEDICATIONS_LEFT: &str = "SELECT m.id, m.qty, m.bought_qty, m.drug_upc, m.presentation, \
    ns.medication_id IS NULL AS substitution_allowed FROM medications m \
    LEFT JOIN medication_no_substitution ns ON ns.medication_id = m.id \
    WHERE m.prescription_id = ? ORDER BY m.position";

/// `?1` units, `?2` medication, `?3` prescription, `?4` fills: raises the total, never past
/// `qty × fills`, and never by more than `qty` in one sale.
const SELL: &str = "UPDATE medications SET bought_qty = bought_qty + ?1, \
    bought = (bought_qty + ?1 = qty * ?4) \
    WHERE id = ?2 AND prescription_id = ?3 AND ?1 <= qty AND bought_qty + ?1 <= qty * ?4 RETURNING id";

/// `?1` prescription, `?4` fills: `?2` (`partially_dispensed`) while something is left to sell,
/// else `?3` (`dispensed`).
const AFTER_SALE: &str = "UPDATE prescriptions SET \
    bought = NOT EXISTS (SELECT 1 FROM medications WHERE prescription_id = ?1 AND bought_qty < qty * ?4), \
    rx_status = CASE WHEN EXISTS (SELECT 1 FROM medications WHERE prescription_id = ?1 AND bought_qty < qty * ?4) \
      THEN ?2 ELSE ?3 END \
    WHERE id = ?1";

/// `?1` event, `?2` the pharmacy's license, `?3` the fill the sale belongs to.
const INSERT_DETAILS: &str =
    "INSERT INTO dispense_details (event_id, pharmacy_license, fill) VALUES (?1, ?2, ?3)";

/// `?1` prescription, `?2` a fill: when its first sale was (NULL if none). Dispenses recorded
/// before 0012 count as fill 1.
const FILL_STARTED: &str = "SELECT MIN(e.created_at) AS started FROM prescription_events e \
    LEFT JOIN dispense_details x ON x.event_id = e.id \
    WHERE e.prescription_id = ?1 AND e.kind = 'dispense' AND COALESCE(x.fill, 1) = ?2";

const INSERT_ITEM: &str =
    "INSERT INTO dispensed_medications (event_id, medication_id, qty) VALUES (?, ?, ?)";

/// One medication as a sale sees it.
struct Left {
    qty: i64,
    bought: i64,
    drug_upc: String,
    presentation: String,
    substitution_allowed: bool,
}

/// Records a pharmacy's sale and its receipt; see `prescriptions.dispense` in the WIT.
pub fn dispense(req: DispenseRequest) -> Result<Dispensed, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let receipt = db.transaction(|db| {
        let state = state(db, &req.signature)?;
        match state.rx_status {
            RxState::Available | RxState::PartiallyDispensed => {}
            RxState::Dispensed => {
                return Err(Error::Conflict(
                    "This prescription is already fully dispensed: nothing is left to sell.".into(),
                ));
            }
            other => return Err(closed(other, &state, "dispensed")),
        }
        let claimed_at = claims::check_burn(
            db,
            state.id,
            &req.pharmacy,
            req.claim_secret.as_deref(),
            &now,
        )?;
        let meds: HashMap<i64, Left> = db
            .query(MEDICATIONS_LEFT, &[int(state.id)], |r| {
                let left = Left {
                    qty: r.i64("qty")?,
                    bought: r.i64("bought_qty")?,
                    drug_upc: r.string("drug_upc")?,
                    presentation: r.string("presentation")?,
                    substitution_allowed: r.bool("substitution_allowed")?,
                };
                Ok((r.i64("id")?, left))
            })?
            .into_iter()
            .collect();
        check_items(&meds, state.fills, &req.items)?;
        let today = common::time::mexico_city_date(&now)
            .map(|d| d.to_string())
            .unwrap_or_default();
        handover::check(&req.items, &today, |id| {
            meds.get(&id).is_none_or(|m| m.substitution_allowed)
        })?;
        let fill = check_interval(db, &state, &meds, &req.items, &now)?;
        let event = insert_event(
            db,
            &state,
            "dispense",
            &Actor::Pharmacy(&req.pharmacy),
            &req.sales_code,
            "",
            &now,
        )?;
        for item in &req.items {
            let units = int(item.qty.into());
            let sold = db.query_opt(
                SELL,
                &[
                    units.clone(),
                    int(item.medication),
                    int(state.id),
                    int(state.fills),
                ],
                |r| r.i64("id"),
            )?;
            if sold.is_none() {
                // Cannot happen under the write lock after `check_items`; refuse rather than oversell.
                return Err(Error::Conflict(
                    "The prescription changed while this sale was recorded; look it up again."
                        .into(),
                ));
            }
            db.execute(INSERT_ITEM, &[int(event), int(item.medication), units])?;
            handover::store(db, event, item)?;
        }
        db.execute(
            INSERT_DETAILS,
            &[int(event), text(&req.pharmacy.license), int(fill)],
        )?;
        db.execute(
            AFTER_SALE,
            &[
                int(state.id),
                text(RxState::PartiallyDispensed.code()),
                text(RxState::Dispensed.code()),
                int(state.fills),
            ],
        )?;
        claims::close(db, state.id)?;
        let lines = req
            .items
            .iter()
            .filter_map(|i| {
                let m = meds.get(&i.medication)?;
                Some(Line {
                    medication: i.medication,
                    drug_upc: &m.drug_upc,
                    presentation: &m.presentation,
                    qty: i.qty,
                    handed_over: i,
                })
            })
            .collect();
        let sale = Sale {
            dispense_id: event,
            signature: &req.signature,
            pharmacy: &req.pharmacy,
            sales_code: &req.sales_code,
            lines,
            fill,
            claimed_at: claimed_at.as_deref(),
            sold_at: &now,
        };
        let receipt = receipts::issue(db, state.id, &sale)?;
        let stamped = outbox::Stamped::Receipt;
        outbox::queue_stamp(db, stamped, state.id, &receipt.digest, &now)?;
        let actor = access::Actor::Pharmacy(&req.pharmacy);
        access::record(db, &req.signature, access::Action::Dispense, &actor, &now)?;
        let items = handover::webhook_items(&req.items);
        outbox::queue_webhooks_with(
            db,
            state.id,
            &req.signature,
            &req.webhooks,
            &now,
            items.as_ref().map(|items| ("items", items)),
        )?;
        Ok::<_, Error>(receipt)
    })?;
    Ok(Dispensed {
        prescription: detail::for_pharmacy(&req.signature)?,
        receipt,
    })
}

/// Every item names one of this prescription's medications, once, sells at most `qty` (one fill's
/// worth) and at most what is left of `qty × fills`; otherwise one 400 on `medications` naming each
/// bad item.
fn check_items(
    meds: &HashMap<i64, Left>,
    fills: i64,
    items: &[DispensedItem],
) -> Result<(), Error> {
    let mut messages = Vec::new();
    let mut seen = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let id = item.medication;
        let asked = i64::from(item.qty);
        match meds.get(&id) {
            None => messages.push(format!(
                "Item {n}: {id} is not the id of a medication of this prescription."
            )),
            Some(_) if !seen.insert(id) => messages.push(format!(
                "Item {n}: medication {id} is listed more than once."
            )),
            Some(m) if asked > m.qty * fills - m.bought => messages.push(format!(
                "Item {n}: medication {id} has {} units left to sell; {asked} were asked for.",
                m.qty * fills - m.bought
            )),
            Some(m) if asked > m.qty => messages.push(format!(
                "Item {n}: medication {id} may be sold at most {} units in one dispense (one fill); \
                 {asked} were asked for.",
                m.qty
            )),
            Some(_) => {}
        }
    }
    if messages.is_empty() {
        Ok(())
    } else {
        Err(Error::Invalid(vec![FieldError {
            field: "medications".into(),
            messages,
        }]))
    }
}

/// The fill this sale belongs to (`rules::fill_of`, the highest any medication reaches). A sale
/// that starts fill k+1 sooner than `fill_interval_days` after fill k's first sale is 409 saying
/// when it may be filled.
fn check_interval(
    db: &Db,
    state: &State,
    meds: &HashMap<i64, Left>,
    items: &[DispensedItem],
    now: &str,
) -> Result<i64, Error> {
    let current = meds
        .values()
        .map(|m| rules::fill_of(m.bought, m.qty))
        .max()
        .unwrap_or(0);
    let reached = items
        .iter()
        .filter_map(|i| {
            let m = meds.get(&i.medication)?;
            Some(rules::fill_of(m.bought + i64::from(i.qty), m.qty))
        })
        .max()
        .unwrap_or(current)
        .max(current);
    if reached > current && current >= 1 && state.fill_interval_days > 0 {
        let started = db
            .query_opt(FILL_STARTED, &[int(state.id), int(current)], |r| {
                r.opt_string("started")
            })?
            .flatten();
        let from = started
            .as_deref()
            .and_then(|s| common::time::shift(s, state.fill_interval_days * 86_400));
        if let (Some(started), Some(from)) = (started, from)
            && now < from.as_str()
        {
            return Err(Error::Conflict(format!(
                "Fill {reached} of {} may be dispensed from {from} on: fill {current} began at \
                 {started} and the medic set {} days between fills.",
                state.fills, state.fill_interval_days
            )));
        }
    }
    Ok(reached.max(1))
}

/// A pharmacy rejects a prescription; see `prescriptions.reject` in the WIT.

#[cfg(test)]
mod tests {
    use super::*;

    fn item(medication: i64, qty: u32) -> DispensedItem {
        DispensedItem {
            qty,
            ..crate::handover::tests::item(medication)
        }
    }

    fn messages(result: Result<(), Error>) -> Vec<String> {
        match result {
            Err(Error::Invalid(errors)) => {
                assert_eq!(errors.len(), 1);
                assert_eq!(errors[0].field, "medications");
                errors[0].messages.clone()
            }
            other => panic!("expected a 400 on medications, got {other:?}"),
        }
    }

    fn meds(rows: &[(i64, i64, i64)]) -> HashMap<i64, Left> {
        rows.iter()
            .map(|&(id, qty, bought)| {
                let left = Left {
                    qty,
                    bought,
                    drug_upc: String::new(),
                    presentation: String::new(),
                    substitution_allowed: true,
                };
                (id, left)
            })
            .collect()
    }

    #[test]
    fn a_sale_within_what_is_left_passes() {
        let left = meds(&[(10, 2, 0), (11, 1, 0)]);
        assert!(check_items(&left, 1, &[item(10, 2), item(11, 1)]).is_ok());
        assert!(check_items(&left, 1, &[item(10, 1)]).is_ok());
    }

    #[test]
    fn a_repeat_sells_one_fill_at_a_time() {
        // qty 2, fills 2: 3 at once is more than one fill; 2 + 2 is all; nothing after.
        let fresh = meds(&[(10, 2, 0)]);
        let m = messages(check_items(&fresh, 2, &[item(10, 3)]));
        assert!(m[0].contains("at most 2 units in one dispense"), "{m:?}");
        assert!(check_items(&fresh, 2, &[item(10, 2)]).is_ok());
        assert!(check_items(&meds(&[(10, 2, 2)]), 2, &[item(10, 2)]).is_ok());
        let m = messages(check_items(&meds(&[(10, 2, 3)]), 2, &[item(10, 2)]));
        assert!(m[0].contains("has 1 units left"), "{m:?}");
    }

    #[test]
    fn every_bad_item_is_named() {
        let left = meds(&[(10, 2, 0), (11, 1, 1)]);
        let m = messages(check_items(
            &left,
            1,
            &[item(10, 3), item(99, 1), item(11, 1), item(10, 1)],
        ));
        assert_eq!(
            m,
            vec![
                "Item 1: medication 10 has 2 units left to sell; 3 were asked for.",
                "Item 2: 99 is not the id of a medication of this prescription.",
                "Item 3: medication 11 has 0 units left to sell; 1 were asked for.",
                "Item 4: medication 10 is listed more than once.",
            ]
        );
    }

    #[test]
    fn the_sale_never_passes_qty_in_sql() {
        assert!(SELL.contains("?1 <= qty AND bought_qty + ?1 <= qty * ?4"));
    }
}
