//! A prescription's life after issue: a pharmacy rejects it, its medic cancels it, and the events
//! that record every change, a sale's (`dispense`) included (docs/lifecycle.md has the state
//! diagram).
//!
//! Every change runs in one `BEGIN IMMEDIATE … COMMIT`: the state is read, checked and changed under
//! the database's write lock, the event is recorded (`prescription_events`) and the webhook rows are
//! queued, all or nothing.

use common::codes::{Coded, RxState};
use common::db::{Db, Param, Row, int, text};
use common::types::{Error, Principal};

use crate::access;
use crate::bindings::exports::receta::prescriptions::prescriptions::{
    LifecycleEvent, LifecycleKind, PharmacyRef, Prescription, StateChange,
};
use crate::detail;
use crate::handover;
use crate::outbox;
use crate::read;
use crate::reads;
pub use crate::state::RX_NOT_FOUND;
use crate::state::{State, closed, state};

/// How a cancellation's reason reads in `reason_of_rejected`.
pub const CANCELLED_BY_MEDIC: &str = "Cancelada por el médico: ";

/// `?1` prescription, `?2` the final state, `?3` rejected, `?4` the reason shown: only from `?5`
/// (`available`).
const CLOSE: &str = "UPDATE prescriptions SET rx_status = ?2, rejected = ?3, reason_of_rejected = ?4 \
    WHERE id = ?1 AND rx_status = ?5 RETURNING id";

const INSERT_EVENT: &str = "INSERT INTO prescription_events \
    (prescription_id, kind, pharmacy_id, pharmacy_name, medic_id, sales_code, reason, created_at) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

const EVENTS: &str = "SELECT id, kind, pharmacy_id, pharmacy_name, sales_code, reason, created_at \
    FROM prescription_events WHERE prescription_id = ? ORDER BY id";

fn items_sql() -> String {
    format!(
        "SELECT d.event_id, d.medication_id, d.qty, {} FROM dispensed_medications d \
         JOIN prescription_events e ON e.id = d.event_id \
         LEFT JOIN dispensed_products p ON p.event_id = d.event_id AND p.medication_id = d.medication_id \
         WHERE e.prescription_id = ? ORDER BY d.event_id, d.medication_id",
        handover::COLUMNS
    )
}

/// Who makes a change, as the event records it.
pub(crate) enum Actor<'a> {
    Pharmacy(&'a PharmacyRef),
    Medic(i64),
}

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
            other => return Err(closed(other, &state, verb)),
        }
        let kind = if rejected {
            "rejection"
        } else {
            "cancellation"
        };
        insert_event(db, &state, kind, actor, "", &change.reason, &now)?;
        let (action, who) = match actor {
            Actor::Pharmacy(p) => (access::Action::Reject, access::Actor::Pharmacy(p)),
            Actor::Medic(_) => (access::Action::Cancel, access::Actor::Medic),
        };
        access::record(db, &change.signature, action, &who, &now)?;
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
    detail::for_pharmacy(&change.signature)
}

pub(crate) fn insert_event(
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
    let events = events_of(&db, rx.id)?;
    reads::record(&db, signature, caller)?;
    Ok(events)
}

/// Every event of prescription `id`, oldest first, each with its sold items.
pub fn events_of(db: &Db, id: i64) -> Result<Vec<LifecycleEvent>, Error> {
    let mut events = db.query(EVENTS, &[int(id)], event_from_row)?;
    let items = db.query(&items_sql(), &[int(id)], |r| {
        Ok((r.i64("event_id")?, handover::item_from_row(r)?))
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
            license: String::new(),
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

    #[test]
    fn a_close_happens_only_from_the_state_it_was_read_in() {
        // ?5 is `available`, as `close` passes it.
        assert!(CLOSE.contains("rx_status = ?5"));
    }
}
