//! The source of a prescription's FHIR views (docs/fhir.md): its signed document and its
//! dispenses, for a caller the gateway has already let read it. The bundle itself is the
//! gateway's (`views/fhir_json.rs`).

use common::db::{Db, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{FhirSource, LifecycleKind};
use crate::document::is_signature;

const SOURCE: &str = "SELECT p.id, d.canonical FROM prescriptions p \
    JOIN prescription_documents d ON d.prescription_id = p.id WHERE p.signature = ?1";

/// `prescriptions.get-fhir-source`.
pub fn source(signature: &str) -> Result<FhirSource, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let (id, document) = db
        .query_opt(SOURCE, &[text(signature)], |r| {
            Ok((r.i64("id")?, r.string("canonical")?))
        })?
        .ok_or_else(Error::not_found)?;
    let dispenses = crate::lifecycle::events_of(&db, id)?
        .into_iter()
        .filter(|e| e.kind == LifecycleKind::Dispense)
        .collect();
    Ok(FhirSource {
        document,
        dispenses,
    })
}
