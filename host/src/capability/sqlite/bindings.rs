//! Bindings of `spin:sqlite/sqlite@3.0.0` (world `receta:host/sqlite` in `host/wit`). The
//! `connection` resource is the generated placeholder type: a handle's number is the key of the
//! store's connection in `SqliteState` (`mod.rs`), as in Spin's own host.

wasmtime::component::bindgen!({
    path: "wit",
    world: "receta:host/sqlite",
    imports: { default: async | trappable },
});

pub use spin::sqlite::sqlite::{self, Error, QueryResult, RowResult, Value};
