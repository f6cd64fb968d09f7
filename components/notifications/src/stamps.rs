//! NOM-151 constancias (migration 0020; docs/verification.md, "Constancias NOM-151"): one worker run
//! leases due `stamp_queue` rows, asks the timestamp authority (`timestamp_url`, RFC 3161 over HTTP)
//! for a timestamp of each digest, concurrently, checks every reply (`pkix::tsp::check_reply`:
//! granted, imprint, the nonce sent, the TSA's signature, the chain to `timestamp_ca` when set), and
//! stores an accepted one in `constancias` in the transaction that ends its queue row. A refused or
//! missing reply is retried on the outbox's schedule and never stored.

use std::time::SystemTime;

use common::db::{Db, Param, blob, int, text};
use common::time::iso8601;
use common::types::Error;

use crate::bindings::exports::receta::notifications::notifications::DeliveryRun;
use crate::config::{Config, Stamping};
use crate::deliver::failed;
use crate::outbox::Outcome;
use crate::send::{self, Answer, Failure};
use crate::target::Target;

/// `?1` now.
const DUE: &str = "status = 'pending' AND next_attempt_at <= ?1 \
    AND (lease_until IS NULL OR lease_until < ?1)";

fn any_due_sql() -> String {
    format!("SELECT EXISTS (SELECT 1 FROM stamp_queue WHERE {DUE})")
}

/// One statement, so two workers never lease the same row: `?2` lease end, `?3` limit.
fn lease_sql() -> String {
    format!(
        "UPDATE stamp_queue SET lease_until = ?2, attempts = attempts + 1, updated_at = ?1 \
         WHERE digest IN (SELECT digest FROM stamp_queue WHERE {DUE} \
         ORDER BY next_attempt_at, digest LIMIT ?3) \
         RETURNING digest, subject, prescription_id, attempts, lease_until"
    )
}

/// `?1` now, `?2` digest, `?3` the lease this worker holds: a worker that lost it changes nothing.
const MARK_DONE: &str = "UPDATE stamp_queue SET status = 'done', lease_until = NULL, \
    updated_at = ?1, last_error = NULL WHERE digest = ?2 AND lease_until = ?3 RETURNING digest";
/// `?4` when to try again, `?5` the error.
const MARK_RETRY: &str = "UPDATE stamp_queue SET lease_until = NULL, updated_at = ?1, \
    next_attempt_at = ?4, last_error = ?5 WHERE digest = ?2 AND lease_until = ?3 RETURNING digest";
/// `?4` the error.
const MARK_DEAD: &str = "UPDATE stamp_queue SET status = 'dead', lease_until = NULL, \
    updated_at = ?1, last_error = ?4 WHERE digest = ?2 AND lease_until = ?3 RETURNING digest";

/// Stored once: a second accepted reply for the same digest (a lost lease) is dropped.
const STORE: &str = "INSERT INTO constancias \
    (digest, subject, prescription_id, reply, gen_time, tsa, serial, created_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (digest) DO NOTHING";

/// A leased queue row.
struct Leased {
    digest: String,
    subject: String,
    prescription_id: i64,
    /// Attempts started, this one included.
    attempts: u32,
    lease: String,
}

/// An accepted reply and what it says.
type Accepted = (Vec<u8>, pkix::tsp::Stamp);

/// Stamps up to `limit` due digests. Nothing is leased while no
/// authority is configured (`timestamp_url` empty): the rows wait, as emails wait for a relay.
pub fn run(config: &Config, limit: u32) -> Result<DeliveryRun, Error> {
    let mut summary = DeliveryRun {
        attempted: 0,
        delivered: 0,
        failed: 0,
    };
    let Some(stamping) = config.stamping.as_ref() else {
        return Ok(summary);
    };
    if limit == 0 {
        return Ok(summary);
    }
    let db = Db::open()?;
    let now = SystemTime::now();
    let due = db.scalar_i64(&any_due_sql(), &[text(&iso8601(now))])?;
    if due == 0 {
        return Ok(summary);
    }
    let leased = lease(&db, now, now + config.lease(), limit)?;
    let target = Target::parse(&stamping.url);
    let anchors = anchors(stamping);
    let requests: Vec<_> = leased.iter().map(|row| request(stamping, row)).collect();
    let timeout = config.timeout;
    let answers = spin_sdk::http::run(futures::future::join_all(requests.iter().map(|prepared| {
        let target = target.as_ref();
        async move {
            match (target, prepared) {
                (Ok(t), Ok(p)) => Some(send::post(t, &p.headers, p.query.clone(), timeout).await),
                _ => None,
            }
        }
    })));

    let mut ended = Vec::with_capacity(leased.len());
    for ((row, prepared), answer) in leased.iter().zip(&requests).zip(answers) {
        summary.attempted += 1;
        let judged = match (&target, &anchors, prepared, answer) {
            (Err(e), ..) => Err(format!("timestamp_url: {e}")),
            (_, Err(e), ..) => Err(format!("timestamp_ca: {e}")),
            (_, _, Err(e), _) => Err(e.clone()),
            (Ok(_), Ok(anchors), Ok(p), Some(answer)) => judge(p, anchors.as_deref(), answer),
            (_, _, _, None) => Err("not sent".into()),
        };
        let (outcome, accepted) = match judged {
            Ok(accepted) => {
                summary.delivered += 1;
                (Outcome::Done, Some(accepted))
            }
            Err(error) => {
                summary.failed += 1;
                eprintln!("notifications: constancia of {}: {error}", row.digest);
                (failed(config, row.attempts, error), None)
            }
        };
        ended.push((row, outcome, accepted));
    }
    // The whole batch in one commit (one write lock a second, not one per row): a failure leaves
    // the rows leased, and they are stamped again once their lease ends (a constancia is stored
    // once whatever happens: `STORE`).
    db.transaction(|db| -> Result<(), Error> {
        for (row, outcome, accepted) in &ended {
            finish(db, row, outcome, accepted.as_ref())?;
        }
        Ok(())
    })?;
    Ok(summary)
}

/// A request ready to go, and the nonce its reply must carry.
struct Prepared {
    query: Vec<u8>,
    headers: Vec<(String, Vec<u8>)>,
    digest: [u8; 32],
    nonce: [u8; 16],
}

fn request(stamping: &Stamping, row: &Leased) -> Result<Prepared, String> {
    let digest = digest_bytes(&row.digest).ok_or("the queued digest is not 64 hex")?;
    let mut nonce = [0u8; 16];
    getrandom::fill(&mut nonce).map_err(|e| format!("no randomness: {e}"))?;
    let query = pkix::tsp::request(&digest, &nonce)?;
    let mut headers = vec![
        (
            "content-type".to_string(),
            pkix::tsp::QUERY_TYPE.as_bytes().to_vec(),
        ),
        (
            "accept".to_string(),
            pkix::tsp::REPLY_TYPE.as_bytes().to_vec(),
        ),
        (
            "user-agent".to_string(),
            crate::config::USER_AGENT.as_bytes().to_vec(),
        ),
    ];
    if let Some(token) = &stamping.token {
        headers.push((
            "authorization".to_string(),
            format!("Bearer {token}").into_bytes(),
        ));
    }
    Ok(Prepared {
        query,
        headers,
        digest,
        nonce,
    })
}

/// The stored reply and what it says, or why it is not taken.
fn judge(
    prepared: &Prepared,
    anchors: Option<&[pkix::Certificate]>,
    answer: Result<Answer, Failure>,
) -> Result<Accepted, String> {
    let answer = answer.map_err(|f| f.to_string())?;
    if let Some(refusal) = answer.refusal() {
        return Err(refusal);
    }
    let stamp = pkix::tsp::check_reply(
        &answer.body,
        &prepared.digest,
        Some(&prepared.nonce),
        anchors,
    )
    .map_err(|why| format!("reply refused, not stored: {why}"))?;
    Ok((answer.body, stamp))
}

fn lease(db: &Db, now: SystemTime, until: SystemTime, limit: u32) -> Result<Vec<Leased>, Error> {
    let rows = db.query(
        &lease_sql(),
        &[
            text(&iso8601(now)),
            text(&iso8601(until)),
            int(limit.into()),
        ],
        |r| {
            Ok(Leased {
                digest: r.string("digest")?,
                subject: r.string("subject")?,
                prescription_id: r.i64("prescription_id")?,
                attempts: u32::try_from(r.i64("attempts")?).unwrap_or(u32::MAX),
                lease: r.string("lease_until")?,
            })
        },
    )?;
    Ok(rows)
}

/// Ends or reschedules the row and, when `accepted`, stores the constancia (inside the batch's
/// transaction); nothing at all when this worker lost its lease.
fn finish(
    db: &Db,
    row: &Leased,
    outcome: &Outcome,
    accepted: Option<&Accepted>,
) -> Result<(), Error> {
    let now = common::time::now_iso8601();
    let held = [text(&now), text(&row.digest), text(&row.lease)];
    let (sql, extra) = match outcome {
        Outcome::Done => (MARK_DONE, vec![]),
        Outcome::Retry { at, error } => (MARK_RETRY, vec![text(&iso8601(*at)), text(error)]),
        Outcome::Dead { error } => (MARK_DEAD, vec![text(error)]),
    };
    let params: Vec<Param> = held.iter().cloned().chain(extra).collect();
    let still_ours = db.query_opt(sql, &params, |r| r.string("digest"))?;
    if let (Some(_), Some((reply, stamp))) = (still_ours, accepted) {
        db.execute(
            STORE,
            &[
                text(&row.digest),
                text(&row.subject),
                int(row.prescription_id),
                blob(reply),
                text(&stamp.gen_time),
                text(&stamp.tsa),
                text(&stamp.serial),
                text(&now),
            ],
        )?;
    }
    Ok(())
}

/// The authorities of `timestamp_ca`: `None` when it is not set (the chain is not checked); an
/// error, refusing every reply, when it is set but holds no certificate.
fn anchors(stamping: &Stamping) -> Result<Option<Vec<pkix::Certificate>>, String> {
    let Some(pem) = stamping.ca.as_deref() else {
        return Ok(None);
    };
    match pkix::pem_bundle(pem)? {
        certs if certs.is_empty() => Err("it holds no PEM certificate".into()),
        certs => Ok(Some(certs)),
    }
}

/// 64 hex characters as the 32 bytes they spell.
fn digest_bytes(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_read_as_their_bytes() {
        let hex = "00ff".repeat(16);
        let bytes = digest_bytes(&hex).unwrap();
        assert_eq!((bytes[0], bytes[1], bytes[31]), (0x00, 0xff, 0xff));
        assert!(digest_bytes("abc").is_none());
        assert!(digest_bytes(&"zz".repeat(32)).is_none());
    }

    #[test]
    fn the_lease_takes_the_due_rows_parameters() {
        let sql = lease_sql();
        for p in ["?1", "?2", "?3"] {
            assert!(sql.contains(p), "{p} in {sql}");
        }
        assert!(!sql.contains("?4"), "{sql}");
    }
}
