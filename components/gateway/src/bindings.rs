//! The domain interfaces the gateway imports (composed in at load time; see `spin.toml`).
//! Records derive `Serialize`: their snake_case fields are the API's JSON field names.

wit_bindgen::generate!({
    world: "gateway",
    path: "../../wit",
    with: {
        "receta:erx/types@0.1.0": common::types,
        "receta:erx/codes@0.1.0": common::codes,
    },
    additional_derives: [serde::Serialize],
});

pub use receta::erx::{
    auth, campaigns, catalog, notifications, patients, pharmacies, prescriptions,
};
