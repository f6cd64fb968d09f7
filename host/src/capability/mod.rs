//! The Spin capabilities the host provides to components, one module each, every one owning its
//! configuration, its per-store state and its bindings (as Spin's `factor-*` crates do):
//!
//! | interface                                 | module      |
//! |-------------------------------------------|-------------|
//! | WASI 0.2 (`wasi:cli`, clocks, random, io)  | wasmtime-wasi, set up in `runtime::store` |
//! | `wasi:clocks/wall-clock` (tests may move it) | `clock` |
//! | `wasi:http/outgoing-handler`               | `outbound` (the `allowed_outbound_hosts` check) |
//! | `spin:sqlite/sqlite@3.0.0`                 | `sqlite` (local files or a libSQL server) |
//! | `wasi:keyvalue@0.2.0-draft2` (store, atomics, batch) | `keyvalue` (the `default` store, a file) |
//! | `fermyon:spin/variables@2.0.0`             | `variables` |

pub mod clock;
pub mod keyvalue;
pub mod outbound;
pub mod sqlite;
pub mod variables;

/// What a component may import, for the error shown when it imports something else.
pub const PROVIDED: &str = "WASI 0.2 cli/clocks/random/io/filesystem/sockets, wasi:http, \
                            spin:sqlite/sqlite@3.0.0, wasi:keyvalue@0.2.0-draft2 (store, atomics, \
                            batch) and fermyon:spin/variables@2.0.0";
