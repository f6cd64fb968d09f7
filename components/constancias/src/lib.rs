//! The constancias component: wires `receta:constancias/constancias` to its modules.
//!
//! - `stamp`: one run (lease due digests, ask the authority, check and store its replies)
//! - `config`: the variables
//!
//! The queue itself (lease, finish, retry or dead) is `common::queue`; outbound HTTP is `outbound`;
//! the RFC 3161 request and the reply's checks are `pkix::tsp`.

mod config;
mod stamp;

use common::types::{DeliveryRun, Error};

mod bindings;

use bindings::exports::receta::constancias::constancias::Guest;

struct Constancias;

impl Guest for Constancias {
    fn stamp_due(limit: u32) -> Result<DeliveryRun, Error> {
        stamp::run(&config::Config::load(), limit)
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Constancias with_types_in bindings);
