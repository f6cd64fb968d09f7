//! Running components: the Wasmtime engine and compiled-code cache (`engine`), composing a
//! component with its dependencies (`compose`), and the per-store data every capability's state
//! lives in (`store`).

pub mod compose;
pub mod engine;
pub mod store;
