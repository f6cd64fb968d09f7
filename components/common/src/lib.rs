//! Code the components share. Everything here is plain Rust with unit tests beside it, except `db`,
//! the thin wrapper over Spin's SQLite interface.

pub mod canonical;
pub mod db;
pub mod error;
pub mod fields;
pub mod gtin;
pub mod image;
pub mod multipart;
pub mod page;
pub mod time;

mod bindings {
    wit_bindgen::generate!({ world: "common", path: "../../wit" });
}

/// `receta:erx/types`, generated once here; every component maps its bindings onto this module
/// (`with: { "receta:erx/types@0.1.0": common::types }`), so the shared types are the same Rust types.
pub use bindings::receta::erx::types;
