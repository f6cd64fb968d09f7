//! Bindings of the world `outbox-worker` (`wit/`): what this component exports and imports.

wit_bindgen::generate!({
    world: "outbox-worker",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
        "fermyon:spin-cron/cron-types@2.0.0": generate,
    },
});
