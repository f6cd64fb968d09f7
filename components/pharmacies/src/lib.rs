//! The pharmacies component: wires `receta:pharmacies/pharmacies` to its modules.
//!
//! - `register`: the pharmacies themselves (create, list, get, PATCH)
//! - `calls`: the log of every pharmacy call, and the unknown-signature rate limit it feeds
//! - `queue`: the lookups' call-log rows on their way to the log (Spin's key-value store)

mod calls;
mod queue;
mod register;

use common::db::lent;
use common::types::{Error, PageRequest};
use spin_sdk::sqlite3::{Connection, QueryResult, Value};

mod bindings;

use bindings::exports::receta::pharmacies::pharmacies::{
    Call, CallPage, Guest, NewPharmacy, Pharmacy, PharmacyKey, PharmacyPage, PharmacyPatch,
};

struct Pharmacies;

impl Guest for Pharmacies {
    fn create_pharmacy(input: NewPharmacy) -> Result<Pharmacy, Error> {
        register::create(input)
    }

    fn list_pharmacies(page: PageRequest) -> Result<PharmacyPage, Error> {
        register::list(page)
    }

    fn get_pharmacy(id: i64) -> Result<Pharmacy, Error> {
        register::get(id)
    }

    fn update_pharmacy(id: i64, patch: PharmacyPatch) -> Result<Pharmacy, Error> {
        register::update(id, patch)
    }

    fn admit(
        db: Option<&Connection>,
        pharmacy: PharmacyKey,
        limit: u32,
    ) -> Result<Pharmacy, Error> {
        lent(db, || calls::admit(&pharmacy, limit))
    }

    fn admit_read(pharmacy: PharmacyKey, limit: u32) -> (String, Vec<Value>) {
        calls::admit_read(&pharmacy, limit)
    }

    fn admit_of(read: QueryResult) -> Result<Pharmacy, Error> {
        calls::admit_of(&read)
    }

    fn record_call(call: Call, seen: bool) -> Result<(), Error> {
        calls::record(call, seen)
    }

    fn list_calls(pharmacy: i64, page: PageRequest) -> Result<CallPage, Error> {
        calls::list(pharmacy, page)
    }

    fn drain_calls() -> Result<u32, Error> {
        calls::drain()
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Pharmacies with_types_in bindings);
