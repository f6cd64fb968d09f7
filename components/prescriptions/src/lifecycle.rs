//! A prescription's life after issue: a pharmacy dispenses (sells units) or rejects it, its medic
//! cancels it (docs/lifecycle.md has the state diagram).
//!
//! Every change runs in one `BEGIN IMMEDIATE … COMMIT`: the state is read, checked and changed under
//! the database's write lock, the event is recorded (`prescription_events`, `dispensed_medications`)
//! and the webhook rows are queued, all or nothing. Each medication's total is raised by a
//! conditional UPDATE (`bought_qty + n <= qty`), so no interleaving of requests, instances or nodes
//! can sell more than was prescribed: the rule lives in the database, not in component memory.

use std::collections::{HashMap, HashSet};

use common::codes::{Labelled, RxState};
use common::db::{Db, Param, Row, int, text};
use common::types::{Error, FieldError, Principal};

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    DispenseRequest, DispensedItem, LifecycleEvent, LifecycleKind, PharmacyRef, Prescription,
    StateChange,
};
use crate::outbox;
use crate::read;

/// The message of a 404 on the pharmacy calls (the original pharmacy API's wording).
pub const RX_NOT_FOUND: &str = "rx not found";
/// How a cancellation's reason reads in `reason_of_rejected`.
pub const CANCELLED_BY_MEDIC: &str = "Cancelada por el médico: ";

const STATE: &str = "SELECT id, medic_id, rx_status FROM prescriptions WHERE signature = ?";

const MEDICATIONS_LEFT: &str =
    "SELECT id, qty, bought_qty FROM medications WHERE prescription_id = ? ORDER BY position";

/// `?1` units, `?2` medication, `?3` prescription: raises the total, never past `qty`.
const SELL: &str = "UPDATE medications SET bought_qty = bought_qty + ?1, bought = (bought_qty + ?1 = qty) \
    WHERE id = ?2 AND prescription_id = ?3 AND bought_qty + ?1 <= qty RETURNING id";

/// `?1` prescription: `?2` (`partially_dispensed`) while something is left to sell, else `?3`
/// (`dispensed`).
const AFTER_SALE: &str = "UPDATE prescriptions SET \
    bought = NOT EXISTS (SELECT 1 FROM medications WHERE prescription_id = ?1 AND bought_qty < qty), \
    rx_status = CASE WHEN EXISTS (SELECT 1 FROM medications WHERE prescription_id = ?1 AND bought_qty < qty) \
      THEN ?2 ELSE ?3 END \
    WHERE id = ?1";

/// `?1` prescription, `?2` the final state, `?3` rejected, `?4` the reason shown: only from `?5`
/// (`available`).
const CLOSE: &str = "UPDATE prescriptions SET rx_status = ?2, rejected = ?3, reason_of_rejected = ?4 \
    WHERE id = ?1 AND rx_status = ?5 RETURNING id";

const INSERT_EVENT: &str = "INSERT INTO prescription_events \
    (prescription_id, kind, pharmacy_id, pharmacy_name, medic_id, sales_code, reason, created_at) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

const INSERT_ITEM: &str =
    "INSERT INTO dispensed_medications (event_id, medication_id, qty) VALUES (?, ?, ?)";

const EVENTS: &str = "SELECT id, kind, pharmacy_id, pharmacy_name, sales_code, reason, created_at \
    FROM prescription_events WHERE prescription_id = ? ORDER BY id";

const ITEMS: &str = "SELECT d.event_id, d.medication_id, d.qty FROM dispensed_medications d \
    JOIN prescription_events e ON e.id = d.event_id WHERE e.prescription_id = ? \
    ORDER BY d.event_id, d.medication_id";

/// A prescription's state as a change sees it.
struct State {
    id: i64,
    medic_id: i64,
    rx_status: RxState,
}

/// Who makes a change, as the event records it.
enum Actor<'a> {
    Pharmacy(&'a PharmacyRef),
    Medic(i64),
}

/// Records a pharmacy's sale; see `prescriptions.dispense` in the WIT.
pub fn dispense(req: DispenseRequest) -> Result<Prescription, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    db.transaction(|db| -> Result<(), Error> {
        let state = state(db, &req.signature)?;
        match state.rx_status {
            RxState::Available | RxState::PartiallyDispensed => {}
            RxState::Dispensed => {
                return Err(Error::Conflict(
                    "This prescription is already fully dispensed: nothing is left to sell.".into(),
                ));
            }
            other => return Err(closed(other, "dispensed")),
        }
        let left = db.query(MEDICATIONS_LEFT, &[int(state.id)], |r| {
            Ok((r.i64("id")?, r.i64("qty")? - r.i64("bought_qty")?))
        })?;
        check_items(&left.into_iter().collect(), &req.items)?;
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
                &[units.clone(), int(item.medication), int(state.id)],
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
        }
        db.execute(
            AFTER_SALE,
            &[
                int(state.id),
                text(RxState::PartiallyDispensed.code()),
                text(RxState::Dispensed.code()),
            ],
        )?;
        outbox::queue_webhooks(db, state.id, &req.signature, &req.webhooks, &now)
    })?;
    read::for_pharmacy(&req.signature)
}

/// Every item names one of this prescription's medications, once, and sells at most what is left;
/// otherwise one 400 on `medications` naming each bad item.
fn check_items(left: &HashMap<i64, i64>, items: &[DispensedItem]) -> Result<(), Error> {
    let mut messages = Vec::new();
    let mut seen = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let n = i + 1;
        let id = item.medication;
        match left.get(&id) {
            None => messages.push(format!(
                "Item {n}: {id} is not the id of a medication of this prescription."
            )),
            Some(_) if !seen.insert(id) => messages.push(format!(
                "Item {n}: medication {id} is listed more than once."
            )),
            Some(&units) if i64::from(item.qty) > units => messages.push(format!(
                "Item {n}: medication {id} has {units} units left to sell; {} were asked for.",
                item.qty
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

/// A pharmacy rejects a prescription; see `prescriptions.reject` in the WIT.
pub fn reject(pharmacy: PharmacyRef, change: StateChange) -> Result<Prescription, Error> {
    close(
        &change,
        &Actor::Pharmacy(&pharmacy),
        RxState::Rejected,
        change.reason.clone(),
    )
}

/// The issuing medic cancels a prescription; see `prescriptions.cancel` in the WIT.
pub fn cancel(medic: i64, change: StateChange) -> Result<Prescription, Error> {
    let shown = format!("{CANCELLED_BY_MEDIC}{}", change.reason);
    close(&change, &Actor::Medic(medic), RxState::Cancelled, shown)
}

/// Moves an `available` prescription to a final state (`rejected` or `cancelled`).
fn close(
    change: &StateChange,
    actor: &Actor,
    to: RxState,
    shown_reason: String,
) -> Result<Prescription, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let rejected = to == RxState::Rejected;
    let verb = if rejected { "rejected" } else { "cancelled" };
    db.transaction(|db| -> Result<(), Error> {
        let state = state(db, &change.signature)?;
        if let Actor::Medic(medic) = actor
            && *medic != state.medic_id
        {
            return Err(Error::not_found());
        }
        match state.rx_status {
            RxState::Available => {}
            RxState::PartiallyDispensed | RxState::Dispensed => {
                return Err(Error::Conflict(format!(
                    "Part of this prescription was already dispensed; it cannot be {verb}."
                )));
            }
            other => return Err(closed(other, verb)),
        }
        let kind = if rejected {
            "rejection"
        } else {
            "cancellation"
        };
        insert_event(db, &state, kind, actor, "", &change.reason, &now)?;
        let params = [
            int(state.id),
            text(to.code()),
            int(rejected.into()),
            text(&shown_reason),
            text(RxState::Available.code()),
        ];
        if db.query_opt(CLOSE, &params, |r| r.i64("id"))?.is_none() {
            return Err(Error::Conflict(
                "The prescription changed while this was recorded; look it up again.".into(),
            ));
        }
        outbox::queue_webhooks(db, state.id, &change.signature, &change.webhooks, &now)
    })?;
    read::for_pharmacy(&change.signature)
}

/// The 409 for a prescription already rejected or cancelled.
fn closed(status: RxState, verb: &str) -> Error {
    let why = match status {
        RxState::Rejected => "was rejected by a pharmacy",
        RxState::Cancelled => "was cancelled by its medic",
        _ => "is not available",
    };
    Error::Conflict(format!("This prescription {why}; it cannot be {verb}."))
}

fn state(db: &Db, signature: &str) -> Result<State, Error> {
    if !crate::document::is_signature(signature) {
        return Err(Error::NotFound(RX_NOT_FOUND.into()));
    }
    db.query_opt(STATE, &[text(signature)], |r| {
        Ok(State {
            id: r.i64("id")?,
            medic_id: r.i64("medic_id")?,
            rx_status: r.code("rx_status")?,
        })
    })?
    .ok_or_else(|| Error::NotFound(RX_NOT_FOUND.into()))
}

fn insert_event(
    db: &Db,
    state: &State,
    kind: &str,
    actor: &Actor,
    sales_code: &str,
    reason: &str,
    now: &str,
) -> Result<i64, Error> {
    let (pharmacy_id, pharmacy_name, medic_id) = match actor {
        Actor::Pharmacy(p) => (int(p.id), text(&p.name), Param::Null),
        Actor::Medic(m) => (Param::Null, text(""), int(*m)),
    };
    let params = [
        int(state.id),
        text(kind),
        pharmacy_id,
        pharmacy_name,
        medic_id,
        text(sales_code),
        text(reason),
        text(now),
    ];
    Ok(db
        .query_opt(INSERT_EVENT, &params, |r| r.i64("id"))?
        .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?)
}

/// Every event of a prescription the caller may see, oldest first.
pub fn list(caller: &Principal, signature: &str) -> Result<Vec<LifecycleEvent>, Error> {
    let db = Db::open()?;
    let rx = read::visible(&db, caller, signature)?.ok_or_else(Error::not_found)?;
    let mut events = db.query(EVENTS, &[int(rx.id)], event_from_row)?;
    let items = db.query(ITEMS, &[int(rx.id)], |r| {
        Ok((
            r.i64("event_id")?,
            DispensedItem {
                medication: r.i64("medication_id")?,
                qty: u32::try_from(r.i64("qty")?)?,
            },
        ))
    })?;
    for (event_id, item) in items {
        if let Some(e) = events.iter_mut().find(|e| e.id == event_id) {
            e.items.push(item);
        }
    }
    Ok(events)
}

fn event_from_row(r: &Row) -> anyhow::Result<LifecycleEvent> {
    let kind = match r.string("kind")?.as_str() {
        "dispense" => LifecycleKind::Dispense,
        "rejection" => LifecycleKind::Rejection,
        "cancellation" => LifecycleKind::Cancellation,
        other => anyhow::bail!("unknown prescription event kind {other:?}"),
    };
    let pharmacy = match r.opt_i64("pharmacy_id")? {
        Some(id) => Some(PharmacyRef {
            id,
            name: r.string("pharmacy_name")?,
        }),
        None => None,
    };
    Ok(LifecycleEvent {
        id: r.i64("id")?,
        kind,
        pharmacy,
        sales_code: r.string("sales_code")?,
        reason: r.string("reason")?,
        items: Vec::new(),
        created_at: r.string("created_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(medication: i64, qty: u32) -> DispensedItem {
        DispensedItem { medication, qty }
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

    #[test]
    fn a_sale_within_what_is_left_passes() {
        let left = HashMap::from([(10, 2), (11, 1)]);
        assert!(check_items(&left, &[item(10, 2), item(11, 1)]).is_ok());
        assert!(check_items(&left, &[item(10, 1)]).is_ok());
    }

    #[test]
    fn every_bad_item_is_named() {
        let left = HashMap::from([(10, 2), (11, 0)]);
        let m = messages(check_items(
            &left,
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
        assert!(SELL.contains("bought_qty + ?1 <= qty"));
        // A close happens only from the state passed as ?5 (`available`, in `close`).
        assert!(CLOSE.contains("rx_status = ?5"));
    }
}
