//! Bindings of the world `jobs` (`wit/worlds.wit`): the interfaces the jobs call. The gateway and
//! the outbox worker reuse these (their `with:`), so each interface is generated once.

wit_bindgen::generate!({
    world: "jobs",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
        "receta:common/codes@0.1.0": common::codes,
        "spin:sqlite/sqlite@3.0.0": spin_sdk::sqlite3,
    },
    additional_derives: [serde::Serialize],
});

pub use receta::constancias::constancias;
pub use receta::notifications::notifications;
pub use receta::pharmacies::pharmacies;
pub use receta::prescriptions::prescriptions;
