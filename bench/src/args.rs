//! What every helper shares: its `--name value` flags, and the median and p99 of its samples.

use std::collections::HashMap;

use anyhow::{Context, Result};

/// `--name value` pairs.
pub struct Flags(HashMap<String, String>);

impl Flags {
    pub fn parse(args: &[String]) -> Result<Flags> {
        let mut map = HashMap::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let name = flag
                .strip_prefix("--")
                .with_context(|| format!("expected a --flag, got {flag:?}"))?;
            let value = it
                .next()
                .with_context(|| format!("--{name} needs a value"))?;
            map.insert(name.to_string(), value.clone());
        }
        Ok(Flags(map))
    }

    /// A required flag.
    pub fn str(&self, name: &str) -> Result<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .with_context(|| format!("--{name} is required"))
    }

    /// An optional flag.
    pub fn optional(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// A numeric flag with a default.
    pub fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T> {
        match self.0.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| anyhow::anyhow!("--{name}: not a number: {v:?}")),
        }
    }
}

/// The median and the 99th percentile of some samples (sorted in place).
pub fn median_p99<T: Ord + Copy>(samples: &mut [T]) -> (T, T) {
    samples.sort_unstable();
    let n = samples.len();
    (samples[n / 2], samples[(n * 99 / 100).min(n - 1)])
}
