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
        // The jobs' interfaces, generated once by `components/jobs` (with the same derives).
        "receta:notifications/notifications@0.1.0": jobs::bindings::notifications,
        "receta:constancias/constancias@0.1.0": jobs::bindings::constancias,
        "receta:pharmacies/pharmacies@0.1.0": jobs::bindings::pharmacies,
        "receta:prescriptions/prescriptions@0.1.0": jobs::bindings::prescriptions,
    },
    additional_derives: [serde::Serialize],
});

pub use jobs::bindings::{notifications, pharmacies, prescriptions};
pub use receta::auth::auth;
pub use receta::catalog::{campaigns, catalog};
pub use receta::patients::patients;
