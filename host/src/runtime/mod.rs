//! Running components: the Wasmtime engine and compiled-code cache (`engine`), a component's
//! dependencies linked lazily or composed (`linking`, `compose`), and the per-store data every
//! capability's state lives in (`store`).

pub mod compose;
pub mod engine;
pub mod forward;
pub mod linking;
pub mod store;
