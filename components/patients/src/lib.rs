//! The patients component: wires `receta:patients/patients` to its modules.
//!
//! - `records`: each medic's patients
//! - `curp`: the CURP, and when it is the person's identity
//! - `counter`: the codes a patient shows at a pharmacy counter

mod counter;
mod curp;
mod records;

use common::db::lent;
use common::types::{Error, PageRequest};
use spin_sdk::sqlite3::Connection;

mod bindings;

use bindings::exports::receta::patients::patients::{
    CounterCode, Guest, NewPatient, Patient, PatientKey, PatientPatch,
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

    fn issue_counter_code(db: &Connection, signature: String) -> Result<CounterCode, Error> {
        lent(db, || counter::issue(&signature))
    }

    fn redeem_counter_code(
        db: &Connection,
        pharmacy: i64,
        curp: String,
        code: String,
    ) -> Result<Vec<i64>, Error> {
        lent(db, || counter::redeem(pharmacy, &curp, &code))
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Patients with_types_in bindings);
