//! Outbound HTTP for the components that deliver: the notifications component (emails through the
//! relay, webhooks) and the constancias component (the timestamp authority).
//!
//! - `target`: an absolute `http`/`https` URL split the way `wasi:http` wants it (pure)
//! - `send`: POSTs with timeouts, many at once on spin-sdk's executor

pub mod send;
pub mod target;

use std::time::Duration;

/// Used when `delivery_timeout_ms` is not set or not a number.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// `delivery_timeout_ms` is kept within these bounds: a run must end well inside the host's
/// per-request time limit (30 s by default).
pub const TIMEOUT_RANGE: (u64, u64) = (100, 20_000);

/// The most one attempt may take, answer included: `delivery_timeout_ms` (the variable's text),
/// within [`TIMEOUT_RANGE`], or [`DEFAULT_TIMEOUT`].
pub fn timeout(delivery_timeout_ms: Option<&str>) -> Duration {
    delivery_timeout_ms
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map(|ms| Duration::from_millis(ms.clamp(TIMEOUT_RANGE.0, TIMEOUT_RANGE.1)))
        .unwrap_or(DEFAULT_TIMEOUT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_stays_within_its_bounds() {
        assert_eq!(timeout(None), DEFAULT_TIMEOUT);
        assert_eq!(timeout(Some("x")), DEFAULT_TIMEOUT);
        assert_eq!(timeout(Some("5")), Duration::from_millis(100));
        assert_eq!(timeout(Some("1500")), Duration::from_millis(1500));
        assert_eq!(timeout(Some("99999")), Duration::from_millis(20_000));
    }
}
