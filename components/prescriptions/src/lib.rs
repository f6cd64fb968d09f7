//! The prescriptions component: wires `receta:prescriptions/prescriptions` to its modules.
//!
//! - `medications`: the formulary rules for each medication (pure)
//! - `document`: the canonical document and its signature (pure); `canonical`: its JSON form
//! - `pdf`: the PDF rendered at issue
//! - `issue`: issuing, all writes in one transaction
//! - `read`: lists and details, always scoped to the caller; `detail`: a prescription by its
//!   signature in one statement (the detail and a pharmacy's lookup)
//! - `landing`: the patient landing view and its PDF (the signature is the capability)
//! - `lifecycle`: after issue: dispenses, rejection, cancellation, and their event log
//! - `fhir`: what a FHIR view adds to a prescription (its document and dispenses)
//! - `handover`: what exactly a sale handed over (GTIN, lot, expiry, serial, substitution)
//! - `dispensable`: what a pharmacy may dispense now of one person's prescriptions (the counter)
//! - `history`: a person's prescriptions from other medics, for a medic they consented to
//! - `status`: the pharmacy's status (`with_pharmacy` … `collected`) and its rules; `status_reads`:
//!   the statuses as the reads carry them
//! - `claims`: a pharmacy's hold on a prescription while it dispenses (claim, release, burn's check)
//! - `outbox`: the outbox rows written in this component's transactions
//! - `seal`: the digital seal (Ed25519) and the service's keys; `verify`: the public check
//! - `constancia`: the NOM-151 constancias (RFC 3161 timestamps) as readers see them
//! - `efirma`: the prescriber's e.firma as readers see it; `signing`: drafts, their activation, the
//!   stored signature
//! - `drugs`: the formulary (the API's drug catalog)
//! - `rules`: the Mexican rules (classes that may be issued, repeats, validity; pure)
//! - `sales`: the seal of each sale; `register`: a pharmacy's antibiotic register
//! - `receipts`: the sealed receipt of each sale; `access`: the patient's access log (who looked);
//!   `reads`: the medic's and the admin's reads on their way to it (queued in the key-value store)

mod access;
mod canonical;
mod claims;
mod constancia;
mod detail;
mod dispensable;
mod dispense;
mod document;
mod drugs;
mod efirma;
mod fhir;
mod handover;
mod history;
mod issue;
mod landing;
mod lifecycle;
mod medications;
mod outbox;
mod pdf;
mod read;
mod reads;
mod receipts;
mod register;
mod rules;
mod sales;
mod scope;
mod seal;
mod signing;
mod state;
mod status;
mod status_reads;
mod verify;

use common::db::lent;
use common::types::{Error, MedicKey, PageRequest, Principal};
use spin_sdk::sqlite3::{Connection, QueryResult, Value};

mod bindings;

use bindings::exports::receta::prescriptions::prescriptions::{
    ClaimGrant, DispenseRequest, Dispensed, Drug, DrugLoad, DrugPage, EfirmaActivation,
    EfirmaDraft, FhirSource, Guest, HistoryEntry, IssueRequest, LandingRx, LifecycleEvent,
    MedicationPage, PharmacyRef, PharmacyView, Prescription, PrescriptionPage, PublishedKey,
    Reader, Receipt, ReceiptCheck, RegisterPage, StateChange, StatusChange, StatusUpdate,
    Verification,
};

struct Prescriptions;

/// A pharmacy's 404 says `rx not found`, whatever the read found missing.
fn rx_not_found(e: Error) -> Error {
    match e {
        Error::NotFound(_) => Error::NotFound(lifecycle::RX_NOT_FOUND.into()),
        other => other,
    }
}

impl Guest for Prescriptions {
    fn issue(db: Option<&Connection>, request: IssueRequest) -> Result<Prescription, Error> {
        lent(db, || issue::issue(request))
    }

    fn formulary_read(upcs: Vec<String>) -> Option<(String, Vec<Value>)> {
        issue::formulary_read(upcs.iter().map(String::as_str))
    }

    fn formulary_of(read: QueryResult) -> Result<Vec<Drug>, Error> {
        issue::formulary_of(&read)
    }

    fn list_prescriptions(
        db: Option<&Connection>,
        medic: MedicKey,
        search: Option<String>,
        page: PageRequest,
    ) -> Result<PrescriptionPage, Error> {
        lent(db, || read::list(&medic, search.as_deref(), page))
    }

    fn list_medications(
        db: Option<&Connection>,
        medic: i64,
        page: PageRequest,
    ) -> Result<MedicationPage, Error> {
        lent(db, || read::prescribed(medic, page))
    }

    fn get_by_id(db: Option<&Connection>, medic: i64, id: i64) -> Result<Prescription, Error> {
        lent(db, || read::by_id(medic, id))
    }

    fn get_by_signature(
        db: Option<&Connection>,
        reader: Reader,
        signature: String,
    ) -> Result<Prescription, Error> {
        lent(db, || detail::by_signature(&reader, &signature))
    }

    fn get_pdf(
        db: Option<&Connection>,
        caller: Principal,
        signature: String,
    ) -> Result<Vec<u8>, Error> {
        lent(db, || read::pdf(&caller, &signature))
    }

    fn history_of(
        db: Option<&Connection>,
        reader: i64,
        reader_name: String,
        patients: Vec<i64>,
        since: String,
        active_only: bool,
    ) -> Result<Vec<HistoryEntry>, Error> {
        lent(db, || {
            history::of(reader, &reader_name, &patients, &since, active_only)
        })
    }

    fn dispensable_for(
        db: Option<&Connection>,
        pharmacy: i64,
        patients: Vec<i64>,
    ) -> Result<Vec<String>, Error> {
        lent(db, || dispensable::for_patients(pharmacy, &patients))
    }

    fn get_for_pharmacy(db: Option<&Connection>, signature: String) -> Result<PharmacyView, Error> {
        lent(db, || detail::pharmacy_view(&signature)).map_err(rx_not_found)
    }

    fn pharmacy_view_read(signature: String) -> (String, Vec<Value>) {
        detail::pharmacy_view_read(&signature)
    }

    fn pharmacy_view_of(signature: String, read: QueryResult) -> Result<PharmacyView, Error> {
        detail::pharmacy_view_of(&signature, &read).map_err(rx_not_found)
    }

    fn dispense(db: Option<&Connection>, request: DispenseRequest) -> Result<Dispensed, Error> {
        lent(db, || dispense::dispense(request))
    }

    fn get_receipt(
        db: Option<&Connection>,
        pharmacy: Option<i64>,
        digest: String,
    ) -> Result<Receipt, Error> {
        lent(db, || receipts::get(pharmacy, &digest))
    }

    fn verify_receipt(digest: String, client: String) -> Result<ReceiptCheck, Error> {
        receipts::verify(&digest, &client)
    }

    fn reject(
        db: Option<&Connection>,
        pharmacy: PharmacyRef,
        change: StateChange,
    ) -> Result<Prescription, Error> {
        lent(db, || lifecycle::reject(pharmacy, change))
    }

    fn claim(
        db: Option<&Connection>,
        pharmacy: PharmacyRef,
        signature: String,
        minutes: u32,
    ) -> Result<ClaimGrant, Error> {
        lent(db, || claims::claim(pharmacy, &signature, minutes))
    }

    fn release(
        db: Option<&Connection>,
        pharmacy: PharmacyRef,
        signature: String,
        secret: String,
    ) -> Result<(), Error> {
        lent(db, || claims::release(pharmacy, &signature, &secret))
    }

    fn set_status(
        db: Option<&Connection>,
        pharmacy: PharmacyRef,
        change: StatusChange,
    ) -> Result<(StatusUpdate, bool), Error> {
        lent(db, || status::set(pharmacy, change))
    }

    fn cancel(
        db: Option<&Connection>,
        medic: i64,
        change: StateChange,
    ) -> Result<Prescription, Error> {
        lent(db, || lifecycle::cancel(medic, change))
    }

    fn list_events(
        db: Option<&Connection>,
        caller: Principal,
        signature: String,
    ) -> Result<Vec<LifecycleEvent>, Error> {
        lent(db, || lifecycle::list(&caller, &signature))
    }

    fn published_keys() -> Result<Vec<PublishedKey>, Error> {
        seal::published(&common::db::Db::open()?)
    }

    fn verify(signature: String, client: String) -> Result<Verification, Error> {
        verify::verify(&signature, &client)
    }

    fn get_constancia(
        db: Option<&Connection>,
        caller: Principal,
        signature: String,
    ) -> Result<Vec<u8>, Error> {
        lent(db, || read::constancia(&caller, &signature))
    }

    fn get_receipt_constancia(
        db: Option<&Connection>,
        pharmacy: Option<i64>,
        digest: String,
    ) -> Result<Vec<u8>, Error> {
        lent(db, || constancia::of_receipt(pharmacy, &digest))
    }

    fn get_draft(
        db: Option<&Connection>,
        medic: i64,
        signature: String,
    ) -> Result<EfirmaDraft, Error> {
        lent(db, || signing::get_draft(medic, &signature))
    }

    fn activate(
        db: Option<&Connection>,
        medic: i64,
        activation: EfirmaActivation,
    ) -> Result<Prescription, Error> {
        lent(db, || signing::activate(medic, activation))
    }

    fn get_efirma_cms(
        db: Option<&Connection>,
        caller: Principal,
        signature: String,
    ) -> Result<Vec<u8>, Error> {
        lent(db, || signing::cms(&caller, &signature))
    }

    fn get_fhir_source(db: Option<&Connection>, signature: String) -> Result<FhirSource, Error> {
        lent(db, || fhir::source(&signature))
    }

    fn get_document(
        db: Option<&Connection>,
        caller: Principal,
        signature: String,
    ) -> Result<String, Error> {
        lent(db, || read::document(&caller, &signature))
    }

    fn antibiotic_register(
        db: Option<&Connection>,
        pharmacy: i64,
        from: String,
        to: String,
        page: Option<PageRequest>,
    ) -> Result<RegisterPage, Error> {
        lent(db, || register::read(pharmacy, &from, &to, page))
    }

    fn load_drugs(drugs: Vec<Drug>) -> Result<DrugLoad, Error> {
        drugs::load(drugs)
    }

    fn search_drugs(search: Option<String>, page: PageRequest) -> Result<DrugPage, Error> {
        drugs::search(search.as_deref(), page)
    }

    fn get_landing(
        db: Option<&Connection>,
        caller: Option<Principal>,
        signature: String,
    ) -> Result<LandingRx, Error> {
        lent(db, || landing::view(caller, &signature))
    }

    fn get_landing_pdf(db: Option<&Connection>, signature: String) -> Result<Vec<u8>, Error> {
        lent(db, || landing::pdf(&signature))
    }

    fn drain_reads() -> Result<u32, Error> {
        reads::drain(&common::db::Db::open()?)
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Prescriptions with_types_in bindings);
