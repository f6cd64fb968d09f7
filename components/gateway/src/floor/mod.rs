//! The floor the route modules stand on: what more than one of them needs, so that no route module
//! imports another. Each module here imports only `http`, `bindings` and `common`.
//!
//! - `rx_json`: a prescription as the API writes it (the create, list, detail and pharmacy shapes)
//! - `campaign_json`: a pharmacy campaign as the patient landing shows it
//! - `body`: the `search` parameter, lists of objects in a body, shared closed sets
//! - `links`: which URLs the service accepts, and its media links
//! - `idempotency`: `Idempotency-Key` on the creating calls (a retry answers the first response)
//! - `fhir_json`: a prescription as a FHIR R4 `Bundle` (the medic's and the pharmacy's views)
//! - `handed_over`: what a burn's item says was handed over (GTIN, lot, expiry, serial, GS1)
//! - `register`: the antibiotic register's answer (a pharmacy's own, or any pharmacy's for the admin)

pub mod body;
pub mod campaign_json;
pub mod fhir_json;
pub mod handed_over;
pub mod idempotency;
pub mod links;
pub mod register;
pub mod rx_json;
