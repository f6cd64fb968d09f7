//! Code the components share. Everything here is plain Rust with unit tests beside it, except `db`,
//! the thin wrapper over Spin's SQLite interface.

pub mod codes;
#[cfg(feature = "spin")]
pub mod counters;
pub mod curp;
#[cfg(feature = "spin")]
pub mod db;
pub mod error;
pub mod events;
pub mod fields;
pub mod folio;
pub mod gtin;
pub mod hex;
#[cfg(feature = "spin")]
pub mod holder;
pub mod html;
#[cfg(feature = "spin")]
pub mod kv;
pub mod page;
pub mod phone;
#[cfg(feature = "spin")]
pub mod queue;
pub mod text;
pub mod time;

mod bindings {
    // `Serialize` like the gateway's records, which hold shared types (`webhook-delivery` in the
    // prescriptions component's `issue-request`).
    wit_bindgen::generate!({
        world: "common",
        path: "../../wit",
        generate_all,
        additional_derives: [serde::Serialize],
    });
}

mod code_bindings {
    // No derives: `codes.rs` gives each code its API form by hand.
    wit_bindgen::generate!({
        world: "common-codes",
        path: "../../wit",
        generate_all,
    });
}

/// `receta:common/types`, generated once here; every component maps its bindings onto this module
/// (`with: { "receta:common/types@0.1.0": common::types }`), so the shared types are the same Rust types.
pub use bindings::receta::common::types;
