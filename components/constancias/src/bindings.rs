//! Bindings of the world `constancias-component` (`wit/`): what this component exports.

wit_bindgen::generate!({
    world: "constancias-component",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
    },
});
