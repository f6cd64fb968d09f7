//! Bindings of the world `prescriptions-component` (`wit/`): what this component exports and imports.

wit_bindgen::generate!({
    world: "prescriptions-component",
    path: "../../wit",
    with: {
        "receta:erx/types@0.1.0": common::types,
        "receta:erx/codes@0.1.0": common::codes,
    },
});
