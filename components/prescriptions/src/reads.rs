//! The medic's and the admin's reads by signature on their way to the access log (`access`): the
//! first read of a prescription by an actor in a minute is queued in Spin's key-value store
//! (`default`, `reads/<minute>/<actor>/<signature>`) instead of committed to the database, and
//! `drain` writes the queued entries into `access_log` in one statement per batch.
//!
//! Why: a commit makes every other pooled connection drop its cache at its next read, and on a
//! libSQL node with a replica it is a round trip to the primary; a read should not pay either. The
//! key names the minute, so every later read in that minute finds its entry (in the log once
//! drained, in the queue until then) and writes nothing. Nothing is lost: the store's write is in
//! the operating system before the answer (docs/lifecycle.md, "What a crash can lose").
//!
//! The patient's page and its JSON drain first (`landing`), and the outbox worker on each firing
//! (`prescriptions.drain-reads`). Two drains at once write an entry once: the INSERT skips an
//! actor's read already logged in that minute, and SQLite runs the two statements one after the
//! other.

use anyhow::{Context, Result, anyhow};
use serde_json::json;

use common::db::{Db, Param, text};
use common::types::{Error, Principal};

use crate::bindings::exports::receta::prescriptions::prescriptions::Reader;
use crate::scope::Visible;

/// The queue's keys: `reads/<minute's start>/<actor>/<signature>`.
const PREFIX: &str = "reads/";

/// `?1` signature, `?2` actor, `?3` the minute's start: whether this actor's read is already
/// logged this minute (a plain read: most repeated reads stop here).
const SEEN_THIS_MINUTE: &str = "SELECT 1 AS seen FROM access_log a \
    JOIN prescriptions p ON p.id = a.prescription_id WHERE p.signature = ?1 AND a.action = 'read' \
    AND a.actor = ?2 AND a.pharmacy_id IS NULL AND a.created_at >= ?3 LIMIT 1";

/// `SEEN_THIS_MINUTE` as a subquery of a statement on `prescriptions p`, with `?3` the actor and
/// `?4` the minute's start (`detail`).
pub const SEEN: &str = "SELECT 1 FROM access_log a WHERE a.prescription_id = p.id \
    AND a.action = 'read' AND a.actor = ?3 AND a.pharmacy_id IS NULL AND a.created_at >= ?4 LIMIT 1";

/// `?1` the queued entries (JSON array of `{signature, actor, at, minute, next}`): their rows,
/// unless that actor's read of that prescription is already logged in that minute.
const WRITE: &str = "INSERT INTO access_log \
    (prescription_id, action, actor, pharmacy_id, actor_name, actor_license, created_at) \
    SELECT p.id, 'read', r.actor, NULL, '', '', r.at \
    FROM (SELECT json_extract(value, '$.signature') AS signature, \
            json_extract(value, '$.actor') AS actor, json_extract(value, '$.at') AS at, \
            json_extract(value, '$.minute') AS minute, json_extract(value, '$.next') AS next \
          FROM json_each(?1)) r \
    JOIN prescriptions p ON p.signature = r.signature \
    WHERE NOT EXISTS (SELECT 1 FROM access_log a WHERE a.prescription_id = p.id \
      AND a.action = 'read' AND a.actor = r.actor AND a.pharmacy_id IS NULL \
      AND a.created_at >= r.minute AND a.created_at < r.next)";

fn actor(caller: &Principal) -> &'static str {
    match caller {
        Principal::Admin => "admin",
        Principal::Medic(_) => "medic",
    }
}

/// The actor of `reader`'s reads: a token's holder is a medic.
pub fn reader_actor(reader: &Reader) -> &'static str {
    match reader {
        Reader::Caller(caller) => actor(caller),
        Reader::MedicToken(_) => "medic",
    }
}

/// The entry's key: one per minute, actor and prescription.
fn key(minute: &str, actor: &str, signature: &str) -> String {
    format!("{PREFIX}{minute}/{actor}/{signature}")
}

/// The queued entry a key names, with the time of the read (the key's value).
fn entry(key: &str, at: &[u8]) -> Option<serde_json::Value> {
    let mut parts = key.strip_prefix(PREFIX)?.splitn(3, '/');
    let (minute, actor, signature) = (parts.next()?, parts.next()?, parts.next()?);
    let next = common::time::shift(minute, 60)?;
    let at = std::str::from_utf8(at).ok()?;
    Some(json!({"signature": signature, "actor": actor, "at": at, "minute": minute, "next": next}))
}

/// A read being logged: who (`actor`), when, and the start of its minute.
pub struct Read {
    pub actor: &'static str,
    now: String,
    pub minute: String,
}

impl Read {
    /// `caller`'s read, now.
    pub fn now(caller: &Principal) -> Read {
        Read::now_by(actor(caller))
    }

    /// A read by `actor`, now.
    pub fn now_by(actor: &'static str) -> Read {
        let now = common::time::now_iso8601();
        let minute = common::time::minute_start(&now);
        Read { actor, now, minute }
    }
}

/// Logs `caller`'s read of `signature` now (the read has succeeded), unless that read is already
/// logged or queued this minute.
pub fn record(db: &Db, signature: &str, caller: &Principal) -> Result<(), Error> {
    let read = Read::now(caller);
    let seen = [text(signature), text(read.actor), text(&read.minute)];
    if db
        .query_opt(SEEN_THIS_MINUTE, &seen, |r| r.i64("seen"))?
        .is_some()
    {
        return Ok(());
    }
    queue(signature, &read)
}

/// Queues `read` of `signature`, found not yet logged this minute (`SEEN_THIS_MINUTE`, or `SEEN`
/// in the read's own statement), unless it is already queued.
pub fn queue(signature: &str, read: &Read) -> Result<(), Error> {
    if common::db::over_http()? {
        return write_now(signature, read);
    }
    let key = key(&read.minute, read.actor, signature);
    let bucket = common::kv::open()?;
    let queued = bucket
        .exists(&key)
        .map_err(|e| anyhow!("looking up {key:?}: {e:?}"))?;
    if !queued {
        bucket
            .set(&key, read.now.as_bytes())
            .map_err(|e| anyhow!("queueing the read under {key:?}: {e:?}"))?;
    }
    Ok(())
}

/// Writes `read` of `signature` into the access log at once (`WRITE` skips it when it is already
/// there): for a database over HTTP, where the statement is one request and the key-value store
/// is the scarcer resource.
fn write_now(signature: &str, read: &Read) -> Result<(), Error> {
    Db::open()?.execute_log_grade(WRITE, &[entries(signature, read)?])?;
    Ok(())
}

/// `read` of `signature` as `WRITE`'s `?1`.
fn entries(signature: &str, read: &Read) -> Result<Param, Error> {
    let next = common::time::shift(&read.minute, 60).context("the next minute")?;
    let entry = json!([{"signature": signature, "actor": read.actor, "at": read.now,
        "minute": read.minute, "next": next}]);
    Ok(text(&entry.to_string()))
}

/// Over HTTP, the statement that logs `read` of `signature` when `visible` lets its reader see
/// it, to send in the read's own request after the read (`detail`): the read and its row are one
/// round trip instead of two. `None` on Spin's SQLite, where a read is queued once it has
/// succeeded (`queue`). A read answered 409 because its stored document was altered is logged too
/// there: the caller reached the record.
pub fn logged_with_read(
    signature: &str,
    read: &Read,
    visible: &Visible,
) -> Result<Option<(String, Vec<Param>)>, Error> {
    if !common::db::over_http()? {
        return Ok(None);
    }
    let sql = format!("{WRITE} AND {}", visible.condition());
    Ok(Some((
        sql,
        vec![entries(signature, read)?, visible.param()],
    )))
}

/// Writes every queued entry into the access log; how many were queued.
pub fn drain(db: &Db) -> Result<u32, Error> {
    let drained = common::kv::drain(PREFIX, |found| -> Result<u32, Error> {
        let mut entries = Vec::with_capacity(found.len());
        for (key, at) in found {
            let Some(at) = at.as_deref() else { continue };
            match entry(key, at) {
                Some(read) => entries.push(read),
                None => eprintln!("receta: prescriptions: dropping unreadable queued read {key:?}"),
            }
        }
        if !entries.is_empty() {
            let json = serde_json::to_string(&entries).context("encoding the reads")?;
            db.execute(WRITE, &[text(&json)])?;
        }
        Ok(entries.len() as u32)
    })?;
    Ok(drained.written)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: &str = "2026-11-25T22:10:00.000000Z";

    #[test]
    fn a_key_reads_back_as_its_entry() {
        let k = key(MINUTE, "medic", "abc123");
        assert_eq!(k, "reads/2026-11-25T22:10:00.000000Z/medic/abc123");
        let e = entry(&k, b"2026-11-25T22:10:42.000001Z").unwrap();
        assert_eq!(
            e,
            json!({"signature": "abc123", "actor": "medic", "at": "2026-11-25T22:10:42.000001Z",
                   "minute": MINUTE, "next": "2026-11-25T22:11:00.000000Z"})
        );
    }

    #[test]
    fn keys_of_other_queues_or_garbled_ones_are_no_entry() {
        assert!(entry("calls/2026-11-25T22:10:00.000000Z/ab", b"x").is_none());
        assert!(entry("reads/2026-11-25T22:10:00.000000Z/medic", b"x").is_none());
        assert!(entry("reads/not a time/medic/abc", b"x").is_none());
    }

    #[test]
    fn one_key_per_minute_actor_and_prescription() {
        assert_ne!(key(MINUTE, "medic", "a"), key(MINUTE, "admin", "a"));
        assert_ne!(key(MINUTE, "medic", "a"), key(MINUTE, "medic", "b"));
    }
}
