//! `Idempotency-Key` on the creates (`POST /api/v2/rx-endpoint/`, `POST /api/v2/patient/`, the
//! pharmacy's burn): a retried request (a timeout on a mobile network) gets the first response
//! again, same status and body, and the prescription is issued once.
//!
//! Keys are per principal and kept at least 24 hours (table `idempotency_keys`, migration 0010,
//! owned here: it is an HTTP concern); the background jobs delete older ones (`jobs`'
//! `forget_idempotency_keys`, every second), so a create sends no delete of its own. The first request reserves its key in the database before it
//! runs, so a concurrent retry waits its turn (409) instead of running twice; a reservation whose
//! request died (a crash) is taken over after `ABANDONED`. Responses of 5xx are not kept: the
//! client may retry them, nor are refusals (4xx errors): a retry runs again and gets the same answer.
//! The same key with another method, path or body is 409.

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use common::db::{Db, blob, int, text};
use common::types::Error;

use crate::http::{Request, Response};

/// A reservation older than this belongs to a request that died: the next retry takes it over.
const ABANDONED: Duration = Duration::from_secs(60);
/// Longest key accepted.
const MAX_KEY: usize = 255;

/// `?5` the oldest key kept: a key older than that is free again (reserved anew, its old answer
/// dropped), whether or not the jobs have deleted it yet.
const RESERVE: &str = "INSERT INTO idempotency_keys (principal, key, fingerprint, status, created_at) \
    VALUES (?1, ?2, ?3, 0, ?4) ON CONFLICT (principal, key) DO UPDATE SET \
    fingerprint = excluded.fingerprint, status = 0, body = NULL, created_at = excluded.created_at \
    WHERE idempotency_keys.created_at < ?5 RETURNING status";
const FIND: &str = "SELECT fingerprint, status, body, created_at FROM idempotency_keys \
    WHERE principal = ?1 AND key = ?2";
const TAKE_OVER: &str = "UPDATE idempotency_keys SET created_at = ?3 \
    WHERE principal = ?1 AND key = ?2 AND status = 0 AND created_at = ?4 RETURNING status";
const STORE: &str =
    "UPDATE idempotency_keys SET status = ?3, body = ?4 WHERE principal = ?1 AND key = ?2";
const RELEASE: &str = "DELETE FROM idempotency_keys WHERE principal = ?1 AND key = ?2";

const OTHER_REQUEST: &str = "This Idempotency-Key was already used with a different request \
    (method, path or body); use a new key for a new request.";
const IN_PROGRESS: &str =
    "A request with this Idempotency-Key is still being processed; retry in a moment.";
const BAD_KEY: &str = "The Idempotency-Key header must be 1 to 255 visible ASCII characters.";

/// Runs `create` once per `Idempotency-Key` of `principal` (when the request has one), answering
/// retries with the first response.
pub fn once(
    req: &Request,
    principal: &str,
    create: impl FnOnce() -> Result<Response, Error>,
) -> Result<Response, Error> {
    let Some(key) = req.header("idempotency-key") else {
        return create();
    };
    let key = key.trim();
    if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::BadRequest(BAD_KEY.into()));
    }
    let fingerprint = fingerprint(req);
    let db = Db::open()?;
    let now = SystemTime::now();
    let now_text = common::time::iso8601(now);
    let reserve = [
        text(principal),
        text(key),
        text(&fingerprint),
        text(&now_text),
        text(&common::time::iso8601(now - jobs::IDEMPOTENCY_KEPT)),
    ];
    if db
        .query_opt(RESERVE, &reserve, |r| r.i64("status"))?
        .is_none()
    {
        let (stored, status, body, at) = db
            .query_opt(FIND, &[text(principal), text(key)], |r| {
                Ok((
                    r.string("fingerprint")?,
                    r.i64("status")?,
                    r.opt_blob("body")?,
                    r.string("created_at")?,
                ))
            })?
            .ok_or_else(|| anyhow::anyhow!("idempotency key vanished"))?;
        if stored != fingerprint {
            return Err(Error::Conflict(OTHER_REQUEST.into()));
        }
        if status != 0 {
            let replay = Response::bytes(
                u16::try_from(status).unwrap_or(500),
                "application/json",
                body.unwrap_or_default(),
            );
            return Ok(replay.with_header("idempotent-replayed", "true"));
        }
        let abandoned = common::time::parse_iso8601(&at)
            .is_some_and(|t| now.duration_since(t).unwrap_or_default() > ABANDONED);
        let took_over = abandoned
            && db
                .query_opt(
                    TAKE_OVER,
                    &[text(principal), text(key), text(&now_text), text(&at)],
                    |r| r.i64("status"),
                )?
                .is_some();
        if !took_over {
            return Err(Error::Conflict(IN_PROGRESS.into()));
        }
    }
    // A refusal (an error) is not kept: a retry runs again and, nothing having changed, gets it
    // again, in the endpoint's own error shape.
    let result = create();
    let kept = match &result {
        Ok(response) if response.status() < 500 => db.execute(
            STORE,
            &[
                text(principal),
                text(key),
                int(response.status().into()),
                blob(response.body()),
            ],
        ),
        _ => db.execute(RELEASE, &[text(principal), text(key)]),
    };
    if let Err(e) = kept {
        eprintln!("idempotency key of {principal}: {e:#}");
    }
    result
}

/// SHA-256 of the method, the path and the body: what makes two requests "the same".
fn fingerprint(req: &Request) -> String {
    let mut h = Sha256::new();
    h.update(crate::http::method_name(&req.method()).as_bytes());
    h.update([0]);
    h.update(req.path().as_bytes());
    h.update([0]);
    h.update(req.body());
    common::hex::encode(&h.finalize())
}
