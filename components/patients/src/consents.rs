//! Consents (table `consents`, migration 0027): the person lets a named medic, or every medic of a
//! named hospital, see their prescriptions from other medics (docs/patients.md, "A medication
//! history, only with consent"). Given and withdrawn on the patient's page; each row keeps the
//! proof (when, which link, how) and a withdrawal keeps the row. LFPDPPP puts the burden of proof on
//! whoever holds the data: this table is that proof.
//!
//! A consent speaks only for the record whose page it was given on, and the records that page
//! proved its own (`records::scope`; docs/patients.md, "Who speaks for whom"): a medic who writes
//! someone's CURP on a record of their own can consent on its page, and so reach only that record.

use common::curp::Curp;
use common::db::{Db, Param, Row, int, numbered, text};
use common::types::{Error, FieldError};

use crate::bindings::exports::receta::patients::patients::{
    Consent, ConsentVia, Grantee, PatientKey, PersonConsents,
};
use crate::records::{of_prescription, scope};

/// The columns of a consent as `from_row` reads it (`c` the consent, `p` the prescription whose
/// page it was given on: named by its folio, `common::folio::LEN` characters, never its signature).
const COLUMNS: &str = "c.id, c.medic_id, c.hospital_id, \
    COALESCE(m.name, h.name, '') AS grantee_name, c.given_at, c.given_via, \
    substr(p.signature, 1, 12) AS given_on, c.prescription_id, c.withdrawn_at FROM consents c \
    JOIN prescriptions p ON p.id = c.prescription_id \
    LEFT JOIN medics m ON m.id = c.medic_id LEFT JOIN hospitals h ON h.id = c.hospital_id";

/// `?1` CURP, `?2`… the records a page speaks for: the consents given on their pages, newest first.
fn of_scope(records: usize) -> String {
    let listed = numbered(2, records);
    format!("SELECT {COLUMNS} WHERE c.curp = ?1 AND p.patient_id IN ({listed}) ORDER BY c.id DESC")
}

/// `?1` CURP, `?2` id, `?3`… the records a page speaks for: one of those consents.
fn one(records: usize) -> String {
    let listed = numbered(3, records);
    format!("SELECT {COLUMNS} WHERE c.curp = ?1 AND c.id = ?2 AND p.patient_id IN ({listed})")
}

/// `?1` CURP, `?2` medic or NULL, `?3` hospital or NULL, `?4` the page's record: a standing consent
/// naming exactly that, given on a page of that record.
const STANDING: &str = "SELECT c.id FROM consents c JOIN prescriptions p ON p.id = c.prescription_id \
    WHERE c.curp = ?1 AND c.withdrawn_at IS NULL AND c.medic_id IS ?2 AND c.hospital_id IS ?3 \
    AND p.patient_id = ?4 ORDER BY c.id LIMIT 1";

const INSERT: &str = "INSERT INTO consents \
    (curp, medic_id, hospital_id, given_at, given_via, prescription_id) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id";

/// `?1` CURP, `?2` id, `?3` now, `?4`… the records a page speaks for: withdraws a standing consent
/// given on one of their pages.
fn withdraw_sql(records: usize) -> String {
    let listed = numbered(4, records);
    format!(
        "UPDATE consents SET withdrawn_at = ?3 WHERE curp = ?1 AND id = ?2 \
         AND withdrawn_at IS NULL AND prescription_id IN \
         (SELECT id FROM prescriptions WHERE patient_id IN ({listed}))"
    )
}

const MEDIC_EXISTS: &str = "SELECT COUNT(*) FROM medics WHERE id = ?1";
const HOSPITAL_EXISTS: &str = "SELECT COUNT(*) FROM hospitals WHERE id = ?1";

/// `?1` medic, `?2` id or uid: the CURP of one of the medic's patients.
const OWN_BY_ID: &str = "SELECT curp FROM patients WHERE medic_id = ?1 AND id = ?2";
const OWN_BY_UID: &str = "SELECT curp FROM patients WHERE medic_id = ?1 AND uid = ?2";

/// How the 403 of a history without consent tells the medic what the patient does.
pub const NEEDS_CONSENT: &str = "The patient has not allowed you to see their prescriptions from \
    other medics. They can allow it on the page of any of their prescriptions (its link, \
    /rx/<signature>), naming you or your hospital, and withdraw it there at any time.";
const NO_PERSON: &str = "The patient's record has no valid CURP, so it is not linked to their \
    prescriptions from other medics: add their CURP to the record first.";

/// A consent as the page of prescription `here` reads it (`given_here`: given on that page).
fn from_row(r: &Row, here: i64) -> anyhow::Result<Consent> {
    let grantee = match (r.opt_i64("medic_id")?, r.opt_i64("hospital_id")?) {
        (Some(m), _) => Grantee::Medic(m),
        (None, Some(h)) => Grantee::Hospital(h),
        (None, None) => anyhow::bail!("a consent naming nobody"),
    };
    Ok(Consent {
        id: r.i64("id")?,
        grantee,
        grantee_name: r.string("grantee_name")?,
        given_at: r.string("given_at")?,
        given_via: match r.string("given_via")?.as_str() {
            "page_json" => ConsentVia::PageJson,
            _ => ConsentVia::PageForm,
        },
        given_on: r.string("given_on")?,
        given_here: r.i64("prescription_id")? == here,
        withdrawn_at: r.opt_string("withdrawn_at")?,
    })
}

/// `?1` CURP then the records: the parameters of the statements over a page's scope.
fn with_scope(mut params: Vec<Param>, records: &[i64]) -> Vec<Param> {
    params.extend(records.iter().map(|r| int(*r)));
    params
}

/// See `patients.list-consents` in the WIT.
pub fn list(signature: &str) -> Result<PersonConsents, Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let records = scope(&db, page.record, &page.curp)?;
    let params = with_scope(vec![text(page.curp.as_str())], &records);
    let here = page.prescription;
    let consents = db.query(&of_scope(records.len()), &params, |r| from_row(r, here))?;
    Ok(PersonConsents {
        consents,
        issuing_medic: page.medic,
        issuing_medic_name: page.medic_name,
        issuing_hospital: page.hospital,
        issuing_hospital_name: page.hospital_name,
    })
}

/// See `patients.give-consent` in the WIT.
pub fn give(signature: &str, grantee: Grantee, via: ConsentVia) -> Result<(Consent, bool), Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let (field, exists, id) = match grantee {
        Grantee::Medic(id) => ("medic", MEDIC_EXISTS, id),
        Grantee::Hospital(id) => ("hospital", HOSPITAL_EXISTS, id),
    };
    if db.scalar_i64(exists, &[int(id)])? == 0 {
        return Err(Error::Invalid(vec![FieldError {
            field: field.into(),
            messages: vec![format!("No {field} has the id {id}.")],
        }]));
    }
    let (medic, hospital) = match grantee {
        Grantee::Medic(id) => (int(id), Param::Null),
        Grantee::Hospital(id) => (Param::Null, int(id)),
    };
    let curp = text(page.curp.as_str());
    let (id, new) = db.transaction(|db| -> Result<(i64, bool), Error> {
        let standing = [
            curp.clone(),
            medic.clone(),
            hospital.clone(),
            int(page.record),
        ];
        if let Some(id) = db.query_opt(STANDING, &standing, |r| r.i64("id"))? {
            return Ok((id, false));
        }
        let via = match via {
            ConsentVia::PageForm => "page_form",
            ConsentVia::PageJson => "page_json",
        };
        let params = [
            curp.clone(),
            medic.clone(),
            hospital.clone(),
            text(&common::time::now_iso8601()),
            text(via),
            int(page.prescription),
        ];
        let id = db
            .query_opt(INSERT, &params, |r| r.i64("id"))?
            .ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?;
        Ok((id, true))
    })?;
    let params = with_scope(vec![curp, int(id)], &[page.record]);
    let here = page.prescription;
    let consent = db.query_opt(&one(1), &params, |r| from_row(r, here))?;
    Ok((consent.ok_or_else(Error::not_found)?, new))
}

/// See `patients.withdraw-consent` in the WIT.
pub fn withdraw(signature: &str, id: i64) -> Result<Consent, Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let records = scope(&db, page.record, &page.curp)?;
    let curp = text(page.curp.as_str());
    let now = text(&common::time::now_iso8601());
    let params = with_scope(vec![curp.clone(), int(id), now], &records);
    db.execute(&withdraw_sql(records.len()), &params)?;
    let params = with_scope(vec![curp, int(id)], &records);
    let here = page.prescription;
    db.query_opt(&one(records.len()), &params, |r| from_row(r, here))?
        .ok_or_else(Error::not_found)
}

/// `?1` CURP, `?2` medic, then the hospitals: the records on whose pages a standing consent
/// covering the medic was given.
fn covering(hospitals: usize) -> String {
    let listed = numbered(3, hospitals);
    format!(
        "SELECT DISTINCT p.patient_id FROM consents c \
         JOIN prescriptions p ON p.id = c.prescription_id \
         WHERE c.curp = ?1 AND c.withdrawn_at IS NULL \
         AND (c.medic_id = ?2 OR c.hospital_id IN ({listed})) ORDER BY 1"
    )
}

/// See `patients.history-access` in the WIT: the records a covering consent speaks for (each
/// consent speaks for the record it was given on and what that record's page proved its own).
pub fn history_access(medic: i64, hospitals: &[i64], key: &PatientKey) -> Result<Vec<i64>, Error> {
    let db = Db::open()?;
    let (sql, value) = match key {
        PatientKey::Id(id) => (OWN_BY_ID, int(*id)),
        PatientKey::Uid(uid) => (OWN_BY_UID, text(uid)),
    };
    let stored = db
        .query_opt(sql, &[int(medic), value], |r| r.string("curp"))?
        .ok_or_else(Error::not_found)?;
    let curp = Curp::parse(&stored).ok_or_else(|| Error::Forbidden(NO_PERSON.into()))?;
    let mut params = vec![text(curp.as_str()), int(medic)];
    params.extend(hospitals.iter().map(|h| int(*h)));
    let given_on = db.query(&covering(hospitals.len()), &params, |r| r.i64("patient_id"))?;
    if given_on.is_empty() {
        return Err(Error::Forbidden(NEEDS_CONSENT.into()));
    }
    let mut records = Vec::new();
    for record in given_on {
        records.extend(scope(&db, record, &curp)?);
    }
    records.sort_unstable();
    records.dedup();
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_medic_without_hospitals_is_covered_only_by_name() {
        assert!(covering(0).contains("hospital_id IN (NULL)"));
        assert!(covering(2).contains("hospital_id IN (?3, ?4))"));
    }
}
