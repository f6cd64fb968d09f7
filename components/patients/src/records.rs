//! Patients in SQLite: every statement is scoped to the owning medic (`medic_id`), so another medic's
//! patient is indistinguishable from one that does not exist.

use common::codes::Coded;
use common::curp::{Curp, normalised_sql};
use common::db::{Db, Param, Row, int, is_unique_violation, like_contains, opt_text, text};
use common::types::{Error, MedicKey, PageRequest};
use spin_sdk::sqlite3::QueryResult;

use crate::bindings::exports::receta::patients::patients::{
    NewPatient, Patient, PatientKey, PatientPatch,
};
use crate::channels;

const INSERT: &str = "INSERT INTO patients \
    (uid, medic_id, created_at, updated_at, name, email, date_of_birth, external_patient_file, gender, \
     curp, phone, address, state, zip_code, location) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

/// A patient's columns (with how it is reached: `channels::COLUMNS`).
const COLUMNS: &str = "patients.id, uid, name, email, date_of_birth, external_patient_file, gender, \
    curp, phone, address, state, zip_code, location";

/// `?1` medic, `?2` a `LIKE … ESCAPE '\'` pattern or NULL, `?3` limit, `?4` offset.
fn select_page_sql() -> String {
    format!(
        "SELECT {COLUMNS}, {} FROM patients \
         WHERE medic_id = ?1 AND (?2 IS NULL OR name LIKE ?2 ESCAPE '\\' OR email LIKE ?2 ESCAPE '\\') \
         ORDER BY patients.id LIMIT ?3 OFFSET ?4",
        channels::COLUMNS,
    )
}

/// `?1` medic, `?2` the id (`by_id`) or the uid.
fn select_sql(by_id: bool) -> String {
    let key = if by_id { "patients.id" } else { "uid" };
    format!(
        "SELECT {COLUMNS}, {} FROM patients WHERE medic_id = ?1 AND {key} = ?2",
        channels::COLUMNS,
    )
}

/// `?1` medic, `?2` id or uid (see `update_sql`), `?3` now, `?4`… the fields in `PatientPatch` order
/// (NULL keeps the stored value).
const UPDATE_SET: &str = "UPDATE patients SET updated_at = ?3, \
    name = COALESCE(?4, name), email = COALESCE(?5, email), date_of_birth = COALESCE(?6, date_of_birth), \
    external_patient_file = COALESCE(?7, external_patient_file), gender = COALESCE(?8, gender), \
    curp = COALESCE(?9, curp), phone = COALESCE(?10, phone), address = COALESCE(?11, address), \
    state = COALESCE(?12, state), zip_code = COALESCE(?13, zip_code), location = COALESCE(?14, location)";

/// What an update returns: the row, and what its channels are checked against.
const RETURNING: &str = "RETURNING id, email, phone";

/// `?1` a record, `?2` its normalised valid CURP: the record, and the records the person proved
/// their own on its page (`record_links`), each only while it still carries that CURP.
fn scope_sql() -> String {
    let key = normalised_sql();
    format!(
        "SELECT id FROM patients WHERE id = ?1 AND {key} = ?2 \
         UNION SELECT l.linked_id FROM record_links l JOIN patients ON patients.id = l.linked_id \
         WHERE l.patient_id = ?1 AND {key} = ?2 ORDER BY 1"
    )
}

/// What a record speaks for (docs/patients.md, "Who speaks for whom"): itself, and the records of
/// the same person whose own channel the person proved on its page (`links`; found through the
/// index `patients_by_curp_key`, built on the same expression). Never another record only
/// because it has the same CURP: a medic can write anyone's CURP on a record of their own.
pub fn scope(db: &Db, record: i64, curp: &Curp) -> Result<Vec<i64>, Error> {
    Ok(
        db.query(&scope_sql(), &[int(record), text(curp.as_str())], |r| {
            r.i64("id")
        })?,
    )
}

/// `?1` signature: the prescription, its patient (record and stored CURP), its medic and hospital
/// with their names.
const PRESCRIBED: &str = "SELECT p.id, p.patient_id, pa.curp, p.medic_id, m.name AS medic_name, \
    p.hospital_id, h.name AS hospital_name FROM prescriptions p \
    JOIN patients pa ON pa.id = p.patient_id \
    JOIN medics m ON m.id = p.medic_id JOIN hospitals h ON h.id = p.hospital_id \
    WHERE p.signature = ?1";

/// The record a prescription's page speaks for (its patient, with a valid CURP), and who issued it.
pub struct Prescribed {
    pub prescription: i64,
    pub record: i64,
    pub curp: Curp,
    pub medic: i64,
    pub medic_name: String,
    pub hospital: i64,
    pub hospital_name: String,
}

/// The prescription `signature` names, as the patient's page calls need it (counter codes,
/// consents, links). `not-found` for an unknown signature; `conflict` when its patient's record has
/// no valid CURP (there is no person to speak for).
pub fn of_prescription(db: &Db, signature: &str) -> Result<Prescribed, Error> {
    let found = db
        .query_opt(PRESCRIBED, &[text(signature)], |r| {
            Ok((
                (r.i64("id")?, r.i64("patient_id")?, r.string("curp")?),
                r.i64("medic_id")?,
                r.string("medic_name")?,
                r.i64("hospital_id")?,
                r.string("hospital_name")?,
            ))
        })?
        .ok_or_else(Error::not_found)?;
    let ((prescription, record, curp), medic, medic_name, hospital, hospital_name) = found;
    let curp = Curp::parse(&curp).ok_or_else(|| {
        Error::Conflict(
            "The patient's record has no valid CURP: ask your medic to add it to your record, \
             then try again."
                .into(),
        )
    })?;
    Ok(Prescribed {
        prescription,
        record,
        curp,
        medic,
        medic_name,
        hospital,
        hospital_name,
    })
}

/// Random bytes in a `uid`: 128 bits, 32 hex characters.
const UID_BYTES: usize = 16;

fn from_row(r: &Row) -> anyhow::Result<Patient> {
    let email = r.string("email")?;
    let phone = r.string("phone")?;
    Ok(Patient {
        channels: channels::from_row(r, &email)?,
        whatsapp_opt_in: channels::opt_in_from_row(r)?,
        phone_e164: channels::e164_from_row(r, &phone)?,
        id: r.i64("id")?,
        uid: r.string("uid")?,
        name: r.string("name")?,
        email,
        date_of_birth: r.string("date_of_birth")?,
        external_patient_file: r.string("external_patient_file")?,
        gender: r.code("gender")?,
        curp_valid: Curp::parse(&r.string("curp")?).is_some(),
        curp: r.string("curp")?,
        phone,
        address: r.string("address")?,
        state: r.string("state")?,
        zip_code: r.string("zip_code")?,
        location: r.string("location")?,
    })
}

pub fn create(medic: i64, input: NewPatient) -> Result<Patient, Error> {
    let e164 = common::phone::e164(&input.phone);
    let codes = match &input.channels {
        Some(chosen) => Some(channels::check(chosen, &input.email, e164.as_deref())?),
        None => None,
    };
    let change = channels::Change {
        e164: Some(e164.as_deref()),
        codes: codes.as_deref(),
        opt_in: input.whatsapp_opt_in.then_some(true),
    };
    let by = format!("medic:{medic}");
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    // A uid collision needs 2^64 patients to become likely; retrying keeps even that from failing.
    let mut attempt = 0;
    let id = loop {
        let params = [
            text(&new_uid()),
            int(medic),
            text(&now),
            text(&now),
            text(&input.name),
            text(&input.email),
            text(&input.date_of_birth),
            text(&input.external_patient_file),
            text(input.gender.code()),
            text(&input.curp),
            text(&input.phone),
            text(&input.address),
            text(&input.state),
            text(&input.zip_code),
            text(&input.location),
        ];
        let inserted = db.transaction(|db| -> Result<i64, Error> {
            let id = match db.query_opt(INSERT, &params, |r| r.i64("id")) {
                Ok(id) => {
                    id.ok_or_else(|| anyhow::anyhow!("INSERT … RETURNING returned no row"))?
                }
                Err(e) if is_unique_violation(&e) => return Err(Error::Conflict("uid".into())),
                Err(e) => return Err(e.into()),
            };
            channels::write(db, id, &change, &by)?;
            Ok(id)
        });
        match inserted {
            Ok(id) => break id,
            Err(Error::Conflict(_)) if attempt < 3 => attempt += 1,
            Err(e) => return Err(e),
        }
    };
    get(medic, &PatientKey::Id(id))
}

pub fn list(medic: i64, search: Option<&str>, page: PageRequest) -> Result<Vec<Patient>, Error> {
    let db = Db::open()?;
    let pattern = search.filter(|s| !s.is_empty()).map(like_contains);
    let params = [
        int(medic),
        opt_text(pattern.as_deref()),
        int(page.limit.into()),
        int(page.offset.into()),
    ];
    Ok(db.query(&select_page_sql(), &params, from_row)?)
}

pub fn get(medic: i64, key: &PatientKey) -> Result<Patient, Error> {
    let (sql, params) = owned_read(&MedicKey::Id(medic), key);
    owned_of(&Db::open()?.execute(&sql, &params)?)
}

/// The statement [`get`] runs (`patients.owned-read`).
pub fn owned_read(medic: &MedicKey, key: &PatientKey) -> (String, Vec<Param>) {
    let (sql, value) = match key {
        PatientKey::Id(id) => (select_sql(true), int(*id)),
        PatientKey::Uid(uid) => (select_sql(false), text(uid)),
    };
    let (sql, medic) = common::holder::statement(&sql, medic);
    (sql, vec![medic, value])
}

/// The patient in `read`, the result of [`owned_read`]'s statement (`patients.owned-of`).
pub fn owned_of(read: &QueryResult) -> Result<Patient, Error> {
    common::db::rows(read, from_row)?
        .into_iter()
        .next()
        .ok_or_else(Error::not_found)
}

pub fn update(medic: i64, key: &PatientKey, patch: PatientPatch) -> Result<Patient, Error> {
    let db = Db::open()?;
    let (sql, value) = update_sql(key);
    let o = |v: &Option<String>| opt_text(v.as_deref());
    let params: [Param; 14] = [
        int(medic),
        value,
        text(&common::time::now_iso8601()),
        o(&patch.name),
        o(&patch.email),
        o(&patch.date_of_birth),
        o(&patch.external_patient_file),
        opt_text(patch.gender.map(Coded::code)),
        o(&patch.curp),
        o(&patch.phone),
        o(&patch.address),
        o(&patch.state),
        o(&patch.zip_code),
        o(&patch.location),
    ];
    let by = format!("medic:{medic}");
    // Parsed before the transaction: the first parse of an instance loads the metadata.
    let new_e164 = patch.phone.as_deref().map(common::phone::e164);
    let id = db.transaction(|db| -> Result<i64, Error> {
        let (id, email, phone) = db
            .query_opt(&sql, &params, |r| {
                Ok((r.i64("id")?, r.string("email")?, r.string("phone")?))
            })?
            .ok_or_else(Error::not_found)?;
        let codes = match &patch.channels {
            Some(chosen) => {
                let e164 = match &new_e164 {
                    Some(parsed) => parsed.clone(),
                    None => channels::stored_e164(db, id, &phone)?,
                };
                Some(channels::check(chosen, &email, e164.as_deref())?)
            }
            None => None,
        };
        let change = channels::Change {
            e164: new_e164.as_ref().map(|e| e.as_deref()),
            codes: codes.as_deref(),
            opt_in: patch.whatsapp_opt_in,
        };
        channels::write(db, id, &change, &by)?;
        Ok(id)
    })?;
    get(medic, &PatientKey::Id(id))
}

/// The UPDATE statement for a key, and the key's parameter (`?2`).
fn update_sql(key: &PatientKey) -> (String, Param) {
    match key {
        PatientKey::Id(id) => (
            format!("{UPDATE_SET} WHERE medic_id = ?1 AND id = ?2 {RETURNING}"),
            int(*id),
        ),
        PatientKey::Uid(uid) => (
            format!("{UPDATE_SET} WHERE medic_id = ?1 AND uid = ?2 {RETURNING}"),
            text(uid),
        ),
    }
}

/// A fresh uid: 32 lowercase hex characters, never all digits (so a numeric path segment is an id).
fn new_uid() -> String {
    loop {
        let uid = common::hex::random::<UID_BYTES>();
        if !is_all_digits(&uid) {
            return uid;
        }
    }
}

fn is_all_digits(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_32_hex_never_all_digits_and_distinct() {
        let uids: std::collections::HashSet<String> = (0..1000).map(|_| new_uid()).collect();
        assert_eq!(uids.len(), 1000);
        for uid in &uids {
            assert_eq!(uid.len(), 32);
            assert!(
                uid.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            );
            assert!(!is_all_digits(uid));
        }
    }

    #[test]
    fn the_person_is_found_through_the_index_expression() {
        // Migration 0033 builds `patients_by_curp_key` on this very expression.
        let migration = include_str!("../../../migrations/0033_person_proof.sql");
        let key = normalised_sql();
        assert!(migration.contains(&format!("ON patients (\n    {key}\n);")));
        assert_eq!(scope_sql().matches(&key).count(), 2);
    }

    #[test]
    fn update_is_scoped_to_the_medic() {
        for key in [PatientKey::Id(7), PatientKey::Uid("ab".into())] {
            let (sql, _) = update_sql(&key);
            assert!(sql.contains("WHERE medic_id = ?1 AND "), "{sql}");
            assert!(sql.ends_with("RETURNING id, email, phone"), "{sql}");
        }
        for sql in [select_page_sql(), select_sql(true), select_sql(false)] {
            assert!(sql.contains("WHERE medic_id = ?1"), "{sql}");
        }
    }
}
