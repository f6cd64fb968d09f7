//! The `messages` rows (migration 0030): due, leased, ended, listed and replayed.

use std::time::SystemTime;

use serde_json::Value;

use common::db::{self, Db, Param, int, opt_text, text};
use common::queue::{Leased, Outcome, Queue};
use common::types::{Error, PageRequest};

use crate::bindings::exports::receta::notifications::notifications::{
    DeliveryStatus, Message, MessageChannel, MessageFilter, MessagePage, MessageReceipt,
};
use crate::outbox::{status_from, status_name};

pub const SMS: &str = "sms";
pub const WHATSAPP: &str = "whatsapp";

/// A channel's name in the `messages.channel` column (and the API).
pub fn channel_name(channel: MessageChannel) -> &'static str {
    match channel {
        MessageChannel::Sms => SMS,
        MessageChannel::Whatsapp => WHATSAPP,
    }
}

fn channel_from(name: &str) -> anyhow::Result<MessageChannel> {
    match name {
        SMS => Ok(MessageChannel::Sms),
        WHATSAPP => Ok(MessageChannel::Whatsapp),
        other => anyhow::bail!("unknown message channel {other:?}"),
    }
}

/// A receipt as the `messages.receipt` column names it.
fn receipt_from(name: &str) -> anyhow::Result<MessageReceipt> {
    match name {
        "sent" => Ok(MessageReceipt::Sent),
        "delivered" => Ok(MessageReceipt::Delivered),
        "read" => Ok(MessageReceipt::Read),
        "failed" => Ok(MessageReceipt::Failed),
        other => anyhow::bail!("unknown message receipt {other:?}"),
    }
}

/// The messages, a leased queue (`common::queue`) keyed by `id`.
const QUEUE: Queue = Queue {
    table: "messages",
    key: "id",
};

/// What narrows the queue's due rows (`common::queue`), on `?4`: the channels whose provider is
/// configured (a JSON array).
const DUE: &str = "channel IN (SELECT value FROM json_each(?4))";

/// What a replay sets back beside the queue's columns: the mark of an attempt in flight and the
/// last receipt go, since a replay is a new message.
const REPLAY_RESET: &str =
    "sending = NULL, receipt = NULL, receipt_at = NULL, receipt_error = NULL,";

/// What a lease returns of each row (`sending`: an earlier attempt still marked in flight).
const LEASED_COLUMNS: &str = "id, channel, prescription_id, target, payload, sending";

/// `?1` the attempt, `?2` id, `?3` the lease held: the attempt is in flight.
pub const SENDING: &str =
    "UPDATE messages SET sending = ?1 WHERE id = ?2 AND lease_until = ?3 RETURNING id";

/// `?1` id, `?2` the provider's id for it (NULL: none came back): the attempt is over.
const ENDED: &str = "UPDATE messages SET sending = NULL, provider_id = COALESCE(?2, provider_id) \
    WHERE id = ?1";

const COLUMNS: &str = "m.id, m.channel, p.signature, m.prescription_id, m.target, m.payload, \
    m.status, m.attempts, m.next_attempt_at, m.created_at, m.updated_at, m.last_error, \
    m.provider_id, m.receipt, m.receipt_at, m.receipt_error";

/// `?1` channel, `?2` status, `?3` signature: each NULL for any.
const FILTER: &str = "(?1 IS NULL OR m.channel = ?1) AND (?2 IS NULL OR m.status = ?2) \
    AND (?3 IS NULL OR p.signature = ?3)";

fn select(filter: &str, tail: &str) -> String {
    format!(
        "SELECT {COLUMNS} FROM messages m JOIN prescriptions p ON p.id = m.prescription_id \
         WHERE {filter} {tail}"
    )
}

/// A leased message.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: i64,
    pub channel: String,
    pub prescription_id: i64,
    /// The patient's phone, E.164.
    pub target: String,
    pub payload: Value,
    /// An earlier attempt still marked in flight.
    pub sending: Option<i64>,
}

/// The channels as `DUE`'s `?4`.
fn channels_param(channels: &[&str]) -> Param {
    text(&serde_json::to_string(channels).unwrap_or_else(|_| "[]".into()))
}

/// Whether any message of `channels` is due (a read, so an idle worker never takes the write lock).
pub fn any_due(db: &Db, now: SystemTime, channels: &[&str]) -> Result<bool, Error> {
    QUEUE.any_due(db, DUE, now, &[channels_param(channels)])
}

/// Leases up to `limit` due messages of `channels` until `until`.
pub fn lease(
    db: &Db,
    now: SystemTime,
    until: SystemTime,
    limit: u32,
    channels: &[&str],
) -> Result<Vec<Leased<Row>>, Error> {
    QUEUE.lease(
        db,
        DUE,
        LEASED_COLUMNS,
        now,
        until,
        limit,
        &[channels_param(channels)],
        |r| {
            Ok(Row {
                id: r.i64("id")?,
                channel: r.string("channel")?,
                prescription_id: r.i64("prescription_id")?,
                target: r.string("target")?,
                payload: serde_json::from_str(&r.string("payload")?).unwrap_or(Value::Null),
                sending: r.opt_i64("sending")?,
            })
        },
    )
}

/// Ends the row (its own transaction, `common::queue`'s commit policy) with `outcome`, the
/// in-flight mark cleared and the provider's id kept. Nothing changes when the lease was lost.
pub fn finish(
    db: &Db,
    leased: &Leased<Row>,
    outcome: &Outcome,
    provider_id: Option<&str>,
) -> Result<(), Error> {
    let id = leased.row.id;
    QUEUE.finish(db, &int(id), &leased.lease, outcome, |db, held| {
        if held {
            db.execute(ENDED, &[int(id), opt_text(provider_id)])?;
        }
        Ok::<(), Error>(())
    })?;
    Ok(())
}

/// Messages matching `filter`, newest first (the admin's list).
pub fn list(filter: &MessageFilter, page: PageRequest) -> Result<MessagePage, Error> {
    let db = Db::open()?;
    let params = [
        opt_text(filter.channel.map(channel_name)),
        opt_text(filter.status.map(status_name)),
        opt_text(filter.signature.as_deref()),
    ];
    let count = db.scalar_i64(
        &format!(
            "SELECT COUNT(*) FROM messages m JOIN prescriptions p ON p.id = m.prescription_id \
             WHERE {FILTER}"
        ),
        &params,
    )?;
    let mut paged = params.to_vec();
    paged.extend([int(page.limit.into()), int(page.offset.into())]);
    let results = db.query(
        &select(FILTER, "ORDER BY m.id DESC LIMIT ?4 OFFSET ?5"),
        &paged,
        message,
    )?;
    Ok(MessagePage {
        count: u64::try_from(count).unwrap_or(0),
        results,
    })
}

/// Every message of prescription `prescription`, oldest first (its medic's list).
pub fn list_for(prescription: i64) -> Result<Vec<Message>, Error> {
    let db = Db::open()?;
    Ok(db.query(
        &select("m.prescription_id = ?1", "ORDER BY m.id"),
        &[int(prescription)],
        message,
    )?)
}

/// Makes a message due now with a fresh schedule (a done or dead one is sent anew).
pub fn replay(id: i64) -> Result<Message, Error> {
    let db = Db::open()?;
    let by_id = select("m.id = ?1", "");
    db.query_opt(&by_id, &[int(id)], message)?
        .ok_or_else(Error::not_found)?;
    if !QUEUE.replay(&db, &int(id), REPLAY_RESET)? {
        return Err(Error::BadRequest(
            "This message is being attempted right now; replay it once the attempt ends.".into(),
        ));
    }
    db.query_opt(&by_id, &[int(id)], message)?
        .ok_or_else(Error::not_found)
}

fn message(r: &db::Row) -> anyhow::Result<Message> {
    let payload: Value = serde_json::from_str(&r.string("payload")?).unwrap_or(Value::Null);
    let status: DeliveryStatus = status_from(&r.string("status")?)?;
    Ok(Message {
        id: r.i64("id")?,
        channel: channel_from(&r.string("channel")?)?,
        signature: r.string("signature")?,
        prescription: r.i64("prescription_id")?,
        to: r.string("target")?,
        about: payload["status"]["status"]
            .as_str()
            .unwrap_or("issued")
            .to_string(),
        status,
        attempts: u32::try_from(r.i64("attempts")?).unwrap_or(0),
        next_attempt_at: r.string("next_attempt_at")?,
        created_at: r.string("created_at")?,
        updated_at: r.string("updated_at")?,
        last_error: r.opt_string("last_error")?,
        provider_id: r.opt_string("provider_id")?,
        receipt: r
            .opt_string("receipt")?
            .as_deref()
            .map(receipt_from)
            .transpose()?,
        receipt_at: r.opt_string("receipt_at")?,
        receipt_error: r.opt_string("receipt_error")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_due_condition_takes_the_channels_alone() {
        assert!(DUE.contains("?4") && !DUE.contains("?2") && !DUE.contains("?3"));
    }
}
