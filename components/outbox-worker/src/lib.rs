//! The outbox worker: the `[[trigger.cron]]` component (Spin's cron trigger plugin,
//! `fermyon:spin-cron@2.0.0`). Each firing delivers due outbox rows through the notifications
//! component, batch after batch, until none is left or its time budget is spent; the next firing
//! picks up the rest. A create delivers its own rows at once; this is what retries failures and
//! catches up after a restart.
//!
//! Each firing also stamps one batch of NOM-151 constancias (`notifications.stamp-due`), forgets
//! the rate-limit counters of past minutes (`common::counters`) and writes
//! the pharmacy lookups' queued call-log rows and the medics' queued reads into the logs
//! (`pharmacies.drain-calls`, `prescriptions.drain-reads`), so the tables catch up within seconds
//! even when nobody reads them.
//!
//! It owns its permissions (database, key-value store, outbound hosts, variables) in `spin.toml`;
//! the notifications, pharmacies and prescriptions components, its dependencies, inherit them.

use std::time::{Duration, Instant};

mod bindings;

use bindings::fermyon::spin_cron::cron_types::{Error, Metadata};
use bindings::receta::notifications::notifications;
use bindings::receta::pharmacies::pharmacies;
use bindings::receta::prescriptions::prescriptions;

/// Rows per `deliver-due` call.
pub const BATCH: u32 = 50;
/// Constancias stamped per firing (one `stamp-due` call a second): each costs the host ~2.4 ms of
/// CPU (docs/bench.md), so this bounds what stamping takes from the API to ~0.06 of a core; a
/// backlog drains at 25 a second (2.2 million a day).
pub const STAMP_BATCH: u32 = 25;
/// No new batch starts after this long, so a firing ends well inside the host's time limit (a batch
/// takes at most about `delivery_timeout_ms`).
pub const BUDGET: Duration = Duration::from_secs(10);

// Constructed only by the component export (wasm32).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct Worker;

impl bindings::Guest for Worker {
    fn handle_cron_event(_metadata: Metadata) -> Result<(), Error> {
        let start = Instant::now();
        forget_old_counters();
        if let Err(e) = pharmacies::drain_calls() {
            eprintln!("receta: outbox worker: writing the queued pharmacy calls: {e:?}");
        }
        if let Err(e) = prescriptions::drain_reads() {
            eprintln!("receta: outbox worker: writing the queued reads: {e:?}");
        }
        // One batch of constancias a firing (`STAMP_BATCH`): stamping never takes more than that
        // from the API (docs/verification.md, "Constancias NOM-151").
        if let Err(e) = notifications::stamp_due(STAMP_BATCH, None) {
            eprintln!("receta: outbox worker: stamping constancias: {e:?}");
        }
        loop {
            let run = notifications::deliver_due(BATCH, None)
                .map_err(|e| Error::Other(format!("delivering the outbox: {e:?}")))?;
            if !another_batch(run.attempted, start.elapsed()) {
                return Ok(());
            }
        }
    }
}

/// Deletes the public verify's rate-limit counters of the minutes before the previous one (they no
/// longer count: `common::counters`). A failure is logged, not fatal: the deliveries go on.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn forget_old_counters() {
    let minute = common::counters::minute_now();
    let forgotten = common::counters::Counters::open()
        .and_then(|c| c.forget_before(common::counters::VERIFY, minute - 1));
    if let Err(e) = forgotten {
        eprintln!("receta: outbox worker: forgetting old rate-limit counters: {e:#}");
    }
}

/// Whether to lease again: the last batch was full (more may be due) and the budget is not spent.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn another_batch(attempted: u32, elapsed: Duration) -> bool {
    attempted >= BATCH && elapsed < BUDGET
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_until_a_short_one_or_the_budget() {
        assert!(another_batch(BATCH, Duration::ZERO));
        assert!(!another_batch(BATCH - 1, Duration::ZERO));
        assert!(!another_batch(0, Duration::ZERO));
        assert!(!another_batch(BATCH, BUDGET));
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Worker with_types_in bindings);
