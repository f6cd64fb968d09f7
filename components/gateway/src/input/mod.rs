//! Reading what a request carries beyond `Fields`, shared by the route modules (so no route module
//! imports another). Each module here imports only `http`, `bindings`, `common` and its siblings.
//!
//! - `body`: the `search` parameter, lists of objects in a body, shared closed sets
//! - `efirma`: a create's `"efirma": true` (the medic's registered certificate)
//! - `gs1`: a scanned GS1 code (the GTIN, lot, expiry and serial of what was handed over)
//! - `ids`: Mexican identity numbers (RFC, CURP) with their check digits, for medics
//! - `image`: an uploaded hospital image (a JPEG under 2 MB)
//! - `handed_over`: what a burn's item says was handed over (GTIN, lot, expiry, serial, GS1)
//! - `idempotency`: `Idempotency-Key` on the creating calls (a retry answers the first response)

pub mod body;
pub mod efirma;
pub mod gs1;
pub mod handed_over;
pub mod idempotency;
pub mod ids;
pub mod image;
