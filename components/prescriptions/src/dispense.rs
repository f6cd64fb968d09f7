//! A pharmacy's sale (a dispense) of a prescription, with its receipt (docs/lifecycle.md).
//!
//! It runs in one `BEGIN IMMEDIATE … COMMIT`: the state, the live claim and the medications are
//! read in one statement, checked and changed under the database's write lock, the event is
//! recorded and everything else the sale writes (the units sold, the new state, the receipt, the
//! access-log entry, the webhook rows) is one statement (migration 0032's view), all or nothing.
//! Each medication's total is raised only while `bought_qty + n <= qty × fills` and `n <= qty`
//! (checked here under the lock, and again by that statement, which refuses the whole sale
//! otherwise), so no interleaving of requests, instances or nodes can sell more than was
//! prescribed: the rule lives in the database, not in component memory. Validity and the interval
//! between fills are decided by time inside the same transaction (docs/mexican-rules.md). Another
//! pharmacy's live claim (`claims`) refuses a sale, in the same transaction too.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use common::codes::{Coded, RxState};
use common::db::{Db, int, text};
use common::types::{Error, FieldError};

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    DispenseRequest, Dispensed, DispensedItem,
};
use crate::claims::{self, Live};
use crate::detail;
use crate::handover;
use crate::outbox;
use crate::receipts::{self, Line, Sale};
use crate::rules;
use crate::state::{self, STATE_COLUMNS, State, closed};

use crate::lifecycle::{Actor, insert_event};

/// `?1` signature, `?2` now: one row per medication in order (one with NULL medication columns
/// for a prescription without any), each with the prescription's state (`state::STATE_COLUMNS`)
/// and its live claim (`claims::LIVE_COLUMNS`, NULL without one).
fn sale_state_sql() -> String {
    format!(
        "SELECT {STATE_COLUMNS}, {}, m.id AS med_id, m.qty AS med_qty, m.bought_qty AS med_bought_qty, \
         m.drug_upc AS med_drug_upc, m.presentation AS med_presentation, \
         m.substitution_allowed AS med_substitution_allowed FROM {} \
         LEFT JOIN claims c ON c.prescription_id = p.id AND c.expires_at > ?2 \
         LEFT JOIN medications m ON m.prescription_id = p.id \
         WHERE p.signature = ?1 ORDER BY m.position",
        claims::LIVE_COLUMNS,
        crate::read::VIEW
    )
}

/// Everything a sale writes after its event, in one statement (migration 0032 names each
/// parameter's meaning).
const INSERT_SALE: &str = "INSERT INTO prescription_sales \
    (event_id, prescription_id, fills, items, fill, pharmacy_id, pharmacy_name, pharmacy_license, \
     partial, done, receipt_digest, receipt_document, receipt_kid, receipt_sig, sold_at, outbox) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)";

/// What `INSERT_SALE` refuses a sale with when a total would pass what was prescribed.
const CHANGED: &str = "the prescription changed while this sale was recorded";

/// `?1` prescription, `?2` a fill: when its first sale was (NULL if none). Dispenses recorded
/// before 0012 count as fill 1.
const FILL_STARTED: &str = "SELECT MIN(e.created_at) AS started FROM prescription_events e \
    WHERE e.prescription_id = ?1 AND e.kind = 'dispense' AND e.fill = ?2";

/// One medication as a sale sees it.
struct Left {
    qty: i64,
    bought: i64,
    drug_upc: String,
    presentation: String,
    substitution_allowed: bool,
}

/// What a sale reads under the write lock: the state, the live claim, the medications.
struct Before {
    state: State,
    claim: Option<Live>,
    meds: HashMap<i64, Left>,
}

/// The prescription `signature` names as a sale sees it (`state::state`'s refusals), in one
/// statement.
fn before(db: &Db, signature: &str, now: &str) -> Result<Before, Error> {
    if !crate::document::is_signature(signature) {
        return Err(Error::NotFound(state::RX_NOT_FOUND.into()));
    }
    let first = Cell::new(true);
    let rows = db.query(&sale_state_sql(), &[text(signature), text(now)], |r| {
        let head = match first.replace(false) {
            true => Some((state::from_row(r)?, claims::live_of(r)?)),
            false => None,
        };
        let medication = match r.opt_i64("med_id")? {
            Some(id) => Some((
                id,
                Left {
                    qty: r.i64("med_qty")?,
                    bought: r.i64("med_bought_qty")?,
                    drug_upc: r.string("med_drug_upc")?,
                    presentation: r.string("med_presentation")?,
                    substitution_allowed: r.bool("med_substitution_allowed")?,
                },
            )),
            None => None,
        };
        Ok((head, medication))
    })?;
    let mut rows = rows.into_iter();
    let (head, first_medication) = rows.next().unzip();
    let (found, claim) = head.flatten().unzip();
    let state = state::changeable(found)?;
    let meds = first_medication
        .flatten()
        .into_iter()
        .chain(rows.filter_map(|(_, m)| m))
        .collect();
    Ok(Before {
        state,
        claim: claim.flatten(),
        meds,
    })
}

/// Records a pharmacy's sale and its receipt; see `prescriptions.dispense` in the WIT.
pub fn dispense(req: DispenseRequest) -> Result<Dispensed, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let receipt = db.transaction(|db| {
        let Before { state, claim, meds } = before(db, &req.signature, &now)?;
        match state.rx_status {
            RxState::Available | RxState::PartiallyDispensed => {}
            RxState::Dispensed => {
                return Err(Error::Conflict(
                    "This prescription is already fully dispensed: nothing is left to sell.".into(),
                ));
            }
            other => return Err(closed(other, &state, "dispensed")),
        }
        let claimed_at =
            claims::check_burn(claim.as_ref(), &req.pharmacy, req.claim_secret.as_deref())?;
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
        let receipt = receipts::seal(db, &sale)?;
        let items = handover::webhook_items(&req.items);
        let hooks = outbox::webhook_rows(
            &req.signature,
            &req.webhooks,
            items.as_ref().map(|items| ("items", items)),
        );
        let p = &req.pharmacy;
        db.execute(
            INSERT_SALE,
            &[
                int(event),
                int(state.id),
                int(state.fills),
                text(&items_json(&req.items)),
                int(fill),
                int(p.id),
                text(&p.name),
                text(&p.license),
                text(RxState::PartiallyDispensed.code()),
                text(RxState::Dispensed.code()),
                text(&receipt.seal.digest),
                text(&receipt.document),
                text(&receipt.seal.kid),
                text(&receipt.seal.sig),
                text(&now),
                text(&outbox::rows_json(&hooks)),
            ],
        )
        .map_err(|e| match format!("{e:#}").contains(CHANGED) {
            // Cannot happen under the write lock after `check_items`; refused, nothing written.
            true => Error::Conflict(
                "The prescription changed while this sale was recorded; look it up again.".into(),
            ),
            false => Error::from(e),
        })?;
        Ok::<_, Error>(receipt.seal)
    })?;
    Ok(Dispensed {
        prescription: detail::pharmacy_view(&req.signature)?,
        receipt,
    })
}

/// A sale's items as migration 0032 takes them (`says`: whether it said what was handed over).
fn items_json(items: &[DispensedItem]) -> String {
    let items: Vec<serde_json::Value> = items
        .iter()
        .map(|i| {
            serde_json::json!({
                "medication": i.medication,
                "qty": i.qty,
                "says": i64::from(handover::says_anything(i)),
                "gtin": i.gtin,
                "lot": i.lot,
                "expiry": i.expiry,
                "serial": i.serial,
                "substituted": i64::from(i.substituted),
                "substitution_reason": i.substitution_reason,
            })
        })
        .collect();
    serde_json::Value::Array(items).to_string()
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
        let sale = include_str!("../../../migrations/0032_prescription_sales.sql");
        assert!(sale.contains("WHERE json_extract(j.value, '$.qty') <= m.qty"));
        assert!(
            sale.contains(
                "AND m.bought_qty + json_extract(j.value, '$.qty') <= m.qty * NEW.fills)"
            )
        );
    }
}
