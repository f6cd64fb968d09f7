//! The patients component: wires `receta:patients/patients` to its modules.
//!
//! - `records`: each medic's patients
//! - `channels`: how a patient is reached (channels, the phone in E.164, the WhatsApp opt-in)
//! - `counter`: the codes a patient shows at a pharmacy counter
//! - `consents`: the person's consents to share their medication history, and who they cover
//! - `links`: the person proves another record of their CURP theirs (a code sent to its email)

mod channels;
mod consents;
mod counter;
mod links;
mod records;

use common::db::lent;
use common::types::{Error, MedicKey, PageRequest};
use spin_sdk::sqlite3::{Connection, QueryResult, Value};

mod bindings;

use bindings::exports::receta::patients::patients::{
    Consent, ConsentVia, CounterCode, Grantee, Guest, LinkCode, LinkedRecord, NewPatient, OptIn,
    Patient, PatientKey, PatientPatch, PersonConsents,
};

struct Patients;

impl Guest for Patients {
    fn create_patient(
        db: Option<&Connection>,
        medic: i64,
        input: NewPatient,
    ) -> Result<Patient, Error> {
        lent(db, || records::create(medic, input))
    }

    fn list_patients(
        db: Option<&Connection>,
        medic: i64,
        search: Option<String>,
        page: PageRequest,
    ) -> Result<Vec<Patient>, Error> {
        lent(db, || records::list(medic, search.as_deref(), page))
    }

    fn get_owned(db: Option<&Connection>, medic: i64, key: PatientKey) -> Result<Patient, Error> {
        lent(db, || records::get(medic, &key))
    }

    fn owned_read(medic: MedicKey, key: PatientKey) -> (String, Vec<Value>) {
        records::owned_read(&medic, &key)
    }

    fn owned_of(read: QueryResult) -> Result<Patient, Error> {
        records::owned_of(&read)
    }

    fn whatsapp_opt_in_of(
        db: Option<&Connection>,
        signature: String,
    ) -> Result<Option<OptIn>, Error> {
        lent(db, || channels::opt_in_of(&signature))
    }

    fn withdraw_whatsapp(db: Option<&Connection>, signature: String) -> Result<(), Error> {
        lent(db, || channels::withdraw(&signature))
    }

    fn update_patient(
        db: Option<&Connection>,
        medic: i64,
        key: PatientKey,
        patch: PatientPatch,
    ) -> Result<Patient, Error> {
        lent(db, || records::update(medic, &key, patch))
    }

    fn issue_counter_code(
        db: Option<&Connection>,
        signature: String,
    ) -> Result<CounterCode, Error> {
        lent(db, || counter::issue(&signature))
    }

    fn redeem_counter_code(
        db: Option<&Connection>,
        pharmacy: i64,
        curp: String,
        code: String,
    ) -> Result<Vec<i64>, Error> {
        lent(db, || counter::redeem(pharmacy, &curp, &code))
    }

    fn list_consents(db: Option<&Connection>, signature: String) -> Result<PersonConsents, Error> {
        lent(db, || consents::list(&signature))
    }

    fn give_consent(
        db: Option<&Connection>,
        signature: String,
        grantee: Grantee,
        via: ConsentVia,
    ) -> Result<(Consent, bool), Error> {
        lent(db, || consents::give(&signature, grantee, via))
    }

    fn withdraw_consent(
        db: Option<&Connection>,
        signature: String,
        id: i64,
    ) -> Result<Consent, Error> {
        lent(db, || consents::withdraw(&signature, id))
    }

    fn history_access(
        db: Option<&Connection>,
        medic: i64,
        hospitals: Vec<i64>,
        key: PatientKey,
    ) -> Result<Vec<i64>, Error> {
        lent(db, || consents::history_access(medic, &hospitals, &key))
    }

    fn request_link_codes(
        db: Option<&Connection>,
        signature: String,
    ) -> Result<Vec<LinkCode>, Error> {
        lent(db, || links::request(&signature))
    }

    fn confirm_link(
        db: Option<&Connection>,
        signature: String,
        code: String,
    ) -> Result<(LinkedRecord, bool), Error> {
        lent(db, || links::confirm(&signature, &code))
    }

    fn linked_records(
        db: Option<&Connection>,
        signature: String,
    ) -> Result<Vec<LinkedRecord>, Error> {
        lent(db, || links::list(&signature))
    }

    fn unlink_record(db: Option<&Connection>, signature: String, id: i64) -> Result<(), Error> {
        lent(db, || links::unlink(&signature, id))
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Patients with_types_in bindings);
