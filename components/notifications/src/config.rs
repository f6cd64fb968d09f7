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
    /// `delivery_timeout_ms`: the most one delivery attempt may take, answer included.
    pub timeout: Duration,
    /// The timestamp authority; `None` while `timestamp_url` is empty (no constancias).
    pub stamping: Option<Stamping>,
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

/// Used when `email_from` is not set.
pub const DEFAULT_FROM: &str = "Receta <no-reply@receta.invalid>";
/// Used when `base_url` is not set.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:3000";
/// Used when `delivery_timeout_ms` is not set or not a number.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// `delivery_timeout_ms` is kept within these bounds: a run must end well inside the host's
/// per-request time limit (30 s by default).
pub const TIMEOUT_RANGE: (u64, u64) = (100, 20_000);

impl Config {
    /// Reads the variables; a missing or malformed one takes its default.
    pub fn load() -> Config {
        let var = |name: &str| {
            spin_sdk::variables::get(name)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let retry_scale = var("outbox_retry_scale")
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|x| x.is_finite() && *x > 0.0)
            .unwrap_or(1.0);
        let timeout = var("delivery_timeout_ms")
            .and_then(|s| s.parse::<u64>().ok())
            .map(|ms| Duration::from_millis(ms.clamp(TIMEOUT_RANGE.0, TIMEOUT_RANGE.1)))
            .unwrap_or(DEFAULT_TIMEOUT);
        Config {
            relay_url: var("email_relay_url"),
            relay_token: var("email_relay_token"),
            from: var("email_from").unwrap_or_else(|| DEFAULT_FROM.into()),
            base_url: var("base_url")
                .map(|u| u.trim_end_matches('/').to_string())
                .unwrap_or_else(|| DEFAULT_BASE_URL.into()),
            retry_scale,
            timeout,
            stamping: var("timestamp_url").map(|url| Stamping {
                url,
                token: var("timestamp_token"),
                ca: var("timestamp_ca"),
            }),
        }
    }

    /// How long a worker holds the rows it leased: twice the longest attempt plus a margin, so a
    /// live worker never loses its lease, and a dead worker's rows come back soon after.
    pub fn lease(&self) -> Duration {
        self.timeout * 2 + Duration::from_secs(5)
    }

    /// The patient landing page of a prescription (`cta_link`).
    pub fn cta_link(&self, signature: &str) -> String {
        format!("{}/rx/{signature}", self.base_url)
    }
}
