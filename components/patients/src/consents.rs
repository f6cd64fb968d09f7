//! Consents (table `consents`, migration 0027): the person lets a named medic, or every medic of a
//! named hospital, see their prescriptions from other medics (docs/patients.md, "A medication
//! history, only with consent"). Given and withdrawn on the patient's page; each row keeps the
//! proof (when, which link, how) and a withdrawal keeps the row. LFPDPPP puts the burden of proof on
//! whoever holds the data: this table is that proof.

use common::curp::Curp;
use common::db::{Db, Row, int, numbered, text};
use common::types::{Error, FieldError};

use crate::bindings::exports::receta::patients::patients::{
    Consent, ConsentVia, Grantee, PatientKey, PersonConsents,
};
use crate::records::of_prescription;

/// The columns of a consent as `from_row` reads it (`c` the consent).
const COLUMNS: &str = "c.id, c.medic_id, c.hospital_id, \
    COALESCE(m.name, h.name, '') AS grantee_name, c.given_at, c.given_via, \
    p.signature AS given_on, c.withdrawn_at FROM consents c \
    JOIN prescriptions p ON p.id = c.prescription_id \
    LEFT JOIN medics m ON m.id = c.medic_id LEFT JOIN hospitals h ON h.id = c.hospital_id";

/// `?1` CURP: the person's consents, newest first.
fn of_person() -> String {
    format!("SELECT {COLUMNS} WHERE c.curp = ?1 ORDER BY c.id DESC")
}

/// `?1` CURP, `?2` id: one of the person's consents.
fn one() -> String {
    format!("SELECT {COLUMNS} WHERE c.curp = ?1 AND c.id = ?2")
}

/// `?1` CURP, `?2` medic or NULL, `?3` hospital or NULL: a standing consent naming exactly that.
const STANDING: &str = "SELECT id FROM consents WHERE curp = ?1 AND withdrawn_at IS NULL \
    AND medic_id IS ?2 AND hospital_id IS ?3 ORDER BY id LIMIT 1";

const INSERT: &str = "INSERT INTO consents \
    (curp, medic_id, hospital_id, given_at, given_via, prescription_id) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING id";

/// `?1` CURP, `?2` id, `?3` now: withdraws a standing consent.
const WITHDRAW: &str = "UPDATE consents SET withdrawn_at = ?3 \
    WHERE curp = ?1 AND id = ?2 AND withdrawn_at IS NULL";

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

fn from_row(r: &Row) -> anyhow::Result<Consent> {
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
        withdrawn_at: r.opt_string("withdrawn_at")?,
    })
}

/// See `patients.list-consents` in the WIT.
pub fn list(signature: &str) -> Result<PersonConsents, Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let consents = db.query(&of_person(), &[text(page.curp.as_str())], from_row)?;
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
        Grantee::Medic(id) => (int(id), common::db::Param::Null),
        Grantee::Hospital(id) => (common::db::Param::Null, int(id)),
    };
    let curp = text(page.curp.as_str());
    let (id, new) = db.transaction(|db| -> Result<(i64, bool), Error> {
        let standing = [curp.clone(), medic.clone(), hospital.clone()];
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
    let consent = db
        .query_opt(&one(), &[curp, int(id)], from_row)?
        .ok_or_else(Error::not_found)?;
    Ok((consent, new))
}

/// See `patients.withdraw-consent` in the WIT.
pub fn withdraw(signature: &str, id: i64) -> Result<Consent, Error> {
    let db = Db::open()?;
    let page = of_prescription(&db, signature)?;
    let curp = text(page.curp.as_str());
    let now = text(&common::time::now_iso8601());
    db.execute(WITHDRAW, &[curp.clone(), int(id), now])?;
    db.query_opt(&one(), &[curp, int(id)], from_row)?
        .ok_or_else(Error::not_found)
}

/// `?1` CURP, `?2` medic, then the hospitals: whether a standing consent covers the medic.
fn covering(hospitals: usize) -> String {
    let listed = numbered(3, hospitals);
    format!(
        "SELECT COUNT(*) FROM consents WHERE curp = ?1 AND withdrawn_at IS NULL \
         AND (medic_id = ?2 OR hospital_id IN ({listed}))"
    )
}

/// See `patients.history-access` in the WIT.
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
    if db.scalar_i64(&covering(hospitals.len()), &params)? == 0 {
        return Err(Error::Forbidden(NEEDS_CONSENT.into()));
    }
    crate::records::of_person(&db, &curp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_medic_without_hospitals_is_covered_only_by_name() {
        assert!(covering(0).contains("hospital_id IN (NULL)"));
        assert!(covering(2).ends_with("hospital_id IN (?3, ?4))"));
    }
}
