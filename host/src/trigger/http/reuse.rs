//! Instance reuse for WASIp3 HTTP components (`wasi:http/handler@0.3.0-rc-2026-03-15`), with
//! `spin up`'s flags and defaults: an instance serves up to `--max-instance-reuse-count` requests
//! (default 128), up to `--max-instance-concurrent-reuse-count` at once (default 16), and is
//! dropped after `--idle-instance-timeout` without one (default 1 s). Each flag also takes a range
//! `a..b`, sampled anew for every instance, as Spin does. WASIp2 components are never reused: each
//! of their requests gets a fresh instance (Spin 4.0.2's "no effect for WASIp2").
//!
//! The scheduling itself is Wasmtime's `ProxyHandler` (the one Spin 4.0.2 and `wasmtime serve`
//! use); this module gives it the stores, limits and timeouts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use wasmtime::Engine;
use wasmtime_wasi_http::handler::{HandlerState, StoreBundle};

use crate::runtime::store::{ComponentContext, HostState, new_reused_store};

/// Spin 4.0.2's default `--max-instance-reuse-count` for WASIp3 components.
pub const DEFAULT_MAX_REUSE: usize = 128;
/// Spin 4.0.2's default `--max-instance-concurrent-reuse-count` for WASIp3 components.
pub const DEFAULT_MAX_CONCURRENT: usize = 16;
/// Spin 4.0.2's default `--idle-instance-timeout`.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(1);

/// A flag's value: one value, or a half-open range `a..b` sampled per instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range<T> {
    /// Always this value.
    Value(T),
    /// A value in `a..b` (`a..a` is `a`).
    Bounds(T, T),
}

impl Range<usize> {
    /// `N` or `a..b`, each at least 1.
    pub fn parse_count(flag: &str, text: &str) -> Result<Self> {
        let one = |s: &str| -> Result<usize> {
            let n: usize = s
                .trim()
                .parse()
                .with_context(|| format!("{flag} {text:?} is not a number or a range a..b"))?;
            if n == 0 {
                bail!("{flag} must be at least 1");
            }
            Ok(n)
        };
        match text.split_once("..") {
            Some((a, b)) => Self::bounds(flag, one(a)?, one(b)?),
            None => Ok(Range::Value(one(text)?)),
        }
    }

    fn sample(self) -> usize {
        match self {
            Range::Value(v) => v,
            Range::Bounds(a, b) if b > a => a + (random() % (b - a) as u64) as usize,
            Range::Bounds(a, _) => a,
        }
    }
}

impl Range<Duration> {
    /// A duration as Spin writes it (`500ms`, `1s`, `2`: seconds; `us`, `μs`, `ns`), or a range.
    pub fn parse_duration(flag: &str, text: &str) -> Result<Self> {
        let one = |s: &str| parse_duration(s).with_context(|| format!("{flag} {text:?}"));
        match text.split_once("..") {
            Some((a, b)) => {
                // A bare number is seconds: `1..8s` is 1 s to 8 s.
                Self::bounds(flag, one(a)?, one(b)?)
            }
            None => Ok(Range::Value(one(text)?)),
        }
    }

    fn sample(self) -> Duration {
        match self {
            Range::Value(v) => v,
            Range::Bounds(a, b) if b > a => {
                let span = (b - a).as_nanos().min(u64::MAX as u128) as u64;
                a + Duration::from_nanos(random() % span)
            }
            Range::Bounds(a, _) => a,
        }
    }
}

impl<T: PartialOrd + Copy> Range<T> {
    fn bounds(flag: &str, a: T, b: T) -> Result<Self> {
        if b < a {
            bail!("{flag}: the range's end is below its start");
        }
        Ok(Range::Bounds(a, b))
    }
}

/// One duration: a number with no suffix or `s` is seconds; `ms`, `us`/`μs`, `ns`.
fn parse_duration(text: &str) -> Result<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .with_context(|| format!("{text:?} is not a duration like 500ms or 1s"))?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1e3,
        "us" | "μs" => number / 1e6,
        "ns" => number / 1e9,
        other => bail!("unknown unit {other:?} in {text:?} (s, ms, us, ns)"),
    };
    Duration::try_from_secs_f64(seconds).with_context(|| format!("{text:?} is out of range"))
}

/// A cheap, non-cryptographic sample (which instance keeps how many requests is not a secret).
fn random() -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
    // splitmix64's finaliser.
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The reuse flags of `receta up` (as `spin up`'s).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReuseConfig {
    /// `--max-instance-reuse-count`
    pub max_reuse: Range<usize>,
    /// `--max-instance-concurrent-reuse-count`
    pub max_concurrent: Range<usize>,
    /// `--idle-instance-timeout`
    pub idle_timeout: Range<Duration>,
    /// `--request-timeout`; `None`: the host's time limit (`RECETA_REQUEST_TIMEOUT_MS`).
    pub request_timeout: Option<Range<Duration>>,
}

impl Default for ReuseConfig {
    fn default() -> Self {
        Self {
            max_reuse: Range::Value(DEFAULT_MAX_REUSE),
            max_concurrent: Range::Value(DEFAULT_MAX_CONCURRENT),
            idle_timeout: Range::Value(DEFAULT_IDLE),
            request_timeout: None,
        }
    }
}

/// What Wasmtime's `ProxyHandler` asks of a WASIp3 component: its stores and its limits.
pub struct Reuse {
    /// The engine the component was compiled for.
    pub engine: Engine,
    /// What the component may do.
    pub context: Arc<ComponentContext>,
    /// The flags.
    pub config: ReuseConfig,
    /// The host's time limit of one request, when `--request-timeout` is not given.
    pub timeout: Duration,
}

impl HandlerState for Reuse {
    type StoreData = HostState;

    fn new_store(&self, _req_id: Option<u64>) -> wasmtime::Result<StoreBundle<HostState>> {
        Ok(StoreBundle {
            store: new_reused_store(&self.engine, self.context.clone()),
            write_profile: Box::new(|_| ()),
        })
    }

    fn request_timeout(&self) -> Duration {
        self.config
            .request_timeout
            .map_or(self.timeout, Range::<Duration>::sample)
    }

    fn idle_instance_timeout(&self) -> Duration {
        self.config.idle_timeout.sample()
    }

    fn max_instance_reuse_count(&self) -> usize {
        self.config.max_reuse.sample()
    }

    fn max_instance_concurrent_reuse_count(&self) -> usize {
        self.config.max_concurrent.sample()
    }

    fn handle_worker_error(&self, error: wasmtime::Error) {
        eprintln!(
            "receta: component {}: an instance stopped: {error:?}",
            self.context.id
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ranges() {
        let flag = "--max-instance-reuse-count";
        assert_eq!(Range::parse_count(flag, "128").unwrap(), Range::Value(128));
        assert_eq!(
            Range::parse_count(flag, "1..8").unwrap(),
            Range::Bounds(1, 8)
        );
        for bad in ["0", "x", "8..1", "1..x", ""] {
            assert!(Range::parse_count(flag, bad).is_err(), "{bad}");
        }
        for _ in 0..100 {
            let n = Range::Bounds(3, 6).sample();
            assert!((3..6).contains(&n), "{n}");
        }
        assert_eq!(Range::Bounds(4, 4).sample(), 4);
    }

    #[test]
    fn durations_as_spin_writes_them() {
        let flag = "--idle-instance-timeout";
        let d = |t| Range::parse_duration(flag, t).unwrap();
        assert_eq!(d("1s"), Range::Value(Duration::from_secs(1)));
        assert_eq!(d("2"), Range::Value(Duration::from_secs(2)));
        assert_eq!(d("500ms"), Range::Value(Duration::from_millis(500)));
        assert_eq!(d("250us"), Range::Value(Duration::from_micros(250)));
        assert_eq!(
            d("1..8s"),
            Range::Bounds(Duration::from_secs(1), Duration::from_secs(8))
        );
        for bad in ["", "1h", "x", "2s..1s"] {
            assert!(Range::parse_duration(flag, bad).is_err(), "{bad}");
        }
        let sampled = Range::Bounds(Duration::from_millis(10), Duration::from_millis(20)).sample();
        assert!(sampled >= Duration::from_millis(10) && sampled < Duration::from_millis(20));
    }
}
