//! Bindings of the world `pharmacies-component` (`wit/`): what this component exports and imports.

wit_bindgen::generate!({
    world: "pharmacies-component",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
        "spin:sqlite/sqlite@3.0.0": spin_sdk::sqlite3,
    },
});
