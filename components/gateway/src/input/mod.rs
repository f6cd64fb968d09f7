//! Reading what a request carries beyond `Fields`, shared by the route modules (so no route module
//! imports another). Each module here imports only `http`, `bindings`, `common` and its siblings.
//!
//! - `body`: the `search` parameter, lists of objects in a body, shared closed sets
//! - `efirma`: a create's `"efirma": true` (the medic's registered certificate)
//! - `handed_over`: what a burn's item says was handed over (GTIN, lot, expiry, serial, GS1)
//! - `idempotency`: `Idempotency-Key` on the creating calls (a retry answers the first response)

pub mod body;
pub mod efirma;
pub mod handed_over;
pub mod idempotency;
