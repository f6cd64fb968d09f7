//! The person proves a record theirs (tables `record_links`, `link_codes`, `link_misses`, migration
//! 0033; docs/patients.md, "Who speaks for whom").
//!
//! A CURP is not a secret: any medic can write someone's CURP on a record of their own. So a
//! record's page speaks for its own record only, until the person proves another record of the same
//! CURP is theirs: on the page they ask for codes, one is sent to the email each other record's own
//! medic recorded on it, and entering one of them links that record to the page's (directed: the
//! page's record speaks for the linked one, never the other way). A medic who forged a record never
//! sees the codes sent to the person's real records, and the page answers the same whether or not
//! there are other records to send to.
//!
//! Six digits, thirty minutes, one use; only `SHA-256("<record>:<code>")` is stored. At most
//! `REQUESTS_PER_HOUR` requests per record (each may email the person), and `MISSES_PER_HOUR`
//! wrong codes per record before the page is refused (429).

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use common::curp::normalised_sql;
use common::db::{Db, int, text};
use common::time::iso8601;
use common::types::{Error, FieldError};

use crate::bindings::exports::receta::patients::patients::{LinkCode, LinkedRecord};
use crate::records::{of_prescription, scope};

/// How long a code works.
pub const LIFETIME: Duration = Duration::from_secs(30 * 60);
/// Requests for codes one record's page may make in an hour.
pub const REQUESTS_PER_HOUR: i64 = 3;
/// Wrong codes one record's page may enter in an hour.
pub const MISSES_PER_HOUR: i64 = 5;
const HOUR: Duration = Duration::from_secs(3600);

/// `?1` a normalised valid CURP, `?2` the page's record: the other records of that CURP not linked
/// from it yet, each with the email its medic recorded and its newest prescription.
fn others_sql() -> String {
    format!(
        "SELECT patients.id, patients.email, \
         (SELECT MAX(p.id) FROM prescriptions p WHERE p.patient_id = patients.id) AS rx \
         FROM patients WHERE {} = ?1 AND patients.id <> ?2 \
         AND NOT EXISTS (SELECT 1 FROM record_links l \
             WHERE l.patient_id = ?2 AND l.linked_id = patients.id) \
         ORDER BY patients.id",
        normalised_sql()
    )
}

/// `?1` record, `?2` since: the requests its page made since then (one time per request).
const REQUESTS_SINCE: &str =
    "SELECT COUNT(DISTINCT created_at) FROM link_codes WHERE patient_id = ?1 AND created_at >= ?2";

const INSERT_CODE: &str = "INSERT INTO link_codes (patient_id, linked_id, code_hash, channel, \
    prescription_id, created_at, expires_at) VALUES (?1, ?2, ?3, 'email', ?4, ?5, ?6)";

/// `?1` record, `?2` since.
const MISSES_SINCE: &str = "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM link_misses \
    WHERE patient_id = ?1 AND created_at >= ?2";

const MISS: &str = "INSERT INTO link_misses (patient_id, created_at) VALUES (?1, ?2)";

/// `?1` record, `?2` code hash, `?3` now: uses the live code, once.
const USE: &str = "UPDATE link_codes SET used_at = ?3 WHERE id = \
    (SELECT id FROM link_codes WHERE patient_id = ?1 AND code_hash = ?2 AND used_at IS NULL \
     AND expires_at > ?3 ORDER BY id LIMIT 1) RETURNING linked_id, channel";

/// `?1` record, `?2` linked record, `?3` channel, `?4` the page's prescription, `?5` now.
const LINK: &str = "INSERT INTO record_links \
    (patient_id, linked_id, channel, prescription_id, confirmed_at) VALUES (?1, ?2, ?3, ?4, ?5) \
    ON CONFLICT (patient_id, linked_id) DO NOTHING RETURNING id";

/// `?1` record: its links, with the linked record's medic by name.
const LINKS: &str = "SELECT l.id, l.linked_id, COALESCE(m.name, '') AS medic_name, l.channel, \
    l.confirmed_at FROM record_links l JOIN patients pa ON pa.id = l.linked_id \
    LEFT JOIN medics m ON m.id = pa.medic_id WHERE l.patient_id = ?1 ORDER BY l.id";

/// `?1` record, `?2` link id.
const UNLINK: &str = "DELETE FROM record_links WHERE patient_id = ?1 AND id = ?2 RETURNING id";

/// The one answer for a wrong, used or expired code.
pub const NO_CODE: &str = "No live code of this page matches: it is wrong, used or expired. \
    Ask for new codes on this page.";

/// See `patients.request-link-codes` in the WIT.
pub fn request(signature: &str) -> Result<Vec<LinkCode>, Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let now = SystemTime::now();
    let at = iso8601(now);
    let expires_at = iso8601(now + LIFETIME);
    db.transaction(|db| -> Result<Vec<LinkCode>, Error> {
        let since = text(&iso8601(now - HOUR));
        if db.scalar_i64(REQUESTS_SINCE, &[int(page.record), since])? >= REQUESTS_PER_HOUR {
            return Err(Error::TooManyRequests(HOUR.as_secs() as u32));
        }
        let params = [text(page.curp.as_str()), int(page.record)];
        let others = db.query(&others_sql(), &params, |r| {
            Ok((r.i64("id")?, r.string("email")?, r.opt_i64("rx")?))
        })?;
        let mut codes: Vec<LinkCode> = Vec::new();
        for (record, email, rx) in others {
            let Some(prescription) = rx.filter(|_| is_address(&email)) else {
                continue;
            };
            let code = loop {
                let code = crate::counter::six_digits()?;
                if codes.iter().all(|c| c.code != code) {
                    break code;
                }
            };
            db.execute(
                INSERT_CODE,
                &[
                    int(page.record),
                    int(record),
                    text(&hash(page.record, &code)),
                    int(page.prescription),
                    text(&at),
                    text(&expires_at),
                ],
            )?;
            codes.push(LinkCode {
                prescription,
                to: email.trim().to_string(),
                code,
                expires_at: expires_at.clone(),
            });
        }
        Ok(codes)
    })
}

/// See `patients.confirm-link` in the WIT.
pub fn confirm(signature: &str, code: &str) -> Result<(LinkedRecord, bool), Error> {
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::Invalid(vec![FieldError {
            field: "code".into(),
            messages: vec!["The code is the six digits sent to you.".into()],
        }]));
    }
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let now = SystemTime::now();
    let at = text(&iso8601(now));
    let linked = db.transaction(|db| -> Result<Option<(i64, bool)>, Error> {
        let since = text(&iso8601(now - HOUR));
        let (misses, oldest) = db
            .query_opt(MISSES_SINCE, &[int(page.record), since], |r| {
                Ok((r.i64("n")?, r.opt_string("oldest")?))
            })?
            .unwrap_or((0, None));
        if misses >= MISSES_PER_HOUR {
            return Err(Error::TooManyRequests(crate::counter::retry_after(
                oldest.as_deref(),
                now,
            )));
        }
        let params = [int(page.record), text(&hash(page.record, code)), at.clone()];
        let used = db.query_opt(USE, &params, |r| {
            Ok((r.i64("linked_id")?, r.string("channel")?))
        })?;
        let Some((linked, channel)) = used else {
            db.execute(MISS, &[int(page.record), at.clone()])?;
            return Ok(None);
        };
        let params = [
            int(page.record),
            int(linked),
            text(&channel),
            int(page.prescription),
            at.clone(),
        ];
        let new = db.query_opt(LINK, &params, |r| r.i64("id"))?.is_some();
        Ok(Some((linked, new)))
    })?;
    let Some((linked, new)) = linked else {
        return Err(Error::NotFound(NO_CODE.into()));
    };
    let record = of_record(&db, page.record)?
        .into_iter()
        .find(|(_, id)| *id == linked)
        .map(|(record, _)| record)
        .ok_or_else(|| Error::NotFound(NO_CODE.into()))?;
    Ok((record, new))
}

/// See `patients.linked-records` in the WIT: the links of the page's record whose linked record
/// still has the same CURP.
pub fn list(signature: &str) -> Result<Vec<LinkedRecord>, Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let live = scope(&db, page.record, &page.curp)?;
    Ok(of_record(&db, page.record)?
        .into_iter()
        .filter(|(_, id)| live.contains(id))
        .map(|(record, _)| record)
        .collect())
}

/// See `patients.unlink-record` in the WIT.
pub fn unlink(signature: &str, id: i64) -> Result<(), Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    db.query_opt(UNLINK, &[int(page.record), int(id)], |r| r.i64("id"))?
        .map(|_| ())
        .ok_or_else(Error::not_found)
}

/// A record's links, each with the id of the record it links.
fn of_record(db: &Db, record: i64) -> Result<Vec<(LinkedRecord, i64)>, Error> {
    Ok(db.query(LINKS, &[int(record)], |r| {
        Ok((
            LinkedRecord {
                id: r.i64("id")?,
                medic_name: r.string("medic_name")?,
                channel: r.string("channel")?,
                confirmed_at: r.string("confirmed_at")?,
            },
            r.i64("linked_id")?,
        ))
    })?)
}

/// Whether a record's `email` is an address a code can be sent to.
fn is_address(email: &str) -> bool {
    let email = email.trim();
    email.len() > 2 && email.contains('@') && !email.contains(char::is_whitespace)
}

/// What is stored of a code: the hex SHA-256 of `<record>:<code>`.
fn hash(record: i64, code: &str) -> String {
    common::hex::encode(&Sha256::digest(format!("{record}:{code}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_bound_to_the_page_record() {
        assert_ne!(hash(1, "123456"), hash(2, "123456"));
        assert_eq!(hash(1, "123456").len(), 64);
    }

    #[test]
    fn only_an_address_gets_a_code() {
        assert!(is_address(" ana@example.mx "));
        assert!(!is_address(""));
        assert!(!is_address("sin correo"));
    }

    #[test]
    fn the_others_are_found_through_the_index_expression() {
        assert!(others_sql().contains(&normalised_sql()));
    }
}
