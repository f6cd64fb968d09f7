//! Host bindings generated from `host/wit` (the Spin interfaces copied from spin-sdk 5.2.0).

wasmtime::component::bindgen!({
    path: "wit",
    world: "host",
    imports: { default: async | trappable },
    with: {
        "spin:sqlite/sqlite.connection": crate::sqlite::Connection,
    },
});
