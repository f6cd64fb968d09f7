//! The Spin variables the constancias component reads. It is a dependency, so they are the trigger
//! component's (the gateway's, or the outbox worker's): both declare the same ones in `spin.toml`.

use std::time::Duration;

/// The `user-agent` of every request to the authority.
pub const USER_AGENT: &str = "Receta-Constancias/0.1";

/// Stamping settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The timestamp authority; `None` while `timestamp_url` is empty (no constancias).
    pub stamping: Option<Stamping>,
    /// `outbox_retry_scale`: multiplies the retry schedule (1 in production).
    pub retry_scale: f64,
    /// `delivery_timeout_ms`: the most one request may take, answer included.
    pub timeout: Duration,
}

/// Where NOM-151 constancias come from (docs/verification.md, "Constancias NOM-151").
#[derive(Debug, Clone)]
pub struct Stamping {
    /// `timestamp_url`: RFC 3161 over HTTP.
    pub url: String,
    /// `timestamp_token`: sent as `Authorization: Bearer <token>` when set.
    pub token: Option<String>,
    /// `timestamp_ca`: PEM of the authorities the TSA's certificate must chain to, when set.
    pub ca: Option<String>,
}

impl Config {
    /// Reads the variables; a missing or malformed one takes its default.
    pub fn load() -> Config {
        let var = |name: &str| {
            spin_sdk::variables::get(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        Config {
            stamping: var("timestamp_url").map(|url| Stamping {
                url,
                token: var("timestamp_token"),
                ca: var("timestamp_ca"),
            }),
            retry_scale: common::queue::schedule::scale(var("outbox_retry_scale").as_deref()),
            timeout: outbound::timeout(var("delivery_timeout_ms").as_deref()),
        }
    }

    /// How long a worker holds the digests it leased (`common::queue::lease_length`).
    pub fn lease(&self) -> Duration {
        common::queue::lease_length(self.timeout)
    }
}
