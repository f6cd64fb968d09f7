//! The `receta` host as a library: what `receta up` (`main.rs`) runs, and what the component test
//! harness (`tests/harness`) instantiates one component on, in-process.
//!
//! Layers, each importing only those below it (`cargo xtask lint` checks there is no cycle):
//!
//! - `app`: loads an application and builds its triggers; `cli` beside it;
//! - `trigger`: `http` (the server and its router) and `cron` (scheduler and expressions), sharing
//!   one way to run a component;
//! - `runtime`: the Wasmtime engine and its cache, composition, the per-store data;
//! - `capability`: the Spin interfaces provided to components (`sqlite`, `keyvalue`, `variables`,
//!   `outbound`, and the wall `clock` tests may move);
//! - `config`: the manifest, the runtime config file, variables and templates.

pub mod app;
pub mod capability;
pub mod cli;
pub mod config;
pub mod runtime;
pub mod trigger;
