//! Who may do what, and the active-hospital invariant: the membership queries every module shares.
//!
//! A membership grants access only while it is live (`is_deleted = 0`); managing a hospital (PATCH,
//! memberships) needs a live ADMIN membership there, or the API admin.

use common::db::{Db, int};
use common::types::{Error, Principal};

const HOSPITAL_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM hospitals WHERE id = ?)";

const MEDIC_EXISTS: &str = "SELECT EXISTS (SELECT 1 FROM medics WHERE id = ?)";

const IS_HOSPITAL_ADMIN: &str = "SELECT EXISTS (SELECT 1 FROM memberships \
    WHERE medic_id = ? AND hospital_id = ? AND is_deleted = 0 AND type_membership = 'ADMIN')";

const IS_ANY_ADMIN: &str = "SELECT EXISTS (SELECT 1 FROM memberships \
    WHERE medic_id = ? AND is_deleted = 0 AND type_membership = 'ADMIN')";

/// A deleted membership is never the active one.
const DEACTIVATE_DELETED: &str =
    "UPDATE memberships SET is_active = 0 WHERE medic_id = ? AND is_deleted = 1";

/// A medic with live memberships but no active one gets the oldest live one as active.
const PROMOTE_OLDEST: &str = "UPDATE memberships SET is_active = 1 \
    WHERE id = (SELECT id FROM memberships WHERE medic_id = ?1 AND is_deleted = 0 ORDER BY id LIMIT 1) \
    AND NOT EXISTS (SELECT 1 FROM memberships WHERE medic_id = ?1 AND is_deleted = 0 AND is_active = 1)";

pub const NOT_A_MANAGER: &str = "You do not have permission to manage this hospital.";
pub const NO_MANAGED_HOSPITAL: &str =
    "Only the API admin or a medic with an ADMIN membership may do this.";

/// DRF's message for a foreign key that names nothing.
pub fn no_such(id: i64) -> String {
    format!("Invalid pk \"{id}\" - object does not exist.")
}

pub fn hospital_exists(db: &Db, id: i64) -> anyhow::Result<bool> {
    Ok(db.scalar_i64(HOSPITAL_EXISTS, &[int(id)])? != 0)
}

pub fn medic_exists(db: &Db, id: i64) -> anyhow::Result<bool> {
    Ok(db.scalar_i64(MEDIC_EXISTS, &[int(id)])? != 0)
}

/// Whether the caller manages the hospital: the API admin, or a live ADMIN membership there.
pub fn manages(db: &Db, caller: &Principal, hospital: i64) -> anyhow::Result<bool> {
    match caller {
        Principal::Admin => Ok(true),
        Principal::Medic(medic) => {
            Ok(db.scalar_i64(IS_HOSPITAL_ADMIN, &[int(*medic), int(hospital)])? != 0)
        }
    }
}

/// Whether the caller manages at least one hospital.
pub fn manages_any(db: &Db, caller: &Principal) -> anyhow::Result<bool> {
    match caller {
        Principal::Admin => Ok(true),
        Principal::Medic(medic) => Ok(db.scalar_i64(IS_ANY_ADMIN, &[int(*medic)])? != 0),
    }
}

/// `not-found` when the hospital does not exist, `forbidden` when the caller does not manage it.
pub fn require_manager(db: &Db, caller: &Principal, hospital: i64) -> Result<(), Error> {
    if !hospital_exists(db, hospital)? {
        return Err(Error::not_found());
    }
    if !manages(db, caller, hospital)? {
        return Err(Error::forbidden(NOT_A_MANAGER));
    }
    Ok(())
}

/// `forbidden` unless the caller manages at least one hospital.
pub fn require_any_manager(db: &Db, caller: &Principal) -> Result<(), Error> {
    if !manages_any(db, caller)? {
        return Err(Error::forbidden(NO_MANAGED_HOSPITAL));
    }
    Ok(())
}

/// Restores "exactly one live membership is active" for a medic after a membership changed.
pub fn normalize_active(db: &Db, medic: i64) -> anyhow::Result<()> {
    db.execute(DEACTIVATE_DELETED, &[int(medic)])?;
    db.execute(PROMOTE_OLDEST, &[int(medic)])?;
    Ok(())
}
