//! The outbox rows (table `outbox`, migration 0003) and their attempts (`outbox_attempts`, 0005):
//! queueing an email, leasing due rows, recording what an attempt did, and the admin's view.
//!
//! Times are ISO 8601 UTC text with microseconds (`common::time::iso8601`), like every stored
//! timestamp: fixed width, so comparing the text compares the times.

use common::codes::{Coded, SentState};
use std::time::SystemTime;

use serde_json::{Value, json};

use common::db::{self, Db, Param, boolean, int, opt_int, opt_text, text};
use common::queue::{self, Outcome, Queue};
use common::time::iso8601;
use common::types::{Error, PageRequest, Principal};

use crate::resends;

use crate::bindings::exports::receta::notifications::notifications::{
    Attempt, Delivery, DeliveryFilter, DeliveryKind, DeliveryPage, DeliveryStatus,
};

pub const EMAIL: &str = "email";
pub const WEBHOOK: &str = "webhook";

/// A kind's name in the `outbox.kind` column (and the API).
pub fn kind_name(kind: DeliveryKind) -> &'static str {
    match kind {
        DeliveryKind::Email => EMAIL,
        DeliveryKind::Webhook => WEBHOOK,
    }
}

fn kind_from(name: &str) -> anyhow::Result<DeliveryKind> {
    match name {
        EMAIL => Ok(DeliveryKind::Email),
        WEBHOOK => Ok(DeliveryKind::Webhook),
        other => anyhow::bail!("unknown outbox kind {other:?}"),
    }
}

/// A status's name in the `outbox.status` column (and the API).
pub fn status_name(status: DeliveryStatus) -> &'static str {
    match status {
        DeliveryStatus::Pending => "pending",
        DeliveryStatus::Done => "done",
        DeliveryStatus::Dead => "dead",
    }
}

pub fn status_from(name: &str) -> anyhow::Result<DeliveryStatus> {
    match name {
        "pending" => Ok(DeliveryStatus::Pending),
        "done" => Ok(DeliveryStatus::Done),
        "dead" => Ok(DeliveryStatus::Dead),
        other => anyhow::bail!("unknown outbox status {other:?}"),
    }
}

/// The outbox, a leased queue (`common::queue`) keyed by `id`.
const QUEUE: Queue = Queue {
    table: "outbox",
    key: "id",
};

/// What narrows the queue's due rows (`common::queue`), on `?4`: whether email rows may be taken.
/// Without a relay (`?4` false) only the webhooks, found through `outbox_due_by_kind` (migration
/// 0007): with `kind <> 'email'` SQLite walks every pending email row, and without a relay those
/// stay pending: the cron worker's check grew with the backlog (50,000 pending emails in `cargo
/// xtask bench`).
fn due(emails: bool) -> &'static str {
    match emails {
        false => "kind = 'webhook' AND NOT ?4",
        true => "(?4 OR kind <> 'email')",
    }
}

/// What a lease returns of each row.
const LEASED_COLUMNS: &str = "id, kind, prescription_id, target, payload";

/// `?1` prescription, `?2` target, `?3` payload, `?4` now, `?5` who resent it (NULL: not a
/// resend), `?6` to how many recipients.
const INSERT_EMAIL: &str = "INSERT INTO outbox \
    (kind, prescription_id, target, payload, status, attempts, next_attempt_at, created_at, \
     updated_at, resent_by, resent_to) \
    VALUES ('email', ?1, ?2, ?3, 'pending', 0, ?4, ?4, ?4, ?5, ?6) RETURNING id";

const SIGNATURE_OF: &str = "SELECT signature FROM prescriptions WHERE id = ?";

/// A prescription that said it would not be sent is pending again once an email is queued for it.
/// One of the two writes to a table this component does not own (`prescriptions`, owned by the
/// prescriptions component): the email's delivery state is this component's knowledge
/// (docs/architecture.md, "Tables and their owners").
/// `?1` prescription, `?2` `pending`, `?3` `not_sent` (`common::codes::SentState`).
const MARK_PENDING: &str =
    "UPDATE prescriptions SET sent_status = ?2 WHERE id = ?1 AND sent_status = ?3";

/// `?1` the row: a link code's email forgets its code once done or dead (it was in clear only on
/// its way to the relay).
const FORGET_CODE: &str =
    "UPDATE outbox SET payload = json_remove(payload, '$.link_code.code') WHERE id = ?1";

const INSERT_ATTEMPT: &str = "INSERT INTO outbox_attempts \
    (outbox_id, number, started_at, duration_ms, status_code, error) VALUES (?, ?, ?, ?, ?, ?)";

/// Written by this component on purpose (see `wit/notifications.wit` and docs/architecture.md): the
/// relay accepted the email.
/// `?1` prescription, `?2` `sent_email` (`common::codes::SentState`).
const MARK_SENT: &str = "UPDATE prescriptions SET sent = 1, sent_status = ?2 WHERE id = ?1";

const DELIVERY_COLUMNS: &str = "o.id, o.kind, p.signature, o.target, o.status, o.attempts, \
    o.next_attempt_at, o.created_at, o.updated_at, o.last_error, o.payload, o.prescription_id";

/// `?1` kind, `?2` status, `?3` signature, `?4` subscription: each NULL for any.
const FILTER: &str = "(?1 IS NULL OR o.kind = ?1) AND (?2 IS NULL OR o.status = ?2) \
    AND (?3 IS NULL OR p.signature = ?3) \
    AND (?4 IS NULL OR (o.kind = 'webhook' AND json_extract(o.payload, '$.subscription') = ?4))";

fn count_sql() -> String {
    format!(
        "SELECT COUNT(*) FROM outbox o JOIN prescriptions p ON p.id = o.prescription_id WHERE {FILTER}"
    )
}

fn page_sql() -> String {
    format!(
        "SELECT {DELIVERY_COLUMNS} FROM outbox o JOIN prescriptions p ON p.id = o.prescription_id \
         WHERE {FILTER} ORDER BY o.id DESC LIMIT ?5 OFFSET ?6"
    )
}

fn by_id_sql() -> String {
    format!(
        "SELECT {DELIVERY_COLUMNS} FROM outbox o JOIN prescriptions p ON p.id = o.prescription_id \
         WHERE o.id = ?"
    )
}

const ATTEMPTS_OF: &str = "SELECT number, started_at, duration_ms, status_code, error \
    FROM outbox_attempts WHERE outbox_id = ? ORDER BY id";

/// A leased row's content.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: i64,
    pub kind: String,
    pub prescription_id: i64,
    pub target: String,
    pub payload: Value,
}

/// A leased outbox row.
pub type Leased = queue::Leased<Row>;

/// What one attempt did, for `outbox_attempts`.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    pub started_at: SystemTime,
    pub duration_ms: u32,
    pub status_code: Option<u16>,
    pub error: Option<String>,
}

/// Whether any row is due (a read, so an idle worker never takes the write lock).
pub fn any_due(db: &Db, now: SystemTime, emails: bool) -> Result<bool, Error> {
    QUEUE.any_due(db, due(emails), now, &[boolean(emails)])
}

/// Leases up to `limit` due rows until `until`.
pub fn lease(
    db: &Db,
    now: SystemTime,
    until: SystemTime,
    limit: u32,
    emails: bool,
) -> Result<Vec<Leased>, Error> {
    QUEUE.lease(
        db,
        due(emails),
        LEASED_COLUMNS,
        now,
        until,
        limit,
        &[boolean(emails)],
        |r| {
            Ok(Row {
                id: r.i64("id")?,
                kind: r.string("kind")?,
                prescription_id: r.i64("prescription_id")?,
                target: r.string("target")?,
                payload: serde_json::from_str(&r.string("payload")?).unwrap_or(Value::Null),
            })
        },
    )
}

/// Ends the row (`common::queue`'s commit policy: its own transaction) with the attempt's record; a
/// delivered email also marks its prescription sent. Only the attempt is written when the lease was
/// lost.
pub fn finish(
    db: &Db,
    leased: &Leased,
    attempt: Option<&AttemptRecord>,
    gone: Option<i64>,
    outcome: &Outcome,
) -> Result<(), Error> {
    let row = &leased.row;
    // The prescription's own email (not a message about a pharmacy's status, nor a link code's)
    // marks it sent.
    let link_code = row.kind == EMAIL && row.payload.get("link_code").is_some();
    let marks_sent = *outcome == Outcome::Done
        && row.kind == EMAIL
        && row.payload.get("status").is_none()
        && !link_code;
    let ended = matches!(outcome, Outcome::Done | Outcome::Dead { .. });
    QUEUE.finish(db, &int(row.id), &leased.lease, outcome, |db, held| {
        // The subscription a 410 disabled ends with its row, in one transaction: no reader sees
        // the one without the other.
        if let Some(subscription) = gone {
            crate::webhooks::disable(db, subscription)?;
        }
        if let Some(a) = attempt {
            db.execute(
                INSERT_ATTEMPT,
                &[
                    int(row.id),
                    int(leased.attempts.into()),
                    text(&iso8601(a.started_at)),
                    int(a.duration_ms.into()),
                    a.status_code.map_or(Param::Null, |s| int(s.into())),
                    opt_text(a.error.as_deref()),
                ],
            )?;
        }
        if held && marks_sent {
            db.execute(
                MARK_SENT,
                &[int(row.prescription_id), text(SentState::SentEmail.code())],
            )?;
        }
        if held && link_code && ended {
            db.execute(FORGET_CODE, &[int(row.id)])?;
        }
        Ok::<(), Error>(())
    })?;
    Ok(())
}

/// Queues a resend of a prescription's email by `sender`, within the resend limits (`resends`);
/// `not-found` when it does not exist, `too-many-requests` over a limit (nothing queued).
pub fn resend_email(
    sender: Principal,
    prescription: i64,
    to: &[String],
    cc: &[String],
) -> Result<i64, Error> {
    let db = Db::open()?;
    let signature = db
        .query_opt(SIGNATURE_OF, &[int(prescription)], |r| {
            r.string("signature")
        })?
        .ok_or_else(Error::not_found)?;
    let first = to
        .first()
        .ok_or_else(|| Error::field("email", "An address is required."))?;
    let payload = json!({"signature": signature, "to": to, "cc": cc}).to_string();
    let limits = resends::Limits::load();
    let sender = resends::sender(sender);
    let recipients = (to.len() + cc.len()) as i64;
    let now = SystemTime::now();
    let stamp = iso8601(now);
    db.transaction(|db| -> Result<i64, Error> {
        resends::admit(db, limits, &sender, prescription, recipients, now)?;
        let id = db
            .query_opt(
                INSERT_EMAIL,
                &[
                    int(prescription),
                    text(first),
                    text(&payload),
                    text(&stamp),
                    text(&sender),
                    int(recipients),
                ],
                |r| r.i64("id"),
            )?
            .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?;
        db.execute(
            MARK_PENDING,
            &[
                int(prescription),
                text(SentState::Pending.code()),
                text(SentState::NotSent.code()),
            ],
        )?;
        Ok(id)
    })
}

/// Queues the email carrying a link code (docs/patients.md, "Who speaks for whom") to `to`, the
/// address the record's own medic recorded, on the row of that record's prescription
/// `prescription`. The code stays in the row only until it is delivered or given up on.
pub fn queue_link_code(prescription: i64, to: &str, code: &str) -> Result<i64, Error> {
    let db = Db::open()?;
    let payload = json!({
        "to": [to],
        "cc": [],
        "link_code": {"code": code},
    });
    let params = [
        int(prescription),
        text(to),
        text(&payload.to_string()),
        text(&iso8601(SystemTime::now())),
        Param::Null,
        Param::Null,
    ];
    db.query_opt(INSERT_EMAIL, &params, |r| r.i64("id"))?
        .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row").into())
}

/// Deliveries matching `filter`, newest first.
pub fn list(filter: &DeliveryFilter, page: PageRequest) -> Result<DeliveryPage, Error> {
    let db = Db::open()?;
    let params = [
        opt_text(filter.kind.map(kind_name)),
        opt_text(filter.status.map(status_name)),
        opt_text(filter.signature.as_deref()),
        opt_int(filter.subscription),
    ];
    let count = db.scalar_i64(&count_sql(), &params)?;
    let mut paged = params.to_vec();
    paged.extend([int(page.limit.into()), int(page.offset.into())]);
    let results = db.query(&page_sql(), &paged, delivery)?;
    Ok(DeliveryPage {
        count: u64::try_from(count).unwrap_or(0),
        results,
    })
}

/// One delivery with its attempts.
pub fn get(id: i64) -> Result<Delivery, Error> {
    let db = Db::open()?;
    get_with(&db, id)
}

fn get_with(db: &Db, id: i64) -> Result<Delivery, Error> {
    let mut d = db
        .query_opt(&by_id_sql(), &[int(id)], delivery)?
        .ok_or_else(Error::not_found)?;
    d.history = db.query(ATTEMPTS_OF, &[int(id)], |r| {
        Ok(Attempt {
            number: u32::try_from(r.i64("number")?).unwrap_or(0),
            started_at: r.string("started_at")?,
            duration_ms: u32::try_from(r.i64("duration_ms")?).unwrap_or(0),
            status_code: r
                .opt_i64("status_code")?
                .and_then(|s| u16::try_from(s).ok()),
            error: r.opt_string("error")?,
        })
    })?;
    Ok(d)
}

/// Makes a delivery due now with a fresh schedule. `check` may refuse it (a deleted subscription).
pub fn replay(
    id: i64,
    check: impl FnOnce(&Db, &Delivery) -> Result<(), Error>,
) -> Result<Delivery, Error> {
    let db = Db::open()?;
    let current = get_with(&db, id)?;
    check(&db, &current)?;
    if !QUEUE.replay(&db, &int(id), "")? {
        return Err(Error::BadRequest(
            "This delivery is being attempted right now; replay it once the attempt ends.".into(),
        ));
    }
    get_with(&db, id)
}

/// The texts of the array `key` of an outbox row's payload (an email's `to`, `cc`...); none when it
/// is missing or not an array.
pub fn strings(payload: &Value, key: &str) -> Vec<String> {
    payload[key]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn delivery(r: &db::Row) -> anyhow::Result<Delivery> {
    let payload: Value = serde_json::from_str(&r.string("payload")?).unwrap_or(Value::Null);
    let strings = |key: &str| strings(&payload, key);
    Ok(Delivery {
        id: r.i64("id")?,
        kind: kind_from(&r.string("kind")?)?,
        prescription: r.i64("prescription_id")?,
        signature: r.string("signature")?,
        target: r.string("target")?,
        status: status_from(&r.string("status")?)?,
        attempts: u32::try_from(r.i64("attempts")?).unwrap_or(0),
        next_attempt_at: r.string("next_attempt_at")?,
        created_at: r.string("created_at")?,
        updated_at: r.string("updated_at")?,
        last_error: r.opt_string("last_error")?,
        subscription: payload["subscription"].as_i64(),
        webhook_id: payload["webhook_id"].as_str().map(str::to_string),
        to: strings("to"),
        cc: strings("cc"),
        history: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_due_conditions_take_the_same_parameters() {
        for emails in [false, true] {
            let sql = due(emails);
            assert!(sql.contains("?4"), "{sql} lacks ?4");
            assert!(!sql.contains("?2") && !sql.contains("?3"), "{sql}");
        }
        assert!(due(false).starts_with("kind = 'webhook'"));
    }
}
