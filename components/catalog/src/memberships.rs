//! Memberships: create (or reactivate), list, PATCH, soft delete. The membership rules (docs/api-notes.md, "Catalog"): only the
//! memberships of hospitals the caller manages; `is_active` only through `locations`; creating an
//! existing one reactivates it.

use common::db::{Db, Param, Row, boolean, int, text};
use common::types::{Error, FieldError, PageRequest, Principal};

use crate::access;
use crate::bindings::exports::receta::catalog::catalog::{
    MedicRef, Membership, MembershipPage, MembershipPatch, MembershipType, NewMembership,
};

const MEMBERSHIP_COLUMNS: &str = "m.id, m.medic_id, d.email, d.name, m.hospital_id, m.type_membership, \
    m.is_active, m.is_deleted, m.date_joined FROM memberships m JOIN medics d ON d.id = m.medic_id";

/// The hospitals medic `?1` manages, or every hospital when `?1` is NULL (the API admin).
const MANAGED_BY_CALLER: &str = "(?1 IS NULL OR m.hospital_id IN (SELECT a.hospital_id FROM memberships a \
    WHERE a.medic_id = ?1 AND a.is_deleted = 0 AND a.type_membership = 'ADMIN'))";

const FIND_PAIR: &str = "SELECT id FROM memberships WHERE medic_id = ? AND hospital_id = ?";

const INSERT_MEMBERSHIP: &str = "INSERT INTO memberships \
    (medic_id, hospital_id, type_membership, is_active, is_deleted, date_joined) VALUES (?, ?, ?, 0, 0, ?) RETURNING id";

const REACTIVATE: &str = "UPDATE memberships SET is_deleted = 0, type_membership = ? WHERE id = ?";

/// A moved membership (new medic or hospital) starts inactive; `normalize_active` fixes the rest.
const UPDATE_MEMBERSHIP: &str = "UPDATE memberships SET medic_id = ?2, hospital_id = ?3, type_membership = ?4, \
    is_deleted = ?5, is_active = CASE WHEN ?6 THEN 0 ELSE is_active END WHERE id = ?1";

const SOFT_DELETE: &str = "UPDATE memberships SET is_deleted = 1, is_active = 0 WHERE id = ?";

pub const NOT_UNIQUE: &str = "The fields medic, hospital must make a unique set.";

fn type_name(kind: MembershipType) -> &'static str {
    match kind {
        MembershipType::Admin => "ADMIN",
        MembershipType::Member => "MEMBER",
    }
}

fn from_row(r: &Row) -> anyhow::Result<Membership> {
    let kind = r.string("type_membership")?;
    Ok(Membership {
        id: r.i64("id")?,
        medic: MedicRef {
            id: r.i64("medic_id")?,
            email: r.string("email")?,
            name: r.string("name")?,
        },
        hospital: r.i64("hospital_id")?,
        type_membership: if kind == "ADMIN" {
            MembershipType::Admin
        } else {
            MembershipType::Member
        },
        is_active: r.bool("is_active")?,
        is_deleted: r.bool("is_deleted")?,
        date_joined: r.string("date_joined")?,
    })
}

fn caller_param(caller: &Principal) -> Param {
    match caller {
        Principal::Admin => Param::Null,
        Principal::Medic(id) => int(*id),
    }
}

fn find(db: &Db, id: i64) -> anyhow::Result<Option<Membership>> {
    db.query_opt(
        &format!("SELECT {MEMBERSHIP_COLUMNS} WHERE m.id = ?"),
        &[int(id)],
        from_row,
    )
}

fn field_error(field: &str, message: String) -> FieldError {
    FieldError {
        field: field.into(),
        messages: vec![message],
    }
}

pub fn create(caller: Principal, input: NewMembership) -> Result<Membership, Error> {
    let db = Db::open()?;
    let id = db.transaction(|db| -> Result<i64, Error> {
        let mut errors = Vec::new();
        if !access::hospital_exists(db, input.hospital)? {
            errors.push(field_error("hospital", access::no_such(input.hospital)));
        }
        if !access::medic_exists(db, input.medic)? {
            errors.push(field_error("medic", access::no_such(input.medic)));
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        if !access::manages(db, &caller, input.hospital)? {
            return Err(Error::forbidden(access::NOT_A_MANAGER));
        }
        let kind = text(type_name(input.type_membership));
        let existing = db.query_opt(FIND_PAIR, &[int(input.medic), int(input.hospital)], |r| {
            r.i64("id")
        })?;
        let id = match existing {
            Some(id) => {
                db.execute(REACTIVATE, &[kind, int(id)])?;
                id
            }
            None => {
                let now = common::time::now_iso8601();
                db.scalar_i64(
                    INSERT_MEMBERSHIP,
                    &[int(input.medic), int(input.hospital), kind, text(&now)],
                )?
            }
        };
        access::normalize_active(db, input.medic)?;
        Ok(id)
    })?;
    find(&db, id)?.ok_or_else(Error::not_found)
}

pub fn list(caller: Principal, page: PageRequest) -> Result<MembershipPage, Error> {
    let db = Db::open()?;
    access::require_any_manager(&db, &caller)?;
    let who = caller_param(&caller);
    let count = db.scalar_i64(
        &format!("SELECT COUNT(*) FROM memberships m WHERE {MANAGED_BY_CALLER}"),
        std::slice::from_ref(&who),
    )? as u64;
    let results = db.query(
        &format!(
            "SELECT {MEMBERSHIP_COLUMNS} WHERE {MANAGED_BY_CALLER} ORDER BY m.id LIMIT ?2 OFFSET ?3"
        ),
        &[who, int(page.limit.into()), int(page.offset.into())],
        from_row,
    )?;
    Ok(MembershipPage { count, results })
}

pub fn of_hospital(caller: Principal, hospital: i64) -> Result<Vec<Membership>, Error> {
    let db = Db::open()?;
    access::require_manager(&db, &caller, hospital)?;
    Ok(db.query(
        &format!("SELECT {MEMBERSHIP_COLUMNS} WHERE m.hospital_id = ? ORDER BY m.id"),
        &[int(hospital)],
        from_row,
    )?)
}

pub fn get(caller: Principal, id: i64) -> Result<Membership, Error> {
    let db = Db::open()?;
    let current = find(&db, id)?.ok_or_else(Error::not_found)?;
    let own = matches!(caller, Principal::Medic(m) if m == current.medic.id);
    if !own && !access::manages(&db, &caller, current.hospital)? {
        return Err(Error::forbidden(access::NOT_A_MANAGER));
    }
    Ok(current)
}

pub fn authorize(caller: Principal, id: i64) -> Result<(), Error> {
    let db = Db::open()?;
    let current = find(&db, id)?.ok_or_else(Error::not_found)?;
    if !access::manages(&db, &caller, current.hospital)? {
        return Err(Error::forbidden(access::NOT_A_MANAGER));
    }
    Ok(())
}

pub fn update(caller: Principal, id: i64, patch: MembershipPatch) -> Result<Membership, Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        let current = find(db, id)?.ok_or_else(Error::not_found)?;
        if !access::manages(db, &caller, current.hospital)? {
            return Err(Error::forbidden(access::NOT_A_MANAGER));
        }
        let medic = patch.medic.unwrap_or(current.medic.id);
        let hospital = patch.hospital.unwrap_or(current.hospital);
        let mut errors = Vec::new();
        if hospital != current.hospital && !access::hospital_exists(db, hospital)? {
            errors.push(field_error("hospital", access::no_such(hospital)));
        }
        if medic != current.medic.id && !access::medic_exists(db, medic)? {
            errors.push(field_error("medic", access::no_such(medic)));
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        if hospital != current.hospital && !access::manages(db, &caller, hospital)? {
            return Err(Error::forbidden(access::NOT_A_MANAGER));
        }
        let moved = medic != current.medic.id || hospital != current.hospital;
        if moved
            && db
                .query_opt(FIND_PAIR, &[int(medic), int(hospital)], |r| r.i64("id"))?
                .is_some()
        {
            return Err(Error::field("non_field_errors", NOT_UNIQUE));
        }
        db.execute(
            UPDATE_MEMBERSHIP,
            &[
                int(id),
                int(medic),
                int(hospital),
                text(type_name(
                    patch.type_membership.unwrap_or(current.type_membership),
                )),
                boolean(patch.is_deleted.unwrap_or(current.is_deleted)),
                boolean(moved),
            ],
        )?;
        access::normalize_active(db, medic)?;
        if medic != current.medic.id {
            access::normalize_active(db, current.medic.id)?;
        }
        Ok(())
    })?;
    find(&db, id)?.ok_or_else(Error::not_found)
}

pub fn delete(caller: Principal, id: i64) -> Result<(), Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        let current = find(db, id)?.ok_or_else(Error::not_found)?;
        let own = matches!(caller, Principal::Medic(m) if m == current.medic.id);
        if !own && !access::manages(db, &caller, current.hospital)? {
            return Err(Error::forbidden(access::NOT_A_MANAGER));
        }
        db.execute(SOFT_DELETE, &[int(id)])?;
        access::normalize_active(db, current.medic.id)?;
        Ok(())
    })
}
