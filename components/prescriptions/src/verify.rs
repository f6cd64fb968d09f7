//! The public check of a prescription (`GET /api/v2/verify/<signature>`, no token): whether it
//! exists, whether its stored document still hashes to its signature and its seal verifies with a
//! published key, its state and issue date, and who issued it where; nothing of the patient.
//! Rate limited per client address, in the database (so across instances and nodes).

use std::time::{Duration, SystemTime};

use common::db::{Db, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::Verification;
use crate::document::{is_signature, signature_of, text_fields};
use crate::read::seal_from_row;
use crate::seal;

/// Calls one client address may make in `WINDOW`, unless the `verify_calls_per_minute` variable
/// says otherwise.
pub const LIMIT: i64 = 60;
pub const WINDOW: Duration = Duration::from_secs(60);

fn limit() -> i64 {
    spin_sdk::variables::get("verify_calls_per_minute")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n: &i64| *n > 0)
        .unwrap_or(LIMIT)
}

const FORGET: &str = "DELETE FROM verify_calls WHERE created_at <= ?1";
const RECENT: &str = "SELECT COUNT(*) FROM verify_calls WHERE client = ?1";
const OLDEST: &str = "SELECT MIN(created_at) AS oldest FROM verify_calls WHERE client = ?1";
const INSERT: &str = "INSERT INTO verify_calls (client, created_at) VALUES (?1, ?2)";

const SOURCE: &str = "SELECT p.created_at, p.rx_status, d.canonical, s.kid AS seal_kid, \
    s.sig AS seal_sig, t.valid_until, t.expires_at \
    FROM prescriptions p JOIN prescription_documents d ON d.prescription_id = p.id \
    LEFT JOIN prescription_seals s ON s.prescription_id = p.id \
    LEFT JOIN prescription_terms t ON t.prescription_id = p.id WHERE p.signature = ?1";

pub fn verify(signature: &str, client: &str) -> Result<Verification, Error> {
    let db = Db::open()?;
    admit(&db, client)?;
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let found = db.query_opt(SOURCE, &[text(signature)], |r| {
        Ok((
            r.string("created_at")?,
            crate::read::shown_state(r)?,
            r.string("canonical")?,
            seal_from_row(r)?,
            r.opt_string("valid_until")?,
        ))
    })?;
    let (issued_at, rx_status, canonical, sealed, valid_until) =
        found.ok_or_else(Error::not_found)?;
    let intact = signature_of(&canonical) == signature;
    let valid = intact
        && match &sealed {
            Some(s) => seal::verifies(&seal::published(&db)?, signature, s),
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
    })
}

/// Counts the call against the client's minute, or refuses it (429) past the limit (the receipt
/// check shares the budget).
pub(crate) fn admit(db: &Db, client: &str) -> Result<(), Error> {
    let now = SystemTime::now();
    let limit = limit();
    db.transaction(|db| -> Result<(), Error> {
        db.execute(FORGET, &[text(&common::time::iso8601(now - WINDOW))])?;
        if db.scalar_i64(RECENT, &[text(client)])? >= limit {
            let oldest = db.query_opt(OLDEST, &[text(client)], |r| r.opt_string("oldest"))?;
            let retry = oldest
                .flatten()
                .as_deref()
                .and_then(common::time::parse_iso8601)
                .and_then(|t| (t + WINDOW).duration_since(now).ok())
                .map_or(1, |d| d.as_secs() + 1)
                .clamp(1, WINDOW.as_secs());
            return Err(Error::TooManyRequests(retry as u32));
        }
        db.execute(INSERT, &[text(client), text(&common::time::iso8601(now))])?;
        Ok(())
    })
}
