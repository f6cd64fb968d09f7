//! Bindings of the world `outbox-worker` (`wit/`): the cron export; the jobs' imports are
//! `components/jobs`'s.

wit_bindgen::generate!({
    world: "outbox-worker",
    path: "../../wit",
    generate_all,
    with: {
        "receta:common/types@0.1.0": common::types,
        "receta:common/codes@0.1.0": common::codes,
        "receta:notifications/notifications@0.1.0": jobs::bindings::notifications,
        "receta:constancias/constancias@0.1.0": jobs::bindings::constancias,
        "receta:pharmacies/pharmacies@0.1.0": jobs::bindings::pharmacies,
        "receta:prescriptions/prescriptions@0.1.0": jobs::bindings::prescriptions,
        "spin:sqlite/sqlite@3.0.0": spin_sdk::sqlite3,
        "fermyon:spin-cron/cron-types@2.0.0": generate,
    },
});
