//! What the host is told to run, parsed before anything starts: the application manifest
//! (`spin.toml`), its variables and templates, and the runtime config file. Nothing here depends
//! on the rest of the host.

pub mod ids;
pub mod manifest;
pub mod runtime;
pub mod template;
pub mod variables;
