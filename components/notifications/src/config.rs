//! The Spin variables the notifications component reads. It is a dependency, so they are the trigger
//! component's (the gateway's, or the outbox worker's): both declare the same ones in `spin.toml`.

use std::time::Duration;

/// The `user-agent` of every outbound request.
pub const USER_AGENT: &str = "Receta-Notifications/0.1";

/// Delivery settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// `email_relay_url`; `None` when empty: email rows then stay pending until one is configured.
    pub relay_url: Option<String>,
    /// `email_relay_token`: sent as `Authorization: Bearer <token>` when set.
    pub relay_token: Option<String>,
    /// `email_from`.
    pub from: String,
    /// `base_url`: the public origin of `cta_link`.
    pub base_url: String,
    /// `outbox_retry_scale`: multiplies the retry schedule (1 in production).
    pub retry_scale: f64,
    /// `delivery_timeout_ms`: the most one delivery attempt may take, answer included
    /// (`outbound::timeout`).
    pub timeout: Duration,
}

/// A variable, trimmed; `None` when unset or empty.
pub fn var(name: &str) -> Option<String> {
    spin_sdk::variables::get(name)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// Used when `email_from` is not set.
pub const DEFAULT_FROM: &str = "Receta <no-reply@receta.invalid>";
/// Used when `base_url` is not set.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:3000";

impl Config {
    /// Reads the variables; a missing or malformed one takes its default.
    pub fn load() -> Config {
        Config {
            relay_url: var("email_relay_url"),
            relay_token: var("email_relay_token"),
            from: var("email_from").unwrap_or_else(|| DEFAULT_FROM.into()),
            base_url: var("base_url")
                .map(|u| u.trim_end_matches('/').to_string())
                .unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            retry_scale: common::queue::schedule::scale(var("outbox_retry_scale").as_deref()),
            timeout: outbound::timeout(var("delivery_timeout_ms").as_deref()),
        }
    }

    /// How long a worker holds the rows it leased (`common::queue::lease_length`).
    pub fn lease(&self) -> Duration {
        common::queue::lease_length(self.timeout)
    }

    /// The patient landing page of a prescription (`cta_link`).
    pub fn cta_link(&self, signature: &str) -> String {
        format!("{}/rx/{signature}", self.base_url)
    }
}
