//! The domain interfaces the gateway imports (composed in at load time; see `spin.toml`).
//! Records derive `Serialize`: their snake_case fields are the API's JSON field names.

wit_bindgen::generate!({
    world: "gateway",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
        "receta:common/codes@0.1.0": common::codes,
        "spin:sqlite/sqlite@3.0.0": spin_sdk::sqlite3,
    },
    additional_derives: [serde::Serialize],
});

pub use receta::auth::auth;
pub use receta::catalog::{campaigns, catalog};
pub use receta::notifications::notifications;
pub use receta::patients::patients;
pub use receta::pharmacies::pharmacies;
pub use receta::prescriptions::prescriptions;
