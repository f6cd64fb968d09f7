//! Bindings of the world `catalog-component` (`wit/`): what this component exports and imports.

wit_bindgen::generate!({
    world: "catalog-component",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
        "receta:common/codes@0.1.0": common::codes,
        "spin:sqlite/sqlite@3.0.0": spin_sdk::sqlite3,
    },
});
