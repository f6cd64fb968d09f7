//! Per-minute counters in Spin's key-value store (`wasi:keyvalue`, the `default` store, listed in
//! `key_value_stores` of the components that use it in `spin.toml`): a rate limit keeps
//! `<prefix><minute>/<client>` (`increment` keeps a count as 8 bytes, little-endian, on Spin and on
//! this project's host alike), and the outbox worker forgets the minutes that no longer count. A
//! counter is not a record: its store is not the database, so counting a call commits nothing to
//! the database every other request reads (docs/verification.md, "Rate limit").

use anyhow::{Result, anyhow};
use spin_sdk::wit::wasi::keyvalue::{atomics, store};

/// The public verify's (and the receipt check's) calls per client address.
pub const VERIFY: &str = "verify/";

/// This minute, in minutes since the Unix epoch.
pub fn minute_now() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    (secs / 60) as i64
}

/// The key of `client`'s counter in `minute` (minutes since the Unix epoch).
pub fn key(prefix: &str, minute: i64, client: &str) -> String {
    format!("{prefix}{minute}/{client}")
}

/// The minute of a counter's key, if `key` is one of `prefix`'s.
fn minute_of(prefix: &str, key: &str) -> Option<i64> {
    key.strip_prefix(prefix)?.split_once('/')?.0.parse().ok()
}

/// A count as `increment` keeps it (anything else counts 0).
fn count(bytes: &[u8]) -> i64 {
    <[u8; 8]>::try_from(bytes).map_or(0, i64::from_le_bytes)
}

/// The open store.
pub struct Counters(store::Bucket);

impl Counters {
    pub fn open() -> Result<Self> {
        crate::kv::open().map(Counters)
    }

    /// Adds `delta` to the counter under `key`; its new count.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64> {
        atomics::increment(&self.0, key, delta)
            .map_err(|e| anyhow!("counting under {key:?}: {e:?}"))
    }

    /// The count under `key` (0 when there is none).
    pub fn get(&self, key: &str) -> Result<i64> {
        let value = self
            .0
            .get(key)
            .map_err(|e| anyhow!("reading {key:?}: {e:?}"))?;
        Ok(value.as_deref().map_or(0, count))
    }

    /// Deletes `prefix`'s counters of the minutes before `minute`; how many.
    pub fn forget_before(&self, prefix: &str, minute: i64) -> Result<usize> {
        let keys = self
            .0
            .list_keys(None)
            .map_err(|e| anyhow!("listing the key-value store: {e:?}"))?
            .keys;
        let old: Vec<&String> = keys
            .iter()
            .filter(|k| minute_of(prefix, k).is_some_and(|m| m < minute))
            .collect();
        for key in &old {
            self.0
                .delete(key)
                .map_err(|e| anyhow!("deleting {key:?}: {e:?}"))?;
        }
        Ok(old.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_their_minute() {
        let k = key(VERIFY, 29_000_000, "203.0.113.9");
        assert_eq!(k, "verify/29000000/203.0.113.9");
        assert_eq!(minute_of(VERIFY, &k), Some(29_000_000));
        assert_eq!(minute_of(VERIFY, "other/1/x"), None);
        assert_eq!(minute_of(VERIFY, "verify/x/y"), None);
        // An IPv6 client keeps its colons; the minute is before the first slash.
        assert_eq!(minute_of(VERIFY, &key(VERIFY, 7, "2001:db8::1")), Some(7));
    }

    #[test]
    fn counts_are_8_bytes_little_endian() {
        assert_eq!(count(&5i64.to_le_bytes()), 5);
        assert_eq!(count(b"short"), 0);
    }
}
