//! Bindings of the world `pharmacies-component` (`wit/`): what this component exports and imports.

wit_bindgen::generate!({
    world: "pharmacies-component",
    path: "../../wit",
    with: { "receta:erx/types@0.1.0": common::types },
});
