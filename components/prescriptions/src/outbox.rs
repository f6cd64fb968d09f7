//! The outbox rows this component writes in its own transactions (the transactional outbox): the
//! `outbox` table (migration 0003) is worked by the notifications component, which reads exactly
//! the payloads written here (0005 documents them). Issuing writes the patient's email and the
//! `prescription.created` webhooks; a dispense, rejection or cancellation writes its own event's.
//! Issuing and each sale also queue their document's NOM-151 constancia (`stamp_queue`, migration
//! 0020), stamped by the same worker.

use serde_json::json;

use common::db::{Db, int, text};
use common::types::{Error, RxEvent, WebhookDelivery};

const INSERT_OUTBOX: &str = "INSERT INTO outbox \
    (kind, prescription_id, target, payload, status, attempts, next_attempt_at, created_at, updated_at) \
    VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?)";

/// `?1` digest, `?2` subject, `?3` prescription, `?4` now. `OR IGNORE`: a draft may be queued
/// already (0020's backfill, which real Spin re-runs at each start, takes drafts too).
const QUEUE_STAMP: &str = "INSERT OR IGNORE INTO stamp_queue \
    (digest, subject, prescription_id, status, attempts, next_attempt_at, created_at, updated_at) \
    VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4, ?4)";

/// `?1` prescription, `?2` the payload, `?3` now: one message per phone channel its patient is
/// reached on now (`patient_reach`, migration 0030), when the prescription was to be sent to them
/// (`send_rx`).
const QUEUE_MESSAGES: &str = "INSERT INTO messages \
    (channel, prescription_id, target, payload, status, attempts, next_attempt_at, created_at, \
     updated_at) \
    SELECT r.channel, p.id, r.target, ?2, 'pending', 0, ?3, ?3, ?3 \
    FROM prescriptions p JOIN patient_reach r ON r.patient_id = p.patient_id \
    WHERE p.id = ?1 AND p.send_rx = 1 AND r.channel IN ('sms', 'whatsapp') ORDER BY r.channel \
    RETURNING id";

/// Queues the patient's SMS and WhatsApp messages about prescription `id` (`QUEUE_MESSAGES`):
/// `status` is what a pharmacy said, `None` for the prescription's issue. A create's are written
/// by its statement (migration 0031). Whether any was queued.
pub fn queue_messages(
    db: &Db,
    id: i64,
    signature: &str,
    status: Option<&serde_json::Value>,
    now: &str,
) -> Result<bool, Error> {
    let payload = match status {
        Some(status) => json!({"signature": signature, "status": status}),
        None => json!({"signature": signature}),
    };
    let params = [int(id), text(&payload.to_string()), text(now)];
    let queued = db.query(QUEUE_MESSAGES, &params, |r| r.i64("id"))?;
    Ok(!queued.is_empty())
}

/// Queues the NOM-151 constancia of prescription `id`'s document (`signature` is its digest), due
/// at `now`. Queued whether a timestamp authority is configured or not: the worker stamps the
/// backlog once one is. (A create's and a sale's statements queue theirs themselves, migrations
/// 0031 and 0032.)
pub fn queue_stamp(db: &Db, id: i64, signature: &str, now: &str) -> Result<(), Error> {
    db.execute_batched(
        QUEUE_STAMP,
        &[text(signature), text("prescription"), int(id), text(now)],
    )?;
    Ok(())
}

/// One outbox row of an issued prescription.
pub struct Row {
    pub kind: &'static str,
    pub target: String,
    /// The row's JSON, as text.
    pub payload: String,
}

impl Row {
    /// The row as migration 0031's view takes it.
    pub fn json(&self) -> serde_json::Value {
        json!({"kind": self.kind, "target": self.target, "payload": self.payload})
    }
}

/// The outbox rows issuing a prescription queues: the patient's email (to `email`, when one is
/// due) and its `prescription.created` webhooks.
pub fn issued_rows(signature: &str, email: Option<&str>, hooks: &[WebhookDelivery]) -> Vec<Row> {
    let email = email.map(|to| Row {
        kind: "email",
        target: to.to_string(),
        payload: email_payload(signature, to),
    });
    email
        .into_iter()
        .chain(webhook_rows(signature, hooks, None))
        .collect()
}

/// What issuing prescription `id` queues besides its rows, due at `now`: [`issued_rows`], the
/// patient's messages and its constancia. A create writes them with the prescription (migration 0031); a draft queues them
/// here, at its activation (`signing`).
pub fn queue_issued(
    db: &Db,
    id: i64,
    signature: &str,
    email: Option<&str>,
    hooks: &[WebhookDelivery],
    now: &str,
) -> Result<(), Error> {
    for row in issued_rows(signature, email, hooks) {
        insert(db, row.kind, id, &row.target, &row.payload, now)?;
    }
    queue_messages(db, id, signature, None, now)?;
    queue_stamp(db, id, signature, now)
}

/// The payload of the patient's email of prescription `signature`, to `to`.
fn email_payload(signature: &str, to: &str) -> String {
    json!({"signature": signature, "to": [to], "cc": []}).to_string()
}

/// Queues the patient's message about a pharmacy's status (`status`: what the pharmacy said), due
/// at `now`: an email row whose payload carries `status`, which the notifications component writes
/// as a short message without the PDF (and which does not change the prescription's `sent`).
pub fn queue_status_email(
    db: &Db,
    id: i64,
    signature: &str,
    to: &str,
    status: &serde_json::Value,
    now: &str,
) -> Result<(), Error> {
    let payload =
        json!({"signature": signature, "to": [to], "cc": [], "status": status}).to_string();
    insert(db, "email", id, to, &payload, now)
}

/// Queues one row per planned webhook delivery of prescription `id`, due at `now`.
pub fn queue_webhooks(
    db: &Db,
    id: i64,
    signature: &str,
    hooks: &[WebhookDelivery],
    now: &str,
) -> Result<(), Error> {
    queue_webhooks_with(db, id, signature, hooks, now, None)
}

/// `queue_webhooks`, the payload carrying one more member that the notifications component puts
/// in the event's body: a sale's `items` (when it said what was handed over), a pharmacy's
/// `status`.
pub fn queue_webhooks_with(
    db: &Db,
    id: i64,
    signature: &str,
    hooks: &[WebhookDelivery],
    now: &str,
    extra: Option<(&str, &serde_json::Value)>,
) -> Result<(), Error> {
    for row in webhook_rows(signature, hooks, extra) {
        insert(db, row.kind, id, &row.target, &row.payload, now)?;
    }
    Ok(())
}

/// One row per planned webhook delivery of prescription `signature`, the payload carrying `extra`
/// (`queue_webhooks_with`).
pub fn webhook_rows(
    signature: &str,
    hooks: &[WebhookDelivery],
    extra: Option<(&str, &serde_json::Value)>,
) -> Vec<Row> {
    hooks
        .iter()
        .map(|hook| {
            let mut payload = webhook_payload(signature, hook);
            if let Some((key, value)) = extra {
                payload[key] = value.clone();
            }
            Row {
                kind: "webhook",
                target: hook.url.clone(),
                payload: payload.to_string(),
            }
        })
        .collect()
}

/// `rows` as the JSON array migrations 0031 and 0032 take.
pub fn rows_json(rows: &[Row]) -> String {
    serde_json::Value::Array(rows.iter().map(Row::json).collect()).to_string()
}

fn insert(
    db: &Db,
    kind: &str,
    id: i64,
    target: &str,
    payload: &str,
    now: &str,
) -> Result<(), Error> {
    db.execute_batched(
        INSERT_OUTBOX,
        &[
            text(kind),
            int(id),
            text(target),
            text(payload),
            text(now),
            text(now),
            text(now),
        ],
    )?;
    Ok(())
}

/// The payload of a webhook row: what the notifications component needs to sign and send it (the
/// same `webhook-id` on every attempt) and, for every event but `prescription.created` (whose body
/// stays exactly `{"signature"}`), the event's `type`.
fn webhook_payload(signature: &str, hook: &WebhookDelivery) -> serde_json::Value {
    let mut payload = json!({
        "signature": signature,
        "webhook_id": hook.message_id,
        "subscription": hook.subscription,
    });
    if hook.event != RxEvent::Created {
        payload["type"] = json!(common::events::name(hook.event));
    }
    payload
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn hook(event: RxEvent) -> WebhookDelivery {
        WebhookDelivery {
            event,
            subscription: 7,
            url: "https://hooks.example.mx/rx".into(),
            message_id: "msg_0123".into(),
        }
    }

    #[test]
    fn webhook_rows_carry_what_signing_needs() {
        let payload: Value = webhook_payload("ab", &hook(RxEvent::Created));
        assert_eq!(
            payload,
            json!({"signature": "ab", "webhook_id": "msg_0123", "subscription": 7})
        );
    }

    #[test]
    fn later_events_carry_their_type() {
        let payload: Value = webhook_payload("ab", &hook(RxEvent::Dispensed));
        assert_eq!(payload["type"], "prescription.dispensed");
    }
}
