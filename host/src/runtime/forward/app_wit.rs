//! The app's own interfaces (`receta:auth/auth`, `receta:catalog/…`, …: the imports of `wit/`'s
//! `gateway` world), so the gateway's calls into its dependencies are forwarded typed
//! (`super::calls::typed`). Both halves come from `wit/` at build time, with no hand-kept list:
//! `bindgen!` generates the Rust types, `build.rs` the table naming each function's signature in
//! them. A change to `wit/` rebuilds the host with no edit; any other app's interfaces are
//! forwarded dynamically (the start-up log counts both ways).

use super::calls::{Forwarder, typed};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "receta:erx/gateway",
    // As `capability::sqlite`'s bindings, whose `connection` these reuse.
    imports: { default: async | trappable },
    // The connection the gateway lends is the host's own resource (`capability::sqlite`).
    with: { "spin:sqlite/sqlite": crate::capability::sqlite::bindings::sqlite },
});

include!(concat!(env!("OUT_DIR"), "/forwarders.rs"));

#[cfg(test)]
mod tests {
    use super::forwarder;

    /// Every function of every interface the gateway imports has its typed forwarder, so the app
    /// never falls back to the dynamic way (`super::calls::dynamic`).
    #[test]
    fn every_gateway_import_is_typed() {
        let wit = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
        let mut resolve = wit_parser::Resolve::default();
        let (package, _) = resolve.push_dir(&wit).expect("wit/ parses");
        let world = resolve
            .select_world(&[package], Some("gateway"))
            .expect("world gateway");
        let mut checked = 0;
        for (key, item) in &resolve.worlds[world].imports {
            let wit_parser::WorldItem::Interface { id, .. } = item else {
                continue;
            };
            let name = resolve.name_world_key(key);
            for func in resolve.interfaces[*id].functions.keys() {
                assert!(
                    forwarder(&name, func).is_some(),
                    "{name}#{func} has no typed forwarder (build.rs could not name its types)"
                );
                checked += 1;
            }
        }
        assert!(checked >= 72, "only {checked} functions found in wit/");
    }
}
