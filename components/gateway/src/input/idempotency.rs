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

use common::db::{Db, Param, blob, int, text};
use common::types::{Error, MedicKey};
use spin_sdk::sqlite3::QueryResult;

use crate::http::{Request, Response};

/// A reservation older than this belongs to a request that died: the next retry takes it over.
const ABANDONED: Duration = Duration::from_secs(60);
/// Longest key accepted.
const MAX_KEY: usize = 255;

/// The reservation's conflict: `?5` the oldest key kept: a key older than that is free again
/// (reserved anew, its old answer dropped), whether or not the jobs have deleted it yet.
const ON_CONFLICT: &str = "ON CONFLICT (principal, key) DO UPDATE SET \
    fingerprint = excluded.fingerprint, status = 0, body = NULL, created_at = excluded.created_at \
    WHERE idempotency_keys.created_at < ?5 RETURNING status";
/// `?1` the principal, `?2` the key, `?3` the fingerprint, `?4` now.
const RESERVE: &str = "INSERT INTO idempotency_keys (principal, key, fingerprint, status, created_at) \
    VALUES (?1, ?2, ?3, 0, ?4)";
/// As [`RESERVE`] for medic `?1` (`common::holder`: by id, or the holder of a token): nothing
/// when no active medic holds the token.
const RESERVE_FOR_MEDIC: &str = "INSERT INTO idempotency_keys \
    (principal, key, fingerprint, status, created_at) \
    SELECT 'medic:' || id, ?2, ?3, 0, ?4 FROM medics WHERE id = ?1";
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
    let Some(key) = Key::of(req)? else {
        return create();
    };
    let db = Db::open()?;
    let (sql, params) = key.reserve(principal);
    let reservation = db.execute(&sql, &params)?;
    key.once_reserved(&db, principal, &reservation, create)
}

/// A request's `Idempotency-Key`, checked, with what makes its request the same as another.
pub struct Key {
    key: String,
    fingerprint: String,
    now: SystemTime,
}

impl Key {
    /// The request's key, `None` without one; 400 for one that is not 1 to 255 visible ASCII
    /// characters.
    pub fn of(req: &Request) -> Result<Option<Key>, Error> {
        let Some(key) = req.header("idempotency-key") else {
            return Ok(None);
        };
        let key = key.trim();
        if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::BadRequest(BAD_KEY.into()));
        }
        Ok(Some(Key {
            key: key.to_string(),
            fingerprint: fingerprint(req),
            now: SystemTime::now(),
        }))
    }

    /// The statement reserving the key for `principal`: a row (its status, 0) when it did.
    pub fn reserve(&self, principal: &str) -> (String, Vec<Param>) {
        let sql = format!("{RESERVE} {ON_CONFLICT}");
        (sql, self.params(text(principal)))
    }

    /// As [`Key::reserve`] for a medic, by id or as the holder of a token (`medic-key`): a
    /// statement a create sends with its reads (`prescriptions::create`).
    pub fn reserve_for(&self, medic: &MedicKey) -> (String, Vec<Param>) {
        let sql = format!("{RESERVE_FOR_MEDIC} {ON_CONFLICT}");
        let (sql, medic) = common::holder::statement(&sql, medic);
        (sql, self.params(medic))
    }

    fn params(&self, principal: Param) -> Vec<Param> {
        let kept_since = common::time::iso8601(self.now - jobs::IDEMPOTENCY_KEPT);
        vec![
            principal,
            text(&self.key),
            text(&self.fingerprint),
            text(&common::time::iso8601(self.now)),
            text(&kept_since),
        ]
    }

    /// What the reservation's `result` means for `principal`'s request: `None`, reserved (run it);
    /// the first response again, for a retry of a request that was answered; 409 for the same key
    /// with another request, or while the first still runs (a reservation older than `ABANDONED`
    /// is taken over instead: its request died).
    pub fn reserved(
        &self,
        db: &Db,
        principal: &str,
        result: &QueryResult,
    ) -> Result<Option<Response>, Error> {
        if !result.rows.is_empty() {
            return Ok(None);
        }
        let (principal, key) = (text(principal), text(&self.key));
        let (stored, status, body, at) = db
            .query_opt(FIND, &[principal.clone(), key.clone()], |r| {
                Ok((
                    r.string("fingerprint")?,
                    r.i64("status")?,
                    r.opt_blob("body")?,
                    r.string("created_at")?,
                ))
            })?
            .ok_or_else(|| anyhow::anyhow!("idempotency key vanished"))?;
        if stored != self.fingerprint {
            return Err(Error::Conflict(OTHER_REQUEST.into()));
        }
        if status != 0 {
            let replay = Response::bytes(
                u16::try_from(status).unwrap_or(500),
                "application/json",
                body.unwrap_or_default(),
            );
            return Ok(Some(replay.with_header("idempotent-replayed", "true")));
        }
        let abandoned = common::time::parse_iso8601(&at)
            .is_some_and(|t| self.now.duration_since(t).unwrap_or_default() > ABANDONED);
        let now = text(&common::time::iso8601(self.now));
        let took_over = abandoned
            && db
                .query_opt(TAKE_OVER, &[principal, key, now, text(&at)], |r| {
                    r.i64("status")
                })?
                .is_some();
        if !took_over {
            return Err(Error::Conflict(IN_PROGRESS.into()));
        }
        Ok(None)
    }

    /// Runs `create` if `reservation` (the result of [`Key::reserve`]'s statement) reserved the key
    /// ([`Key::reserved`]), and keeps its answer ([`Key::keep`]).
    pub fn once_reserved(
        &self,
        db: &Db,
        principal: &str,
        reservation: &QueryResult,
        create: impl FnOnce() -> Result<Response, Error>,
    ) -> Result<Response, Error> {
        if let Some(first) = self.reserved(db, principal, reservation)? {
            return Ok(first);
        }
        let result = create();
        self.keep(db, principal, &result);
        result
    }

    /// Keeps `result`, the reserved request's answer, for its retries; a refusal (an error) or a
    /// 5xx is not kept but the key released: a retry runs again and, nothing having changed, gets
    /// the same refusal, in the endpoint's own error shape.
    pub fn keep(&self, db: &Db, principal: &str, result: &Result<Response, Error>) {
        let (principal_param, key) = (text(principal), text(&self.key));
        let kept = match result {
            Ok(response) if response.status() < 500 => db.execute(
                STORE,
                &[
                    principal_param,
                    key,
                    int(response.status().into()),
                    blob(response.body()),
                ],
            ),
            _ => db.execute(RELEASE, &[principal_param, key]),
        };
        if let Err(e) = kept {
            eprintln!("idempotency key of {principal}: {e:#}");
        }
    }
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
