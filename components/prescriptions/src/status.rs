//! The pharmacy's status (table `pharmacy_statuses`, migration 0028; docs/lifecycle.md, "The
//! pharmacy's status"): what a pharmacy says it is doing with a prescription, after the NHS
//! Prescription Status Update codes. Each pharmacy has its own thread of statuses on a
//! prescription (a patient turned away by one may take it to another); `next` holds the rules of
//! what may follow what, `set` checks the prescription and writes the status, its webhook rows
//! and the patient's email, SMS and WhatsApp messages in one `BEGIN IMMEDIATE … COMMIT`. The reads carry them through
//! `status_reads`.

use serde_json::json;

use common::codes::{Coded, PharmacyStatus, RxState};
use common::db::{Db, int, opt_text, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    PharmacyRef, StatusChange, StatusUpdate,
};
use crate::outbox;
use crate::state::{closed, state};

/// `?1` prescription, `?2` pharmacy, `?3` now, `?4` the status posted, `?5` two hours before now:
/// another pharmacy's live claim (its expiry), whether this pharmacy sold any of it, this
/// pharmacy's last status, whether the patient was already told of this status (this pharmacy
/// posted it before, or any pharmacy posted `ready_to_collect` in the last two hours: `told`), and
/// where the patient's email goes (the email on file, when the prescription's own email was not
/// ruled out and the patient is reached by email, `patient_reach`).
const CONTEXT: &str = "SELECT \
    (SELECT c.expires_at FROM claims c WHERE c.prescription_id = ?1 AND c.expires_at > ?3 \
       AND c.pharmacy_id <> ?2) AS claimed_until, \
    EXISTS (SELECT 1 FROM prescription_events e WHERE e.prescription_id = ?1 \
       AND e.kind = 'dispense' AND e.pharmacy_id = ?2) AS sold_here, \
    (SELECT s.code FROM pharmacy_statuses s WHERE s.prescription_id = ?1 AND s.pharmacy_id = ?2 \
       ORDER BY s.id DESC LIMIT 1) AS last_code, \
    EXISTS (SELECT 1 FROM pharmacy_statuses s WHERE s.prescription_id = ?1 AND s.code = ?4 \
       AND (s.pharmacy_id = ?2 OR (s.code = 'ready_to_collect' AND s.created_at > ?5))) AS told, \
    (SELECT CASE WHEN p.sent_status <> 'not_sent' AND EXISTS (SELECT 1 FROM patient_reach r \
       WHERE r.patient_id = p.patient_id AND r.channel = 'email') THEN p.patient_email END \
       FROM prescriptions p WHERE p.id = ?1) AS message_to";

const INSERT: &str = "INSERT INTO pharmacy_statuses \
    (prescription_id, pharmacy_id, pharmacy_name, code, pickup_code, reason, created_at) \
    VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id";

/// A pharmacy's `ready_to_collect` is messaged to the patient at most once in this long, whichever
/// pharmacy posts it (the NHS's status updates: at most once per two hours).
const READY_TOLD_EVERY: i64 = 2 * 3600;

/// `pharmacy` posts `change`; see `prescriptions.set-status` in the WIT. The answer says whether
/// the patient was messaged: at most once per status value per pharmacy and prescription, and
/// `ready_to_collect` at most once in two hours per prescription (docs/notifications.md).
pub fn set(pharmacy: PharmacyRef, change: StatusChange) -> Result<(StatusUpdate, bool), Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let code = change.status;
    db.transaction(|db| -> Result<(StatusUpdate, bool), Error> {
        let state = state(db, &change.signature)?;
        let (claimed_until, sold_here, last, told, message_to) =
            context(db, state.id, pharmacy.id, code, &now)?;
        match state.rx_status {
            RxState::Available | RxState::PartiallyDispensed => {}
            RxState::Dispensed if sold_here => {}
            RxState::Dispensed => {
                return Err(Error::Conflict(
                    "This prescription was fully dispensed by another pharmacy; only a pharmacy \
                     that sold it may post its status."
                        .into(),
                ));
            }
            other => return Err(closed(other, &state, "given a pharmacy status")),
        }
        if let Some(until) = claimed_until {
            return Err(Error::Conflict(format!(
                "This prescription is being dispensed elsewhere (claimed by another pharmacy until \
                 {until}); its status cannot be posted until then."
            )));
        }
        next(last, code, sold_here).map_err(Error::Conflict)?;
        let id = db
            .query_opt(
                INSERT,
                &[
                    int(state.id),
                    int(pharmacy.id),
                    text(&pharmacy.name),
                    text(code.code()),
                    opt_text(change.pickup_code.as_deref()),
                    opt_text(change.reason.as_deref()),
                    text(&now),
                ],
                |r| r.i64("id"),
            )?
            .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?;
        let update = StatusUpdate {
            id,
            status: code,
            pharmacy: PharmacyRef {
                license: String::new(),
                ..pharmacy.clone()
            },
            pickup_code: change.pickup_code.clone(),
            reason: change.reason.clone(),
            created_at: now.clone(),
        };
        let said = json!({
            "status": code.code(),
            "pharmacy": {"id": pharmacy.id, "name": pharmacy.name},
            "pickup_code": change.pickup_code,
            "reason": change.reason,
        });
        outbox::queue_webhooks_with(
            db,
            state.id,
            &change.signature,
            &change.webhooks,
            &now,
            Some(("status", &said)),
        )?;
        let tell_patient = !told
            && matches!(
                code,
                PharmacyStatus::ReadyToCollect | PharmacyStatus::NotDispensed
            );
        let mut queued = false;
        if let Some(to) = message_to.filter(|to| tell_patient && to.contains('@')) {
            outbox::queue_status_email(db, state.id, &change.signature, &to, &said, &now)?;
            queued = true;
        }
        if tell_patient {
            queued |= outbox::queue_messages(db, state.id, &change.signature, Some(&said), &now)?;
        }
        Ok((update, queued))
    })
}

type Context = (
    Option<String>,
    bool,
    Option<PharmacyStatus>,
    bool,
    Option<String>,
);

fn context(
    db: &Db,
    prescription: i64,
    pharmacy: i64,
    code: PharmacyStatus,
    now: &str,
) -> Result<Context, Error> {
    let before = common::time::shift(now, -READY_TOLD_EVERY).unwrap_or_default();
    let params = [
        int(prescription),
        int(pharmacy),
        text(now),
        text(code.code()),
        text(&before),
    ];
    let row = db.query_opt(CONTEXT, &params, |r| {
        Ok((
            r.opt_string("claimed_until")?,
            r.bool("sold_here")?,
            r.opt_string("last_code")?,
            r.bool("told")?,
            r.opt_string("message_to")?,
        ))
    })?;
    let (claimed, sold, last, told, to) = row.ok_or_else(|| anyhow::anyhow!("no context row"))?;
    Ok((
        claimed,
        sold,
        last.as_deref().and_then(PharmacyStatus::parse),
        told,
        to,
    ))
}

/// Whether `next` may follow this pharmacy's `last` status; the 409's message when not.
pub fn next(
    last: Option<PharmacyStatus>,
    next: PharmacyStatus,
    sold_here: bool,
) -> Result<(), String> {
    use PharmacyStatus::*;
    if let Some(done @ (Collected | NotDispensed)) = last {
        return Err(format!(
            "This pharmacy's status is already {} (final); nothing follows it.",
            done.code()
        ));
    }
    if next == Collected && !sold_here {
        return Err(
            "`collected` comes only after this pharmacy recorded a sale of this prescription."
                .into(),
        );
    }
    let step = |s: PharmacyStatus| match s {
        WithPharmacy => 0,
        Preparing => 1,
        ReadyToCollect | ReadyToDispatch => 2,
        Dispatched => 3,
        Collected | NotDispensed => 4,
    };
    let ok = match (last, next) {
        (_, Dispatched) => last == Some(ReadyToDispatch),
        (Some(ReadyToDispatch), Collected) => false,
        // Ready either way: the patient may change their mind between pickup and delivery.
        (Some(ReadyToCollect), ReadyToDispatch) | (Some(ReadyToDispatch), ReadyToCollect) => true,
        (Some(last), next) => step(next) > step(last),
        (None, _) => true,
    };
    if ok {
        return Ok(());
    }
    let after = last.map_or("no status", |l| l.code());
    Err(format!(
        "`{}` cannot follow `{after}` (docs/lifecycle.md, \"The pharmacy's status\").",
        next.code()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use PharmacyStatus::*;

    #[test]
    fn forward_only_and_nothing_after_a_final_status() {
        assert!(next(None, WithPharmacy, false).is_ok());
        assert!(next(None, ReadyToCollect, false).is_ok());
        assert!(next(Some(WithPharmacy), Preparing, false).is_ok());
        assert!(next(Some(Preparing), WithPharmacy, false).is_err());
        assert!(next(Some(Preparing), Preparing, false).is_err());
        assert!(next(Some(ReadyToCollect), ReadyToDispatch, false).is_ok());
        assert!(next(Some(ReadyToDispatch), ReadyToCollect, false).is_ok());
        assert!(next(Some(ReadyToCollect), NotDispensed, false).is_ok());
        for last in [Collected, NotDispensed] {
            for code in PharmacyStatus::ALL {
                assert!(next(Some(last), *code, true).is_err(), "{last:?} {code:?}");
            }
        }
    }

    #[test]
    fn dispatched_only_after_ready_to_dispatch_and_collected_only_after_a_sale() {
        assert!(next(None, Dispatched, true).is_err());
        assert!(next(Some(ReadyToCollect), Dispatched, true).is_err());
        assert!(next(Some(ReadyToDispatch), Dispatched, true).is_ok());
        assert!(next(Some(ReadyToCollect), Collected, false).is_err());
        assert!(next(Some(ReadyToCollect), Collected, true).is_ok());
        assert!(next(Some(ReadyToDispatch), Collected, true).is_err());
        assert!(next(Some(Dispatched), Collected, true).is_ok());
        assert!(next(None, Collected, true).is_ok());
    }
}
