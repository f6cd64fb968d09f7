//! The public check of a prescription (`GET /api/v2/verify/<signature>`, no token): whether it
//! exists, whether its stored document still hashes to its signature and its seal verifies with a
//! published key, its state and issue date, and who issued it where; nothing of the patient.
//! Rate limited per client address, with counters in Spin's key-value store (per node: see
//! docs/verification.md), or with the database over HTTP in the database, counted in the read's
//! own request (`common::counters`).

use std::time::SystemTime;

use common::counters::{self, Counters};
use common::db::{Db, Param, text};
use common::types::Error;
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::exports::receta::prescriptions::prescriptions::Verification;
use crate::document::{is_signature, signature_of, text_fields};
use crate::read::seal_from_row;
use crate::seal;

/// Calls one client address may make in a minute, unless the `verify_calls_per_minute` variable
/// says otherwise.
pub const LIMIT: i64 = 60;

fn limit() -> i64 {
    spin_sdk::variables::get("verify_calls_per_minute")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n: &i64| *n > 0)
        .unwrap_or(LIMIT)
}

const SOURCE: &str = "SELECT p.created_at, p.rx_status, p.canonical, p.seal_kid, p.seal_sig, \
    p.valid_until, p.expires_at, p.constancia_time, p.constancia_tsa, p.draft_rfc, \
    p.draft_serial, p.draft_expires_at, p.efirma_rfc, p.efirma_serial, p.efirma_signed_at \
    FROM prescription_view p WHERE p.signature = ?1";

pub fn verify(signature: &str, client: &str) -> Result<Verification, Error> {
    // Opened first, so that the count's read (on Spin's SQLite) and the seal's key share it.
    let db = Db::open()?;
    let key = [text(signature)];
    // Counted, then read (over HTTP, in the same request).
    let read = admit(
        client,
        is_signature(signature).then_some((SOURCE, &key[..])),
    )?;
    let Some(read) = read else {
        return Err(Error::not_found());
    };
    let found = common::db::rows(&read, |r| {
        Ok((
            r.string("created_at")?,
            crate::read::shown_state(r)?,
            r.string("canonical")?,
            seal_from_row(r)?,
            r.opt_string("valid_until")?,
            crate::constancia::from_row(r, signature)?,
            crate::efirma::from_row(r)?,
        ))
    })?;
    let (issued_at, rx_status, canonical, sealed, valid_until, constancia, efirma) =
        found.into_iter().next().ok_or_else(Error::not_found)?;
    let intact = signature_of(&canonical) == signature;
    let valid = intact
        && match &sealed {
            Some(s) => seal::key_for(&db, &s.kid)?
                .is_some_and(|key| seal::check(&key, &s.sig, &seal::message(signature))),
            None => false,
        };
    // Names from the signed document.
    let field = text_fields(&canonical);
    Ok(Verification {
        valid,
        kid: sealed.map(|s| s.kid).unwrap_or_default(),
        issued_at,
        rx_status,
        medic_name: field("/medic/name"),
        medic_cedula_prof: field("/medic/cedula_prof"),
        hospital_name: field("/hospital/name"),
        valid_until,
        constancia,
        efirma,
    })
}

/// Counts the call against the client's last minute, or refuses it (429) past the limit (the
/// receipt check shares the budget). The last minute is a sliding window estimated from two
/// counters (this minute's calls, plus the previous minute's weighted by how much of it the last
/// 60 s still cover), kept in Spin's key-value store (`common::counters`), so a call commits
/// nothing to the database and costs the same at any rate (with the database over HTTP, in its
/// `rate_counters`: one request). A burst of `limit` calls is refused its next call, in any
/// minute; a refused call does not count. The outbox worker forgets old minutes.
/// `read`, a statement run once the call is counted, is sent with the count over HTTP; its
/// result, if any.
pub(crate) fn admit(
    client: &str,
    read: Option<(&str, &[Param])>,
) -> Result<Option<QueryResult>, Error> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let (minute, second) = ((now / 60) as i64, now % 60);
    let counters = Counters::open()?;
    let this = counters::key(counters::VERIFY, minute, client);
    // Counted first, so two calls at once cannot both take the last place.
    let before = counters::key(counters::VERIFY, minute - 1, client);
    let (current, previous, read) = counters.add_one_and_get(&this, &before, read)?;
    let window = Window {
        current: current - 1,
        previous,
        second,
    };
    if let Some(retry) = window.wait(limit()) {
        counters.add(&this, -1)?;
        return Err(Error::TooManyRequests(retry));
    }
    Ok(read)
}

/// A client's calls in this minute and the previous one, `second` seconds into this minute.
#[derive(Clone, Copy, Debug)]
struct Window {
    current: i64,
    previous: i64,
    second: u64,
}

impl Window {
    /// Whether one more call fits: this minute's calls plus the previous minute's share of the
    /// last 60 s stay under `limit`.
    fn admits(self, limit: i64) -> bool {
        let covered = 60 - self.second.min(59) as i64;
        self.current * 60 + self.previous * covered < limit * 60
    }

    /// `None` to admit a call now; else the seconds until one would be admitted if no other call
    /// came (the `Retry-After`, 1 to 60).
    fn wait(self, limit: i64) -> Option<u32> {
        if self.admits(limit) {
            return None;
        }
        let later = |t: u64| {
            let second = self.second + t;
            if second < 60 {
                Window { second, ..self }
            } else {
                Window {
                    current: 0,
                    previous: if second < 120 { self.current } else { 0 },
                    second: second % 60,
                }
            }
        };
        let wait = (1..=120).find(|&t| later(t).admits(limit)).unwrap_or(60);
        Some(wait.clamp(1, 60) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(current: i64, previous: i64, second: u64) -> Window {
        Window {
            current,
            previous,
            second,
        }
    }

    #[test]
    fn a_burst_of_the_limit_is_refused_its_next_call() {
        assert_eq!(window(59, 0, 10).wait(60), None);
        assert_eq!(window(60, 0, 10).wait(60), Some(50 + 1));
        // Across a minute's turn the previous minute still counts.
        assert_eq!(window(0, 60, 0).wait(60), Some(1));
        assert_eq!(window(30, 60, 20).wait(60), Some(10 + 1));
    }

    #[test]
    fn the_previous_minute_weighs_what_the_last_60_seconds_still_cover() {
        // 60 calls last minute, 30 s ago half of them: 30 + 29 < 60.
        assert_eq!(window(29, 60, 30).wait(60), None);
        assert_eq!(window(30, 60, 30).wait(60), Some(1));
        assert_eq!(window(0, 1000, 59).wait(60), None);
        assert_eq!(window(0, 1000, 0).wait(60), Some(57));
    }

    #[test]
    fn the_wait_is_between_1_and_60_seconds() {
        for (c, p, s) in [(60, 0, 0), (500, 0, 0), (60, 60, 59), (1000, 1000, 0)] {
            let wait = window(c, p, s).wait(60).unwrap();
            assert!((1..=60).contains(&wait), "{c} {p} {s}: {wait}");
        }
    }
}
