//! Medics as `GET/PATCH /api/v2/medics/` show them (never the token or the password hash): the
//! list, one medic, and a PATCH, each within the caller's reach. The API admin reaches every medic;
//! a medic with a live ADMIN membership reaches the medics with a live membership on a hospital they
//! manage; every medic reaches themselves.

use common::db::{self, Db, Param, Row, int, opt_text, text};
use common::types::{Error, PageRequest, Principal};

use crate::access;
use crate::bindings::exports::receta::catalog::catalog::{MedicPatch, MedicView, MedicViewPage};
use crate::medics::EMAIL_EXISTS;

/// `?1` the calling medic, or NULL for the API admin.
const REACH: &str = "(?1 IS NULL OR m.id = ?1 OR EXISTS (SELECT 1 FROM memberships mine \
    JOIN memberships theirs ON theirs.hospital_id = mine.hospital_id \
    WHERE mine.medic_id = ?1 AND mine.type_membership = 'ADMIN' AND mine.is_deleted = 0 \
    AND theirs.medic_id = m.id AND theirs.is_deleted = 0))";

/// The active hospital and its membership type come from the medic's one active membership.
const VIEW_COLUMNS: &str = "m.id, m.name, m.email, m.date_of_birth, m.cedula_prof, m.specialty_no, \
    m.specialty, m.alma_mater, m.female, m.is_active, m.specialty_verified, a.hospital_id AS hospital, \
    COALESCE(a.type_membership = 'ADMIN', 0) AS is_admin_membership, m.rfc, m.curp \
    FROM medics m LEFT JOIN memberships a \
    ON a.medic_id = m.id AND a.is_active = 1 AND a.is_deleted = 0";

/// A medic's RFC and CURP as registered now.
const IDENTIFIERS: &str = "SELECT rfc, curp FROM medics WHERE id = ?1";

const EMAIL_TAKEN_BY_ANOTHER: &str =
    "SELECT EXISTS (SELECT 1 FROM medics WHERE email = ?1 AND id <> ?2)";

/// `?1` id, then each field or NULL to keep it; `?13` 1 to set the RFC to `?14`, `?15` 1 to set
/// the CURP to `?16` (NULL clears).
const UPDATE: &str = "UPDATE medics SET name = COALESCE(?2, name), email = COALESCE(?3, email), \
    password_hash = COALESCE(?4, password_hash), date_of_birth = COALESCE(?5, date_of_birth), \
    cedula_prof = COALESCE(?6, cedula_prof), specialty_no = COALESCE(?7, specialty_no), \
    specialty = COALESCE(?8, specialty), alma_mater = COALESCE(?9, alma_mater), \
    female = COALESCE(?10, female), is_active = COALESCE(?11, is_active), \
    specialty_verified = COALESCE(?12, specialty_verified), \
    rfc = CASE WHEN ?13 THEN ?14 ELSE rfc END, curp = CASE WHEN ?15 THEN ?16 ELSE curp END \
    WHERE id = ?1";

const ADMIN_FIELDS: &str = "Only the API admin may change is_active or specialty_verified.";

fn caller_param(caller: &Principal) -> Param {
    match caller {
        Principal::Admin => Param::Null,
        Principal::Medic(id) => int(*id),
    }
}

pub fn list(caller: Principal, page: PageRequest) -> Result<MedicViewPage, Error> {
    let db = Db::open()?;
    access::require_any_manager(&db, &caller)?;
    let who = caller_param(&caller);
    let count = db.scalar_i64(
        &format!("SELECT COUNT(*) FROM medics m WHERE {REACH}"),
        std::slice::from_ref(&who),
    )?;
    let results = db.query(
        &format!("SELECT {VIEW_COLUMNS} WHERE {REACH} ORDER BY m.id LIMIT ?2 OFFSET ?3"),
        &[who, int(page.limit.into()), int(page.offset.into())],
        from_row,
    )?;
    Ok(MedicViewPage {
        count: u64::try_from(count).unwrap_or(0),
        results,
    })
}

/// See `medic-identifiers` (WIT): `(none, none)` for a medic without them or that does not exist,
/// and on a database error (logged).
pub fn identifiers(id: i64) -> (Option<String>, Option<String>) {
    let found = Db::open().and_then(|db| {
        db.query_opt(IDENTIFIERS, &[int(id)], |r| {
            Ok((r.opt_string("rfc")?, r.opt_string("curp")?))
        })
    });
    match found {
        Ok(found) => found.unwrap_or_default(),
        Err(e) => {
            eprintln!("medic-identifiers {id}: {e:#}");
            (None, None)
        }
    }
}

pub fn get(caller: Principal, id: i64) -> Result<MedicView, Error> {
    find(&Db::open()?, &caller, id)?.ok_or_else(Error::not_found)
}

fn find(db: &Db, caller: &Principal, id: i64) -> Result<Option<MedicView>, Error> {
    Ok(db.query_opt(
        &format!("SELECT {VIEW_COLUMNS} WHERE {REACH} AND m.id = ?2"),
        &[caller_param(caller), int(id)],
        from_row,
    )?)
}

pub fn update(caller: Principal, id: i64, patch: MedicPatch) -> Result<MedicView, Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        find(db, &caller, id)?.ok_or_else(Error::not_found)?;
        let admin_only = patch.is_active.is_some() || patch.specialty_verified.is_some();
        if admin_only && !matches!(caller, Principal::Admin) {
            return Err(Error::forbidden(ADMIN_FIELDS));
        }
        if let Some(email) = &patch.email
            && db.scalar_i64(EMAIL_TAKEN_BY_ANOTHER, &[text(email), int(id)])? != 0
        {
            return Err(Error::field("email", EMAIL_EXISTS));
        }
        let o = |v: &Option<String>| opt_text(v.as_deref());
        let b = |v: Option<bool>| v.map_or(Param::Null, |b| int(b.into()));
        let set = |v: &Option<Option<String>>| int(v.is_some().into());
        let value = |v: &Option<Option<String>>| opt_text(v.as_ref().and_then(|x| x.as_deref()));
        let params = [
            int(id),
            o(&patch.name),
            o(&patch.email),
            o(&patch.password_hash),
            o(&patch.date_of_birth),
            o(&patch.cedula_prof),
            o(&patch.specialty_no),
            o(&patch.specialty),
            o(&patch.alma_mater),
            b(patch.female),
            b(patch.is_active),
            b(patch.specialty_verified),
            set(&patch.rfc),
            value(&patch.rfc),
            set(&patch.curp),
            value(&patch.curp),
        ];
        match db.execute(UPDATE, &params) {
            Ok(_) => {}
            Err(e) if db::is_unique_violation(&e) => {
                return Err(Error::field("email", EMAIL_EXISTS));
            }
            Err(e) => return Err(e.into()),
        }
        Ok(())
    })?;
    find(&db, &caller, id)?.ok_or_else(Error::not_found)
}

fn from_row(r: &Row) -> anyhow::Result<MedicView> {
    Ok(MedicView {
        id: r.i64("id")?,
        name: r.string("name")?,
        email: r.string("email")?,
        hospital: r.opt_i64("hospital")?,
        date_of_birth: r.string("date_of_birth")?,
        cedula_prof: r.string("cedula_prof")?,
        specialty_no: r.string("specialty_no")?,
        specialty: r.string("specialty")?,
        alma_mater: r.string("alma_mater")?,
        female: r.bool("female")?,
        is_active: r.bool("is_active")?,
        specialty_verified: r.bool("specialty_verified")?,
        is_admin_membership: r.bool("is_admin_membership")?,
        rfc: r.opt_string("rfc")?,
        curp: r.opt_string("curp")?,
    })
}
