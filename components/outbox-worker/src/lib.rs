//! The outbox worker: the `[[trigger.cron]]` component (Spin's cron trigger plugin,
//! `fermyon:spin-cron@2.0.0`), firing every second. Each firing checks the database's schema
//! (`schema::ensure`, once per instance) and runs the background jobs (`components/jobs`):
//! deliveries, constancias, the queued call log and reads, old counters. Platforms without the
//! plugin run the same jobs through the gateway's `POST /api/v2/jobs/run/`.
//!
//! It owns its permissions (database, key-value store, outbound hosts, variables) in `spin.toml`;
//! the notifications, pharmacies and prescriptions components, its dependencies, inherit them.

use std::time::Instant;

mod bindings;

use bindings::fermyon::spin_cron::cron_types::{Error, Metadata};

// Constructed only by the component export (wasm32).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Worker;

impl bindings::Guest for Worker {
    fn handle_cron_event(_metadata: Metadata) -> Result<(), Error> {
        let start = Instant::now();
        schema::ensure().map_err(|e| Error::Other(e.to_string()))?;
        let failed = jobs::failed(&jobs::run(start, jobs::BUDGET));
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::Other(format!("jobs failed: {}", failed.join(", "))))
        }
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Worker with_types_in bindings);
