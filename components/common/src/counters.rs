//! Per-minute counters: a rate limit keeps `<prefix><minute>/<client>`, and the jobs forget the
//! minutes that no longer count. A counter is not a record: on Spin's SQLite it lives in Spin's
//! key-value store (`wasi:keyvalue`, the `default` store, listed in `key_value_stores` of the
//! components that use it in `spin.toml`; `increment` keeps a count as 8 bytes, little-endian, on
//! Spin and on this project's host alike), so counting a call commits nothing to the database every
//! other request reads (docs/verification.md, "Rate limit"). With the database over HTTP
//! (`database_url`, issue 87) it lives in the database's `rate_counters` (migration 0042): there
//! the key-value store is the scarcer resource (50 writes a second for a whole app on Akamai
//! Functions), and a call's count and read are one request.

use anyhow::{Result, anyhow};
use spin_sdk::sqlite3::{QueryResult, Value};
use spin_sdk::wit::wasi::keyvalue::{atomics, store};

use crate::db::{Db, int, text};

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

/// `?1` key, `?2` its minute, `?3` delta: the counter's new count.
const ADD: &str = "INSERT INTO rate_counters (key, minute, count) VALUES (?1, ?2, ?3) \
    ON CONFLICT (key) DO UPDATE SET count = count + excluded.count RETURNING count";
/// `?1` key: its count, if any.
const GET: &str = "SELECT count FROM rate_counters WHERE key = ?1";
/// `?1` prefix, `?2` minute: forgets the prefix's counters of the minutes before it, a row each.
const FORGET: &str = "DELETE FROM rate_counters \
    WHERE minute < ?2 AND substr(key, 1, length(?1)) = ?1 RETURNING 1 AS gone";

/// Where the counters are.
pub enum Counters {
    /// Spin's key-value store.
    Store(store::Bucket),
    /// The database over HTTP.
    Database(Db),
}

impl Counters {
    pub fn open() -> Result<Self> {
        if crate::db::over_http()? {
            return Ok(Counters::Database(Db::open()?));
        }
        crate::kv::open().map(Counters::Store)
    }

    /// Adds `delta` to the counter under `key`; its new count.
    pub fn add(&self, key: &str, delta: i64) -> Result<i64> {
        match self {
            Counters::Store(bucket) => atomics::increment(bucket, key, delta)
                .map_err(|e| anyhow!("counting under {key:?}: {e:?}")),
            Counters::Database(db) => {
                let minute = minute_in(key).unwrap_or_default();
                db.scalar_i64(ADD, &[text(key), int(minute), int(delta)])
            }
        }
    }

    /// Adds one to the counter under `key` and reads the one under `other` (0 when there is
    /// none), then runs `then` on the database: both counts and `then`'s result. With the database
    /// over HTTP, all of it is one request.
    pub fn add_one_and_get(
        &self,
        key: &str,
        other: &str,
        then: Option<(&str, &[Value])>,
    ) -> Result<(i64, i64, Option<QueryResult>)> {
        let Counters::Database(db) = self else {
            let counts = (self.add(key, 1)?, self.get(other)?);
            let then = match then {
                Some((sql, params)) => Some(Db::open()?.execute(sql, params)?),
                None => None,
            };
            return Ok((counts.0, counts.1, then));
        };
        let minute = minute_in(key).unwrap_or_default();
        let (added, read) = ([text(key), int(minute), int(1)], [text(other)]);
        let mut steps: Vec<(&str, &[Value])> = vec![(ADD, &added), (GET, &read)];
        steps.extend(then);
        let mut answers = db.together(&steps)?;
        let then = (answers.len() > 2).then(|| answers.remove(2));
        let count = |i: usize| {
            crate::db::rows(&answers[i], |r| r.i64("count"))
                .map(|counts| counts.first().copied().unwrap_or(0))
        };
        Ok((count(0)?, count(1)?, then))
    }

    /// The count under `key` (0 when there is none).
    pub fn get(&self, key: &str) -> Result<i64> {
        match self {
            Counters::Store(bucket) => {
                let value = bucket
                    .get(key)
                    .map_err(|e| anyhow!("reading {key:?}: {e:?}"))?;
                Ok(value.as_deref().map_or(0, count))
            }
            Counters::Database(db) => Ok(db
                .query_opt(GET, &[text(key)], |r| r.i64("count"))?
                .unwrap_or(0)),
        }
    }

    /// Deletes `prefix`'s counters of the minutes before `minute`; how many.
    pub fn forget_before(&self, prefix: &str, minute: i64) -> Result<usize> {
        let bucket = match self {
            Counters::Store(bucket) => bucket,
            Counters::Database(db) => {
                let forgotten = db.query(FORGET, &[text(prefix), int(minute)], |_| Ok(()))?;
                return Ok(forgotten.len());
            }
        };
        let keys = bucket
            .list_keys(None)
            .map_err(|e| anyhow!("listing the key-value store: {e:?}"))?
            .keys;
        let old: Vec<&String> = keys
            .iter()
            .filter(|k| minute_of(prefix, k).is_some_and(|m| m < minute))
            .collect();
        for key in &old {
            bucket
                .delete(key)
                .map_err(|e| anyhow!("deleting {key:?}: {e:?}"))?;
        }
        Ok(old.len())
    }
}

/// The minute of a counter's key, whatever its prefix (`<prefix><minute>/<client>`, the prefix
/// ending in `/`, the client without one).
fn minute_in(key: &str) -> Option<i64> {
    let (head, _) = key.rsplit_once('/')?;
    head.rsplit('/').next()?.parse().ok()
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
        assert_eq!(minute_in(&k), Some(29_000_000));
        assert_eq!(minute_in(&key(VERIFY, 7, "2001:db8::1")), Some(7));
    }

    #[test]
    fn counts_are_8_bytes_little_endian() {
        assert_eq!(count(&5i64.to_le_bytes()), 5);
        assert_eq!(count(b"short"), 0);
    }
}
