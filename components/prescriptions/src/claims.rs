//! Claims (table `claims`, migration 0014): a pharmacy holds a prescription while it picks the
//! boxes, so a second pharmacy learns at once, not at the till, that it cannot sell (gematik's
//! E-Rezept `$accept`; docs/lifecycle.md, "Claims").
//!
//! One row per prescription at most. A claim is live while `expires_at` is after now: an expired
//! row is simply not live (decided by time in each transaction, no worker), and the next claim
//! replaces it. The secret (256 random bits, shown once) is kept as its SHA-256 and compared in
//! constant time. A burn with the secret, or a release, deletes the row.

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

/// A live claim.
struct Live {
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
    let expires_at = iso8601(now + Duration::from_secs(u64::from(minutes.clamp(1, 60)) * 60));
    let id = common::hex::random::<16>();
    let secret = common::hex::random::<32>();
    db.transaction(|db| -> Result<(), Error> {
        let state = state::state(db, signature)?;
        claimable(&state)?;
        if let Some(live) = live(db, state.id, &stamp)?
            && live.pharmacy_id != pharmacy.id
        {
            return Err(elsewhere(&live, "claimed"));
        }
        db.execute(
            PUT,
            &[
                int(state.id),
                text(&id),
                int(pharmacy.id),
                text(&pharmacy.name),
                text(&hash(&secret)),
                text(&stamp),
                text(&expires_at),
            ],
        )?;
        let actor = access::Actor::Pharmacy(&pharmacy);
        access::record(db, signature, access::Action::Claim, &actor, &stamp)
    })?;
    Ok(ClaimGrant {
        id,
        secret,
        started_at: stamp,
        expires_at,
    })
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

/// Inside a burn's transaction: whether `pharmacy` may sell, given the prescription's live claim
/// and the `X-Claim-Secret` it sent. Another pharmacy's live claim is 409; a secret that does not
/// open the pharmacy's own live claim is 403. A burn without a claim is an implicit claim and
/// close (`close` after the sale). The pharmacy's own live claim's start, if it has one (the
/// receipt states it).
pub fn check_burn(
    db: &Db,
    prescription: i64,
    pharmacy: &PharmacyRef,
    secret: Option<&str>,
    now: &str,
) -> Result<Option<String>, Error> {
    let Some(live) = live(db, prescription, now)? else {
        return Ok(None);
    };
    if live.pharmacy_id != pharmacy.id {
        return Err(elsewhere(&live, "dispensed"));
    }
    if let Some(secret) = secret
        && !live.opens_with(secret)
    {
        return Err(wrong_secret());
    }
    Ok(Some(live.started_at))
}

/// Closes the prescription's claim (after a sale).
pub fn close(db: &Db, prescription: i64) -> Result<(), Error> {
    db.execute(DELETE, &[int(prescription)])?;
    Ok(())
}

fn live(db: &Db, prescription: i64, now: &str) -> Result<Option<Live>, Error> {
    Ok(db.query_opt(LIVE, &[int(prescription), text(now)], |r| {
        Ok(Live {
            pharmacy_id: r.i64("pharmacy_id")?,
            secret_hash: r.string("secret_hash")?,
            started_at: r.string("started_at")?,
            expires_at: r.string("expires_at")?,
        })
    })?)
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
