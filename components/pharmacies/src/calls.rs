//! The pharmacies' call log (table `pharmacy_calls`, migration 0008) and the rate limit it feeds: a
//! pharmacy that got more than `limit` unknown-signature 404s in the last 60 seconds is refused
//! (429) until it is under the limit again. The window slides, so no calendar-minute edge resets it,
//! and the state lives in the database, so it holds across requests, instances and nodes.
//!
//! A lookup that showed a prescription also adds the prescription's access-log entry (table
//! `access_log`, owned by the prescriptions component, docs/lifecycle.md "Who looked") with its
//! call-log row. Every call's row but a 404's (a lookup, a claim, a dispense, a rejection) goes
//! through the key-value queue (`queue`): the call commits nothing to the database for its log. A
//! 404 (the rate limit counts them at once) is a log-grade commit (`Db::execute_log_grade`: it
//! survives the process being killed, and the host flushes it to the disk within a second).

use std::time::{Duration, SystemTime};

use common::db::{Db, Param, Row, int, text};
use common::types::{Error, PageRequest};
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::exports::receta::pharmacies::pharmacies::{
    Call, CallAction, CallPage, Pharmacy, PharmacyKey,
};
use crate::queue::{self, Queued};
use crate::register;

/// How far back the unknown-signature 404s count.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Characters of the asked-for signature kept in the log.
const SIGNATURE_KEPT: usize = 128;

const INSERT: &str = "INSERT INTO pharmacy_calls (pharmacy_id, signature, action, status, created_at) \
    VALUES (?, ?, ?, ?, ?)";

/// `?2` the window's start, `?3` the limit: the pharmacy `p` (`register`'s columns) that the
/// condition after it picks by `?1` (`BY_ID`, `BY_TOKEN`) and, as `over_since`, the newest of its
/// 404s beyond the limit inside the window, if there is one (an index range on
/// `pharmacy_calls_misses`). One statement: on a libSQL server every statement is a round trip,
/// and every pharmacy call is admitted.
const ADMIT: &str = "SELECT p.id, p.name, p.legal_name, p.license, p.address, p.zip_code, \
    p.state, p.contact, p.is_active, p.created_at, p.updated_at, \
    (SELECT c.created_at FROM pharmacy_calls c \
    WHERE c.pharmacy_id = p.id AND c.status = 404 AND c.created_at > ?2 \
    ORDER BY c.created_at DESC LIMIT 1 OFFSET ?3) AS over_since FROM pharmacies p WHERE ";

/// `?1` the pharmacy's id (`pharmacy-key.id`).
const BY_ID: &str = "p.id = ?1";

/// `?1` a token's SHA-256 (`pharmacy-key.token`): the active pharmacy that holds it, the
/// pharmacy's half of auth's `CALLER_BY_TOKEN_HASH` (`components/auth`; keep them alike), so over
/// HTTP the token's check and the admission are one request.
const BY_TOKEN: &str = "p.token_hash = ?1 AND p.is_active = 1";

const COUNT: &str = "SELECT COUNT(*) FROM pharmacy_calls WHERE pharmacy_id = ?";
/// Newest first by time: a queued lookup's row is written after rows of later calls.
const PAGE: &str = "SELECT pharmacy_id, signature, action, status, created_at FROM pharmacy_calls \
    WHERE pharmacy_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?";

/// The pharmacy, if it is active and not over the limit.
pub fn admit(pharmacy: &PharmacyKey, limit: u32) -> Result<Pharmacy, Error> {
    let (sql, params) = admit_read(pharmacy, limit);
    admit_of(&Db::open()?.execute(&sql, &params)?)
}

/// The statement [`admit`] runs (`pharmacies.admit-read`).
pub fn admit_read(pharmacy: &PharmacyKey, limit: u32) -> (String, Vec<Param>) {
    let since = common::time::iso8601(SystemTime::now() - WINDOW);
    let (by, key) = match pharmacy {
        PharmacyKey::Id(id) => (BY_ID, int(*id)),
        PharmacyKey::Token(hash) => (BY_TOKEN, text(hash)),
    };
    (
        format!("{ADMIT}{by}"),
        vec![key, text(&since), int(limit.into())],
    )
}

/// The pharmacy in `read`, the result of [`admit_read`]'s statement (`pharmacies.admit-of`):
/// `unauthorized` when none is active, `too-many-requests` when it is over the limit.
pub fn admit_of(read: &QueryResult) -> Result<Pharmacy, Error> {
    let found = common::db::rows(read, |r| {
        Ok((register::from_row(r)?, r.opt_string("over_since")?))
    })?;
    let (found, over) = found
        .into_iter()
        .next()
        .filter(|(p, _)| p.is_active)
        .ok_or(Error::Unauthorized)?;
    match over.as_deref().and_then(common::time::parse_iso8601) {
        Some(at) => Err(Error::TooManyRequests(retry_after(at, SystemTime::now()))),
        None => Ok(found),
    }
}

/// Whole seconds until a 404 at `at` leaves the window (at least 1).
fn retry_after(at: SystemTime, now: SystemTime) -> u32 {
    let leaves = at + WINDOW;
    let left = leaves.duration_since(now).unwrap_or_default();
    let secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    secs.clamp(1, WINDOW.as_secs()) as u32
}

/// Logs the call. A call answered anything but 404 is queued (`queue`), a lookup's with `seen`
/// (it showed the prescription, 2xx) for its access-log entry; a 404 is a log-grade commit, which
/// the rate limit (`admit`) counts at once.
pub fn record(call: Call, seen: bool) -> Result<(), Error> {
    let signature: String = call.signature.chars().take(SIGNATURE_KEPT).collect();
    let now = common::time::now_iso8601();
    let action = action_name(call.action);
    if call.status != 404 {
        let lookup = matches!(call.action, CallAction::Lookup);
        return Ok(queue::push(&Queued {
            pharmacy: call.pharmacy,
            signature,
            action: action.to_string(),
            status: call.status,
            created_at: now,
            seen: lookup && seen && (200..300).contains(&call.status),
        })?);
    }
    let db = Db::open()?;
    let row = [
        int(call.pharmacy),
        text(&signature),
        text(action),
        int(call.status.into()),
        text(&now),
    ];
    db.execute_log_grade(INSERT, &row)?;
    Ok(())
}

/// Writes the queued calls' rows into the logs; how many.
pub fn drain() -> Result<u32, Error> {
    queue::drain(&Db::open()?)
}

/// A pharmacy's calls, newest first; the queued ones are written first.
pub fn list(pharmacy: i64, page: PageRequest) -> Result<CallPage, Error> {
    drain()?;
    let db = Db::open()?;
    let count = db.scalar_i64(COUNT, &[int(pharmacy)])?;
    let results = db.query(
        PAGE,
        &[
            int(pharmacy),
            int(page.limit.into()),
            int(page.offset.into()),
        ],
        from_row,
    )?;
    Ok(CallPage {
        count: u64::try_from(count).unwrap_or(0),
        results,
    })
}

/// The name an action is stored under (the table's CHECK lists them).
pub fn action_name(action: CallAction) -> &'static str {
    match action {
        CallAction::Lookup => "lookup",
        CallAction::Dispense => "dispense",
        CallAction::Reject => "reject",
    }
}

fn from_row(r: &Row) -> anyhow::Result<Call> {
    let action = match r.string("action")?.as_str() {
        "lookup" => CallAction::Lookup,
        "dispense" => CallAction::Dispense,
        "reject" => CallAction::Reject,
        other => anyhow::bail!("unknown pharmacy call action {other:?}"),
    };
    Ok(Call {
        pharmacy: r.i64("pharmacy_id")?,
        signature: r.string("signature")?,
        action,
        status: u16::try_from(r.i64("status")?)?,
        created_at: r.string("created_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_counts_whole_seconds_until_the_404_leaves_the_window() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(retry_after(now, now), 60);
        assert_eq!(retry_after(now - Duration::from_millis(59_500), now), 1);
        assert_eq!(retry_after(now - Duration::from_secs(30), now), 30);
        assert_eq!(retry_after(now - Duration::from_millis(29_999), now), 31);
        // Already out (a clock step): still at least 1.
        assert_eq!(retry_after(now - Duration::from_secs(61), now), 1);
    }
}
