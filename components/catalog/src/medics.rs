//! Medics: creation (with the first membership), search by email, and the profile other components read.

use common::db::{self, Db, Row, boolean, int, opt_text, text};
use common::types::{Error, FieldError, PageRequest, Principal};

use crate::access;
use crate::bindings::exports::receta::catalog::catalog::{
    Medic, MedicProfile, MedicSummary, MedicSummaryPage, NewMedic,
};

const INSERT_MEDIC: &str = "INSERT INTO medics \
    (created_at, name, email, password_hash, token_hash, date_of_birth, cedula_prof, specialty_no, \
     specialty, alma_mater, female, specialty_verified, is_active, rfc, curp) \
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id";

/// `email` has `COLLATE NOCASE`, so this is an ASCII case-insensitive match.
const EMAIL_TAKEN: &str = "SELECT EXISTS (SELECT 1 FROM medics WHERE email = ?)";

/// The medic's first membership: it is their only one, so it is the active one.
const INSERT_FIRST_MEMBERSHIP: &str = "INSERT INTO memberships \
    (medic_id, hospital_id, type_membership, is_active, is_deleted, date_joined) VALUES (?, ?, ?, 1, 0, ?)";

const SELECT_MEDIC: &str = "SELECT id, name, email, password_hash, date_of_birth, cedula_prof, specialty_no, \
    specialty, alma_mater, female, specialty_verified, is_active FROM medics WHERE id = ?";

const COUNT_MATCHING: &str = "SELECT COUNT(*) FROM medics WHERE email LIKE ? ESCAPE '\\'";

const SELECT_MATCHING: &str =
    "SELECT id, email FROM medics WHERE email LIKE ?1 ESCAPE '\\' ORDER BY id LIMIT ?2 OFFSET ?3";

pub const EMAIL_EXISTS: &str = "A medic with this email already exists.";

pub fn create(input: NewMedic) -> Result<Medic, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    let id = db.transaction(|db| -> Result<i64, Error> {
        let mut errors = Vec::new();
        if db.scalar_i64(EMAIL_TAKEN, &[text(&input.email)])? != 0 {
            errors.push(FieldError {
                field: "email".into(),
                messages: vec![EMAIL_EXISTS.into()],
            });
        }
        if let Some(hospital) = input.hospital
            && !access::hospital_exists(db, hospital)?
        {
            errors.push(FieldError {
                field: "hospital".into(),
                messages: vec![access::no_such(hospital)],
            });
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        let inserted = db.scalar_i64(
            INSERT_MEDIC,
            &[
                text(&now),
                text(&input.name),
                text(&input.email),
                text(&input.password_hash),
                text(&input.token_hash),
                text(&input.date_of_birth),
                text(&input.cedula_prof),
                text(&input.specialty_no),
                text(&input.specialty),
                text(&input.alma_mater),
                boolean(input.female),
                boolean(input.specialty_verified),
                boolean(input.is_active),
                opt_text(input.rfc.as_deref()),
                opt_text(input.curp.as_deref()),
            ],
        );
        let id = match inserted {
            Ok(id) => id,
            // Only the email can collide here (the token hash has 160 random bits behind it).
            Err(e) if db::is_unique_violation(&e) => {
                return Err(Error::field("email", EMAIL_EXISTS));
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(hospital) = input.hospital {
            let kind = if input.is_admin_membership {
                "ADMIN"
            } else {
                "MEMBER"
            };
            db.execute(
                INSERT_FIRST_MEMBERSHIP,
                &[int(id), int(hospital), text(kind), text(&now)],
            )?;
        }
        Ok(id)
    })?;
    let medic = db
        .query_opt(SELECT_MEDIC, &[int(id)], |r| -> anyhow::Result<Medic> {
            Ok(Medic {
                id: r.i64("id")?,
                name: r.string("name")?,
                email: r.string("email")?,
                password_hash: r.string("password_hash")?,
                date_of_birth: r.string("date_of_birth")?,
                cedula_prof: r.string("cedula_prof")?,
                specialty_no: r.string("specialty_no")?,
                specialty: r.string("specialty")?,
                alma_mater: r.string("alma_mater")?,
                female: r.bool("female")?,
                specialty_verified: r.bool("specialty_verified")?,
                is_active: r.bool("is_active")?,
                hospital: input.hospital,
                is_admin_membership: input.is_admin_membership,
                rfc: input.rfc.clone(),
                curp: input.curp.clone(),
            })
        })?
        .ok_or_else(|| Error::Internal(format!("medic {id} vanished after insert")))?;
    Ok(medic)
}

pub fn search(
    caller: Principal,
    query: String,
    page: PageRequest,
) -> Result<MedicSummaryPage, Error> {
    let db = Db::open()?;
    access::require_any_manager(&db, &caller)?;
    let query = query.trim();
    if query.is_empty() {
        return Ok(MedicSummaryPage {
            count: 0,
            results: Vec::new(),
        });
    }
    let pattern = db::like_contains(query);
    let count = db.scalar_i64(COUNT_MATCHING, &[text(&pattern)])? as u64;
    let results = db.query(
        SELECT_MATCHING,
        &[
            text(&pattern),
            int(page.limit.into()),
            int(page.offset.into()),
        ],
        |r| {
            Ok(MedicSummary {
                id: r.i64("id")?,
                email: r.string("email")?,
            })
        },
    )?;
    Ok(MedicSummaryPage { count, results })
}

/// A medic's profile columns, each named `medic_…` (`md` the medic), read by [`prefixed_profile`].
pub const PROFILE_COLUMNS: &str = "md.id AS medic_id, md.name AS medic_name, \
    md.email AS medic_email, md.cedula_prof AS medic_cedula_prof, \
    md.specialty AS medic_specialty, md.specialty_no AS medic_specialty_no, \
    md.alma_mater AS medic_alma_mater, md.female AS medic_female, \
    md.specialty_verified AS medic_specialty_verified, md.is_active AS medic_is_active";

/// The profile of a row read with [`PROFILE_COLUMNS`].
pub fn prefixed_profile(r: &Row) -> anyhow::Result<MedicProfile> {
    Ok(MedicProfile {
        id: r.i64("medic_id")?,
        name: r.string("medic_name")?,
        email: r.string("medic_email")?,
        cedula_prof: r.string("medic_cedula_prof")?,
        specialty: r.string("medic_specialty")?,
        specialty_no: r.string("medic_specialty_no")?,
        alma_mater: r.string("medic_alma_mater")?,
        female: r.bool("medic_female")?,
        specialty_verified: r.bool("medic_specialty_verified")?,
        is_active: r.bool("medic_is_active")?,
    })
}

fn profile(r: &Row) -> anyhow::Result<MedicProfile> {
    Ok(MedicProfile {
        id: r.i64("id")?,
        name: r.string("name")?,
        email: r.string("email")?,
        cedula_prof: r.string("cedula_prof")?,
        specialty: r.string("specialty")?,
        specialty_no: r.string("specialty_no")?,
        alma_mater: r.string("alma_mater")?,
        female: r.bool("female")?,
        specialty_verified: r.bool("specialty_verified")?,
        is_active: r.bool("is_active")?,
    })
}

pub fn get(id: i64) -> Option<MedicProfile> {
    let found = Db::open().and_then(|db| db.query_opt(SELECT_MEDIC, &[int(id)], profile));
    found.unwrap_or_else(|e| {
        eprintln!("get-medic {id}: {e:#}");
        None
    })
}
