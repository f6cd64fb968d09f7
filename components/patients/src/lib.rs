//! The patients component: wires `receta:patients/patients` to the `records` module.

mod records;

use common::db::lent;
use common::types::{Error, PageRequest};
use spin_sdk::sqlite3::Connection;

mod bindings;

use bindings::exports::receta::patients::patients::{
    Guest, NewPatient, Patient, PatientKey, PatientPatch,
};

struct Patients;

impl Guest for Patients {
    fn create_patient(db: &Connection, medic: i64, input: NewPatient) -> Result<Patient, Error> {
        lent(db, || records::create(medic, input))
    }

    fn list_patients(
        db: &Connection,
        medic: i64,
        search: Option<String>,
        page: PageRequest,
    ) -> Result<Vec<Patient>, Error> {
        lent(db, || records::list(medic, search.as_deref(), page))
    }

    fn get_owned(db: &Connection, medic: i64, key: PatientKey) -> Result<Patient, Error> {
        lent(db, || records::get(medic, &key))
    }

    fn update_patient(
        db: &Connection,
        medic: i64,
        key: PatientKey,
        patch: PatientPatch,
    ) -> Result<Patient, Error> {
        lent(db, || records::update(medic, &key, patch))
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Patients with_types_in bindings);
