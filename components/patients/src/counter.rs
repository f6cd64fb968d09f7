//! Counter codes (table `counter_codes`, migration 0026): the patient asks for one on their page and
//! says it, with their CURP, at any pharmacy counter; the pharmacy gets the person's prescriptions
//! without the QR (docs/patients.md, "At the counter").
//!
//! Six digits, ten minutes, one use. A code belongs to the record whose page asked for it: it lists
//! that record's prescriptions and those of the records its page proved its own
//! (`records::scope`), never another record only because it has the same CURP; a new code ends the
//! earlier live one of the same record, and the issue limit counts per record, so a medic who
//! writes someone's CURP on a record of their own touches nobody else's codes.
//!
//! Only `SHA-256("<curp>:<code>")` is stored, and a pharmacy's guess is looked up by that hash: the
//! same statements run whether or not the CURP is known, and a wrong code, a used one, an expired
//! one and an unknown CURP all answer the same `not-found`. Each miss is counted (`counter_misses`)
//! for the CURP and for the pharmacy: past `MISSES_PER_HOUR` for the CURP in the last hour the CURP
//! is refused (429) until the oldest counted miss is an hour old, right code or not; past
//! `PHARMACY_MISSES_PER_HOUR` across CURPs the pharmacy is refused (429), so one pharmacy cannot
//! lock many people out everywhere.

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use common::curp::Curp;
use common::db::{Db, Param, int, text};
use common::time::iso8601;
use common::types::{Error, FieldError};

use crate::bindings::exports::receta::patients::patients::CounterCode;

/// How long a code works.
pub const LIFETIME: Duration = Duration::from_secs(10 * 60);
/// Wrong codes a CURP may get in an hour before it is refused.
pub const MISSES_PER_HOUR: i64 = 5;
/// Wrong codes a pharmacy may give in an hour, whatever the CURPs, before it is refused: at most
/// two people's limits a pharmacy can use up an hour.
pub const PHARMACY_MISSES_PER_HOUR: i64 = 10;
/// Codes one record's page may be issued in an hour.
pub const ISSUED_PER_HOUR: i64 = 10;
const HOUR: Duration = Duration::from_secs(3600);
/// Misses are kept this long (the limit reads the last hour).
const MISSES_KEPT: Duration = Duration::from_secs(24 * 3600);

/// `?1` record, `?2` since: codes its pages were issued since then.
const ISSUED_SINCE: &str = "SELECT COUNT(*) FROM counter_codes \
    WHERE prescription_id IN (SELECT id FROM prescriptions WHERE patient_id = ?1) \
    AND created_at >= ?2";

/// `?1` record, `?2` now: ends the live codes its pages were issued (a new one replaces them).
const END_LIVE: &str = "UPDATE counter_codes SET used_at = ?2 \
    WHERE prescription_id IN (SELECT id FROM prescriptions WHERE patient_id = ?1) \
    AND used_at IS NULL AND expires_at > ?2";

const INSERT: &str = "INSERT INTO counter_codes \
    (curp, code_hash, prescription_id, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)";

/// `?1` CURP, `?2` since: its misses since then, and the oldest of them.
const MISSES_SINCE: &str = "SELECT COUNT(*) AS n, MIN(created_at) AS oldest \
    FROM counter_misses WHERE curp = ?1 AND created_at >= ?2";

/// `?1` pharmacy, `?2` since: its misses since then, and the oldest of them.
const PHARMACY_MISSES_SINCE: &str = "SELECT COUNT(*) AS n, MIN(created_at) AS oldest \
    FROM counter_misses WHERE pharmacy = ?1 AND created_at >= ?2";

/// `?1` CURP, `?2` code hash, `?3` now, `?4` pharmacy: uses the live code, once (the oldest, should
/// two records' live codes ever be the same digits), and names the record it was asked for.
const USE: &str = "UPDATE counter_codes SET used_at = ?3, used_by = ?4 WHERE id = \
    (SELECT id FROM counter_codes WHERE curp = ?1 AND code_hash = ?2 AND used_at IS NULL \
     AND expires_at > ?3 ORDER BY id LIMIT 1) \
    RETURNING (SELECT patient_id FROM prescriptions p WHERE p.id = prescription_id) AS record";

const MISS: &str = "INSERT INTO counter_misses (curp, pharmacy, created_at) VALUES (?1, ?2, ?3)";

/// `?1` before: misses no limit reads any more.
const FORGET_MISSES: &str = "DELETE FROM counter_misses WHERE created_at < ?1";

/// Issues a code for the person of `signature`; see `patients.issue-counter-code` in the WIT.
pub fn issue(signature: &str) -> Result<CounterCode, Error> {
    let db = Db::open()?;
    let page = crate::records::of_prescription(&db, signature)?;
    let (curp, prescription, record) = (page.curp, page.prescription, page.record);
    let now = SystemTime::now();
    let code = six_digits()?;
    let expires_at = iso8601(now + LIFETIME);
    db.transaction(|db| -> Result<(), Error> {
        let since = text(&iso8601(now - HOUR));
        let issued = db.scalar_i64(ISSUED_SINCE, &[int(record), since])?;
        if issued >= ISSUED_PER_HOUR {
            return Err(Error::TooManyRequests(HOUR.as_secs() as u32));
        }
        let at = text(&iso8601(now));
        db.execute(END_LIVE, &[int(record), at.clone()])?;
        let params = [
            text(curp.as_str()),
            text(&hash(&curp, &code)),
            int(prescription),
            at,
            text(&expires_at),
        ];
        db.execute(INSERT, &params)?;
        Ok(())
    })?;
    Ok(CounterCode { code, expires_at })
}

/// Redeems a code at `pharmacy`; see `patients.redeem-counter-code` in the WIT.
pub fn redeem(pharmacy: i64, curp: &str, code: &str) -> Result<Vec<i64>, Error> {
    let mut refused = Vec::new();
    let parsed = Curp::parse(curp);
    if parsed.is_none() {
        refused.push(FieldError {
            field: "curp".into(),
            messages: vec!["Not a valid CURP (18 characters with a correct check digit).".into()],
        });
    }
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        refused.push(FieldError {
            field: "code".into(),
            messages: vec!["The counter code is six digits.".into()],
        });
    }
    let Some(curp) = parsed.filter(|_| refused.is_empty()) else {
        return Err(Error::Invalid(refused));
    };
    let db = Db::open()?;
    let now = SystemTime::now();
    let at = iso8601(now);
    let since = text(&iso8601(now - HOUR));
    let used = db.transaction(|db| -> Result<Option<i64>, Error> {
        let misses = |sql: &str, who: Param| {
            db.query_opt(sql, &[who, since.clone()], |r| {
                Ok((r.i64("n")?, r.opt_string("oldest")?))
            })
            .map(|found| found.unwrap_or((0, None)))
        };
        let (by_pharmacy, oldest) = misses(PHARMACY_MISSES_SINCE, int(pharmacy))?;
        if by_pharmacy >= PHARMACY_MISSES_PER_HOUR {
            return Err(Error::TooManyRequests(retry_after(oldest.as_deref(), now)));
        }
        let (for_curp, oldest) = misses(MISSES_SINCE, text(curp.as_str()))?;
        if for_curp >= MISSES_PER_HOUR {
            return Err(Error::TooManyRequests(retry_after(oldest.as_deref(), now)));
        }
        let params = [
            text(curp.as_str()),
            text(&hash(&curp, code)),
            text(&at),
            int(pharmacy),
        ];
        if let Some(record) = db.query_opt(USE, &params, |r| r.i64("record"))? {
            return Ok(Some(record));
        }
        db.execute(FORGET_MISSES, &[text(&iso8601(now - MISSES_KEPT))])?;
        db.execute(MISS, &[text(curp.as_str()), int(pharmacy), text(&at)])?;
        Ok(None)
    })?;
    let Some(record) = used else {
        return Err(Error::NotFound(NO_CODE.into()));
    };
    crate::records::scope(&db, record, &curp)
}

/// The one answer for a wrong, used or expired code and an unknown CURP alike.
pub const NO_CODE: &str = "No live counter code matches this CURP: the code is wrong, used or \
    expired. The patient can ask for a new one on their prescription's page.";

/// Seconds until the oldest miss of the last hour stops counting (at least 1).
pub(crate) fn retry_after(oldest: Option<&str>, now: SystemTime) -> u32 {
    let ends = oldest
        .and_then(common::time::parse_iso8601)
        .map(|t| t + HOUR);
    let left = ends.and_then(|e| e.duration_since(now).ok());
    left.map_or(HOUR.as_secs(), |d| d.as_secs().max(1)) as u32
}

/// What is stored of a code: the hex SHA-256 of `<curp>:<code>`.
fn hash(curp: &Curp, code: &str) -> String {
    let digest = Sha256::digest(format!("{}:{code}", curp.as_str()));
    common::hex::encode(&digest)
}

/// Six random decimal digits, uniformly drawn.
pub(crate) fn six_digits() -> Result<String, Error> {
    // The largest multiple of 10^6 that fits in a u32: draws at or above it are drawn again.
    const BOUND: u32 = u32::MAX - u32::MAX % 1_000_000;
    loop {
        let mut bytes = [0u8; 4];
        getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
        let n = u32::from_le_bytes(bytes);
        if n < BOUND {
            return Ok(format!("{:06}", n % 1_000_000));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits_and_vary() {
        let codes: std::collections::HashSet<String> =
            (0..200).map(|_| six_digits().unwrap()).collect();
        assert!(codes.len() > 190);
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 6 && c.bytes().all(|b| b.is_ascii_digit()))
        );
    }

    #[test]
    fn the_stored_hash_binds_the_code_to_the_curp() {
        let a = Curp::parse("BOXW310820HNERXN09").unwrap();
        let b = Curp::parse("SABC560626MDFLRN01").unwrap();
        assert_ne!(hash(&a, "123456"), hash(&b, "123456"));
        assert_eq!(hash(&a, "123456").len(), 64);
    }
}
