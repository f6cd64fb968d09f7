//! Locations: where the calling medic can prescribe from, and which one is active (the default).
//!
//! A hospital with `is_active` false is not shown to its members (openapi/receta.json), so it is neither listed
//! nor selectable here. There is no clinic model yet: `clinics` is always empty.

use common::db::{Db, int};
use common::types::Error;

use crate::bindings::exports::receta::catalog::catalog::{LocationEntry, LocationHospital};

const SELECT_LOCATIONS: &str = "SELECT h.id, h.name, h.location, m.is_active FROM memberships m \
    JOIN hospitals h ON h.id = m.hospital_id \
    WHERE m.medic_id = ? AND m.is_deleted = 0 AND h.is_active = 1 ORDER BY m.id";

const SELECTABLE: &str = "SELECT EXISTS (SELECT 1 FROM memberships m JOIN hospitals h ON h.id = m.hospital_id \
    WHERE m.medic_id = ? AND m.hospital_id = ? AND m.is_deleted = 0 AND h.is_active = 1)";

/// Exactly the live membership on `?2` becomes active; deleted ones stay inactive.
const SET_ACTIVE: &str =
    "UPDATE memberships SET is_active = (hospital_id = ?2 AND is_deleted = 0) WHERE medic_id = ?1";

pub fn list(medic: i64) -> Result<Vec<LocationEntry>, Error> {
    let db = Db::open()?;
    Ok(db.query(SELECT_LOCATIONS, &[int(medic)], |r| {
        Ok(LocationEntry {
            hospital: LocationHospital {
                name: r.string("name")?,
                id: r.i64("id")?,
                location: r.string("location")?,
            },
            is_default: r.bool("is_active")?,
            clinics: Vec::new(),
        })
    })?)
}

pub fn set_active(medic: i64, hospital: i64) -> Result<(), Error> {
    let db = Db::open()?;
    db.transaction(|db| -> Result<(), Error> {
        if db.scalar_i64(SELECTABLE, &[int(medic), int(hospital)])? == 0 {
            return Err(Error::not_found());
        }
        db.execute(SET_ACTIVE, &[int(medic), int(hospital)])?;
        Ok(())
    })
}
