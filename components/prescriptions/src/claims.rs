//! Claims (table `claims`, migration 0014): a pharmacy holds a prescription while it picks the
//! boxes, so a second pharmacy learns at once, not at the till, that it cannot sell (gematik's
//! E-Rezept `$accept`; docs/lifecycle.md, "Claims").
//!
//! One row per prescription at most. A claim is live while `expires_at` is after now: an expired
//! row is simply not live (decided by time in each transaction, no worker), and the next claim
//! replaces it. The secret (256 random bits, shown once) is kept as its SHA-256 and compared in
//! constant time. A burn with the secret, or a release, deletes the row.
//!
//! A holder's re-claim renews its claim, but a claim and its renewals last at most `RENEWALS` ×
//! `claim_minutes` from the first start (`started_at` is kept across renewals): past that the
//! prescription is free, and the holder's own re-claim is 409 for one more `claim_minutes`, so a
//! retry loop cannot keep a patient's prescription from every other pharmacy.

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use common::codes::RxState;
use common::db::{Db, int, text};
use common::time::iso8601;
use common::types::Error;

use crate::access;
use crate::bindings::exports::receta::prescriptions::prescriptions::{ClaimGrant, PharmacyRef};
use crate::state::{self, State};

/// A claim and its renewals last at most this many `claim_minutes` from the first start.
pub const RENEWALS: u32 = 3;

/// `?1` prescription: its claim row, live or not (the last claim).
const LAST: &str = "SELECT pharmacy_id, secret_hash, started_at, expires_at \
    FROM claims WHERE prescription_id = ?1";

/// `?1` prescription, `?2` now: its live claim.
const LIVE: &str = "SELECT pharmacy_id, secret_hash, started_at, expires_at \
    FROM claims WHERE prescription_id = ?1 AND expires_at > ?2";

/// A new claim replaces whatever row the prescription had (an expired or released one).
const PUT: &str = "INSERT INTO claims \
    (prescription_id, id, pharmacy_id, pharmacy_name, secret_hash, started_at, expires_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
    ON CONFLICT (prescription_id) DO UPDATE SET id = excluded.id, \
    pharmacy_id = excluded.pharmacy_id, pharmacy_name = excluded.pharmacy_name, \
    secret_hash = excluded.secret_hash, started_at = excluded.started_at, \
    expires_at = excluded.expires_at";

const DELETE: &str = "DELETE FROM claims WHERE prescription_id = ?1";

/// A prescription's live claim, as columns named `claim_…` of a statement joining `claims c`
/// on its prescription and `c.expires_at > now` (all NULL without one): a sale's read.
pub const LIVE_COLUMNS: &str = "c.pharmacy_id AS claim_pharmacy_id, \
    c.secret_hash AS claim_secret_hash, c.started_at AS claim_started_at, \
    c.expires_at AS claim_expires_at";

/// A claim (live, unless read by `last`).
pub struct Live {
    pharmacy_id: i64,
    secret_hash: String,
    started_at: String,
    expires_at: String,
}

/// Claims `signature` for `pharmacy` for `minutes`; see `prescriptions.claim` in the WIT.
pub fn claim(pharmacy: PharmacyRef, signature: &str, minutes: u32) -> Result<ClaimGrant, Error> {
    let db = Db::open()?;
    let now = SystemTime::now();
    let stamp = iso8601(now);
    let life = Duration::from_secs(u64::from(minutes.clamp(1, 60)) * 60);
    let id = common::hex::random::<16>();
    let secret = common::hex::random::<32>();
    let (started_at, expires_at) = db.transaction(|db| -> Result<(String, String), Error> {
        let state = state::state(db, signature)?;
        claimable(&state)?;
        let (started_at, expires_at) = match last(db, state.id)? {
            Some(last) if last.expires_at > stamp && last.pharmacy_id != pharmacy.id => {
                return Err(elsewhere(&last, "claimed"));
            }
            Some(last) if last.pharmacy_id == pharmacy.id => renewal(&last, now, life)?,
            _ => (stamp.clone(), iso8601(now + life)),
        };
        db.execute(
            PUT,
            &[
                int(state.id),
                text(&id),
                int(pharmacy.id),
                text(&pharmacy.name),
                text(&hash(&secret)),
                text(&started_at),
                text(&expires_at),
            ],
        )?;
        let actor = access::Actor::Pharmacy(&pharmacy);
        access::record(db, signature, access::Action::Claim, &actor, &stamp)?;
        Ok((started_at, expires_at))
    })?;
    Ok(ClaimGrant {
        id,
        secret,
        started_at,
        expires_at,
    })
}

/// The holder's claim after its re-claim at `now` (its last claim `last`, live or not): while the
/// chain of renewals is under its bound (`RENEWALS` × `life` from its first start), the same start
/// and `life` more, cut at the bound; a new chain once the last one ended before its bound and has
/// expired; 409 once the bound is reached, until `life` after it.
fn renewal(last: &Live, now: SystemTime, life: Duration) -> Result<(String, String), Error> {
    let at = |s: &str| common::time::parse_iso8601(s).unwrap_or(now);
    let (first, ended) = (at(&last.started_at), at(&last.expires_at));
    let bound = first + life * RENEWALS;
    if now < ended {
        if now >= bound {
            return Err(held_too_long(bound, life));
        }
        return Ok((last.started_at.clone(), iso8601((now + life).min(bound))));
    }
    if ended >= bound && now < bound + life {
        return Err(held_too_long(bound, life));
    }
    Ok((iso8601(now), iso8601(now + life)))
}

/// The 409 of a holder's re-claim past the bound of its renewals.
fn held_too_long(bound: SystemTime, life: Duration) -> Error {
    Error::Conflict(format!(
        "This pharmacy has held this prescription for as long as a claim and its renewals may last \
         ({RENEWALS} × claim_minutes, until {}): it is free for other pharmacies now; this pharmacy \
         may claim it again from {}.",
        iso8601(bound),
        iso8601(bound + life)
    ))
}

/// Gives `pharmacy`'s live claim on `signature` back; see `prescriptions.release` in the WIT.
pub fn release(pharmacy: PharmacyRef, signature: &str, secret: &str) -> Result<(), Error> {
    let db = Db::open()?;
    let stamp = common::time::now_iso8601();
    db.transaction(|db| -> Result<(), Error> {
        let state = state::state(db, signature)?;
        let Some(live) = live(db, state.id, &stamp)? else {
            return Err(Error::Conflict(
                "This prescription has no live claim to release (it expired, or was released or \
                 closed by a burn)."
                    .into(),
            ));
        };
        if live.pharmacy_id != pharmacy.id {
            return Err(elsewhere(&live, "released"));
        }
        if !live.opens_with(secret) {
            return Err(wrong_secret());
        }
        db.execute(DELETE, &[int(state.id)])?;
        let actor = access::Actor::Pharmacy(&pharmacy);
        access::record(db, signature, access::Action::Release, &actor, &stamp)
    })
}

/// Inside a burn's transaction: whether `pharmacy` may sell, given the prescription's `live`
/// claim (read with [`LIVE_COLUMNS`]) and the `X-Claim-Secret` it sent. Another pharmacy's live
/// claim is 409; a secret that does not open the pharmacy's own live claim is 403. A burn without a
/// claim is an implicit claim and close (the sale deletes the claim row). The pharmacy's own live
/// claim's start, if it has one (the receipt states it).
pub fn check_burn(
    live: Option<&Live>,
    pharmacy: &PharmacyRef,
    secret: Option<&str>,
) -> Result<Option<String>, Error> {
    let Some(live) = live else {
        return Ok(None);
    };
    if live.pharmacy_id != pharmacy.id {
        return Err(elsewhere(live, "dispensed"));
    }
    if let Some(secret) = secret
        && !live.opens_with(secret)
    {
        return Err(wrong_secret());
    }
    Ok(Some(live.started_at.clone()))
}

/// The live claim of a row read with [`LIVE_COLUMNS`], if it has one.
pub fn live_of(r: &common::db::Row) -> anyhow::Result<Option<Live>> {
    let Some(pharmacy_id) = r.opt_i64("claim_pharmacy_id")? else {
        return Ok(None);
    };
    Ok(Some(Live {
        pharmacy_id,
        secret_hash: r.string("claim_secret_hash")?,
        started_at: r.string("claim_started_at")?,
        expires_at: r.string("claim_expires_at")?,
    }))
}

fn live(db: &Db, prescription: i64, now: &str) -> Result<Option<Live>, Error> {
    Ok(db.query_opt(LIVE, &[int(prescription), text(now)], claim_row)?)
}

fn last(db: &Db, prescription: i64) -> Result<Option<Live>, Error> {
    Ok(db.query_opt(LAST, &[int(prescription)], claim_row)?)
}

fn claim_row(r: &common::db::Row) -> anyhow::Result<Live> {
    Ok(Live {
        pharmacy_id: r.i64("pharmacy_id")?,
        secret_hash: r.string("secret_hash")?,
        started_at: r.string("started_at")?,
        expires_at: r.string("expires_at")?,
    })
}

impl Live {
    /// Whether `secret` is this claim's: SHA-256 digests compared in constant time.
    fn opens_with(&self, secret: &str) -> bool {
        bool::from(
            hash(secret.trim())
                .as_bytes()
                .ct_eq(self.secret_hash.as_bytes()),
        )
    }
}

/// A prescription may be claimed while something is left to sell and it is not closed.
fn claimable(state: &State) -> Result<(), Error> {
    match state.rx_status {
        RxState::Available | RxState::PartiallyDispensed => Ok(()),
        RxState::Dispensed => Err(Error::Conflict(
            "This prescription is already fully dispensed: nothing is left to claim.".into(),
        )),
        other => Err(state::closed(other, state, "claimed")),
    }
}

/// The 409 while another pharmacy holds the prescription.
fn elsewhere(live: &Live, verb: &str) -> Error {
    Error::Conflict(format!(
        "This prescription is being dispensed elsewhere (claimed by another pharmacy until {}); \
         it cannot be {verb} until then.",
        live.expires_at
    ))
}

fn wrong_secret() -> Error {
    Error::forbidden("The claim secret does not match this prescription's live claim.")
}

fn hash(secret: &str) -> String {
    common::hex::encode(&Sha256::digest(secret.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim_at(started: SystemTime, expires: SystemTime) -> Live {
        Live {
            pharmacy_id: 1,
            secret_hash: String::new(),
            started_at: iso8601(started),
            expires_at: iso8601(expires),
        }
    }

    #[test]
    fn renewals_keep_the_first_start_and_stop_at_three_claim_minutes() {
        let life = Duration::from_secs(600);
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let min = |m: u64| t0 + Duration::from_secs(m * 60);
        // Renewed at 5 min: the same start, 10 more minutes.
        let (start, end) = renewal(&claim_at(t0, min(10)), min(5), life).unwrap();
        assert_eq!((start, end), (iso8601(t0), iso8601(min(15))));
        // Renewed at 25 min: cut at the bound, 30 min after the first start.
        let (_, end) = renewal(&claim_at(t0, min(30)), min(25), life).unwrap();
        assert_eq!(end, iso8601(min(30)));
        // At the bound and for one claim_minutes after it: refused.
        for at in [31, 39] {
            let e = renewal(&claim_at(t0, min(30)), min(at), life).unwrap_err();
            assert!(
                matches!(&e, Error::Conflict(m) if m.contains("as long as")),
                "{e:?}"
            );
        }
        // Then a fresh claim; and one that lapsed before its bound starts afresh at once.
        let (start, _) = renewal(&claim_at(t0, min(30)), min(41), life).unwrap();
        assert_eq!(start, iso8601(min(41)));
        let (start, _) = renewal(&claim_at(t0, min(10)), min(12), life).unwrap();
        assert_eq!(start, iso8601(min(12)));
    }

    #[test]
    fn secrets_are_256_random_bits_and_open_only_their_claim() {
        let secret = common::hex::random::<32>();
        assert_eq!(secret.len(), 64);
        assert_ne!(secret, common::hex::random::<32>());
        let live = Live {
            pharmacy_id: 1,
            secret_hash: hash(&secret),
            started_at: String::new(),
            expires_at: String::new(),
        };
        assert!(live.opens_with(&secret));
        assert!(live.opens_with(&format!(" {secret}\n")));
        assert!(!live.opens_with(&common::hex::random::<32>()));
        assert!(!live.opens_with(""));
    }
}
