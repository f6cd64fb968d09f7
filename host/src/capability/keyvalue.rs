//! `wasi:keyvalue@0.2.0-draft2` (store, atomics, batch), with Spin's semantics: a component opens
//! the stores its manifest lists in `key_value_stores` (a dependency, those of the component whose
//! configuration it inherits); a label it does not list is `access-denied`, one it lists that is
//! not defined `no-such-store`. `default` is always defined: a SQLite file in the state directory,
//! `sqlite_key_value.db`, with Spin's table (`spin_key_value`: store, key, value), as Spin keeps
//! `.spin/sqlite_key_value.db`. It is the only store this host provides (the manifest loader
//! refuses other labels). `list-keys` returns every key at once (no cursor), as Spin does.
//!
//! Where this host differs from Spin (host/README.md): the file runs in WAL mode with
//! `synchronous = NORMAL`: a write survives the process being killed, and the host flushes it to
//! the disk within a second (`sqlite::local::flush`); what Spin apps keep in a key-value store (counters,
//! sessions, caches) is not what the app's SQLite database is for. `increment` keeps the count as
//! 8 bytes, little-endian; a value of another length under that key is an error.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use rusqlite::OptionalExtension;
use wasmtime::component::{HasSelf, Linker, Resource};

use crate::capability::sqlite::local::flush::Flusher;

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "receta:host/keyvalue",
        imports: { default: async | trappable },
    });
}

use bindings::wasi::keyvalue::{atomics, batch, store};
use store::{Error, KeyResponse};

/// File name of the `default` store in the state directory (Spin's).
pub const DEFAULT_STORE_FILE: &str = "sqlite_key_value.db";

const SCHEMA: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
    CREATE TABLE IF NOT EXISTS spin_key_value (store TEXT NOT NULL, key TEXT NOT NULL, \
    value BLOB NOT NULL, PRIMARY KEY (store, key));";
const GET: &str = "SELECT value FROM spin_key_value WHERE store = ?1 AND key = ?2";
const SET: &str = "INSERT INTO spin_key_value (store, key, value) VALUES (?1, ?2, ?3) \
    ON CONFLICT (store, key) DO UPDATE SET value = excluded.value";
const DELETE: &str = "DELETE FROM spin_key_value WHERE store = ?1 AND key = ?2";
const KEYS: &str = "SELECT key FROM spin_key_value WHERE store = ?1 ORDER BY key";

/// One defined store: its label and the connection to its file.
pub struct KeyValueStore {
    label: String,
    conn: Mutex<rusqlite::Connection>,
    _flusher: Flusher,
}

impl KeyValueStore {
    /// Opens (creating) the store `label` in the file at `path`.
    pub fn open(label: &str, path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let conn = rusqlite::Connection::open(path).with_context(|| {
            format!(
                "cannot open key-value store {label:?} at {}",
                path.display()
            )
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .context("cannot set busy_timeout")?;
        conn.execute_batch(SCHEMA)
            .with_context(|| format!("cannot set up key-value store {label:?}"))?;
        Ok(Self {
            label: label.to_string(),
            conn: Mutex::new(conn),
            _flusher: Flusher::start(&format!("kv-{label}"), path)?,
        })
    }

    /// Runs `f` on the connection; every SQLite error is `other` with SQLite's text.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut rusqlite::Connection, &str) -> rusqlite::Result<T>,
    ) -> Result<T, Error> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut conn, &self.label).map_err(|e| Error::Other(e.to_string()))
    }

    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        self.with(|c, store| get(c, store, key))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<(), Error> {
        self.with(|c, store| {
            c.prepare_cached(SET)?
                .execute((store, key, value))
                .map(drop)
        })
    }

    fn delete(&self, key: &str) -> Result<(), Error> {
        self.with(|c, store| c.prepare_cached(DELETE)?.execute((store, key)).map(drop))
    }

    fn keys(&self) -> Result<Vec<String>, Error> {
        self.with(|c, store| {
            let mut stmt = c.prepare_cached(KEYS)?;
            let keys = stmt.query_map([store], |r| r.get(0))?;
            keys.collect()
        })
    }

    /// Adds `delta` to the count under `key` (absent: 0) in one transaction; the new count.
    fn increment(&self, key: &str, delta: i64) -> Result<i64, Error> {
        self.with(|c, store| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let count = match get(&tx, store, key)? {
                None => 0,
                Some(bytes) => <[u8; 8]>::try_from(bytes.as_slice())
                    .map(i64::from_le_bytes)
                    .map_err(|_| {
                        rusqlite::Error::ToSqlConversionFailure(
                            format!(
                                "the value under {key:?} is {} bytes, not a count (8 bytes)",
                                bytes.len()
                            )
                            .into(),
                        )
                    })?,
            };
            let count = count.wrapping_add(delta);
            tx.prepare_cached(SET)?
                .execute((store, key, count.to_le_bytes().as_slice()))?;
            tx.commit()?;
            Ok(count)
        })
    }

    /// Sets `key` to `value` if it still holds `expected`; whether it did.
    fn swap(&self, key: &str, expected: &Option<Vec<u8>>, value: &[u8]) -> Result<bool, Error> {
        self.with(|c, store| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            if get(&tx, store, key)? != *expected {
                return Ok(false);
            }
            tx.prepare_cached(SET)?.execute((store, key, value))?;
            tx.commit()?;
            Ok(true)
        })
    }
}

fn get(c: &rusqlite::Connection, store: &str, key: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    c.prepare_cached(GET)?
        .query_row((store, key), |r| r.get(0))
        .optional()
}

/// Every defined store, by label.
#[derive(Default)]
pub struct KeyValueStores(HashMap<String, Arc<KeyValueStore>>);

impl KeyValueStores {
    /// The stores of an app whose state directory is `state_dir`: `default` only.
    pub fn open(state_dir: &Path) -> Result<Self> {
        let default = KeyValueStore::open("default", &state_dir.join(DEFAULT_STORE_FILE))?;
        Ok(Self(HashMap::from([(
            "default".to_string(),
            Arc::new(default),
        )])))
    }
}

/// A `cas` handle: the key and the value it held when the handle was made.
struct Cas {
    store: Arc<KeyValueStore>,
    key: String,
    current: Option<Vec<u8>>,
}

/// One store's key-value state: which labels its component may open, the stores, and the
/// buckets and `cas` handles its guest holds (a handle's number is the key here).
pub struct KeyValueState {
    allowed: Arc<HashSet<String>>,
    stores: Arc<KeyValueStores>,
    buckets: HashMap<u32, Arc<KeyValueStore>>,
    cases: HashMap<u32, Cas>,
    next: u32,
}

impl KeyValueState {
    /// Fresh state for one store.
    pub fn new(allowed: Arc<HashSet<String>>, stores: Arc<KeyValueStores>) -> Self {
        Self {
            allowed,
            stores,
            buckets: HashMap::new(),
            cases: HashMap::new(),
            next: 0,
        }
    }

    fn handle(&mut self) -> u32 {
        let rep = self.next;
        self.next = self.next.wrapping_add(1);
        rep
    }

    fn bucket(&self, bucket: &Resource<store::Bucket>) -> Result<Arc<KeyValueStore>, Error> {
        self.buckets
            .get(&bucket.rep())
            .cloned()
            .ok_or_else(|| Error::Other("unknown bucket handle".into()))
    }
}

/// Adds the three interfaces to `linker`; `get` finds a store's key-value state.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> &mut KeyValueState,
) -> Result<()> {
    store::add_to_linker::<T, HasSelf<KeyValueState>>(linker, get)
        .map_err(anyhow::Error::from)
        .context("cannot add wasi:keyvalue/store to the linker")?;
    atomics::add_to_linker::<T, HasSelf<KeyValueState>>(linker, get)
        .map_err(anyhow::Error::from)
        .context("cannot add wasi:keyvalue/atomics to the linker")?;
    batch::add_to_linker::<T, HasSelf<KeyValueState>>(linker, get)
        .map_err(anyhow::Error::from)
        .context("cannot add wasi:keyvalue/batch to the linker")
}

impl store::Host for KeyValueState {
    async fn open(
        &mut self,
        identifier: String,
    ) -> wasmtime::Result<Result<Resource<store::Bucket>, Error>> {
        if !self.allowed.contains(&identifier) {
            return Ok(Err(Error::AccessDenied));
        }
        let Some(found) = self.stores.0.get(&identifier).cloned() else {
            return Ok(Err(Error::NoSuchStore));
        };
        let rep = self.handle();
        self.buckets.insert(rep, found);
        Ok(Ok(Resource::new_own(rep)))
    }
}

impl store::HostBucket for KeyValueState {
    async fn get(
        &mut self,
        bucket: Resource<store::Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, Error>> {
        Ok(self.bucket(&bucket).and_then(|s| s.get(&key)))
    }

    async fn set(
        &mut self,
        bucket: Resource<store::Bucket>,
        key: String,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), Error>> {
        Ok(self.bucket(&bucket).and_then(|s| s.set(&key, &value)))
    }

    async fn delete(
        &mut self,
        bucket: Resource<store::Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<(), Error>> {
        Ok(self.bucket(&bucket).and_then(|s| s.delete(&key)))
    }

    async fn exists(
        &mut self,
        bucket: Resource<store::Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<bool, Error>> {
        Ok(self
            .bucket(&bucket)
            .and_then(|s| s.get(&key))
            .map(|v| v.is_some()))
    }

    async fn list_keys(
        &mut self,
        bucket: Resource<store::Bucket>,
        _cursor: Option<String>,
    ) -> wasmtime::Result<Result<KeyResponse, Error>> {
        Ok(self
            .bucket(&bucket)
            .and_then(|s| s.keys())
            .map(|keys| KeyResponse { keys, cursor: None }))
    }

    async fn drop(&mut self, bucket: Resource<store::Bucket>) -> wasmtime::Result<()> {
        self.buckets.remove(&bucket.rep());
        Ok(())
    }
}

impl atomics::Host for KeyValueState {
    async fn increment(
        &mut self,
        bucket: Resource<store::Bucket>,
        key: String,
        delta: i64,
    ) -> wasmtime::Result<Result<i64, Error>> {
        Ok(self.bucket(&bucket).and_then(|s| s.increment(&key, delta)))
    }

    async fn swap(
        &mut self,
        cas: Resource<atomics::Cas>,
        value: Vec<u8>,
    ) -> wasmtime::Result<Result<(), atomics::CasError>> {
        let Some(handle) = self.cases.remove(&cas.rep()) else {
            return Ok(Err(atomics::CasError::StoreError(Error::Other(
                "unknown cas handle".into(),
            ))));
        };
        match handle.store.swap(&handle.key, &handle.current, &value) {
            Ok(true) => Ok(Ok(())),
            Ok(false) => {
                // A fresh handle on what the key holds now, for the guest to try again.
                let current = match handle.store.get(&handle.key) {
                    Ok(current) => current,
                    Err(e) => return Ok(Err(atomics::CasError::StoreError(e))),
                };
                let rep = self.handle();
                self.cases.insert(rep, Cas { current, ..handle });
                Ok(Err(atomics::CasError::CasFailed(Resource::new_own(rep))))
            }
            Err(e) => Ok(Err(atomics::CasError::StoreError(e))),
        }
    }
}

impl atomics::HostCas for KeyValueState {
    async fn new(
        &mut self,
        bucket: Resource<store::Bucket>,
        key: String,
    ) -> wasmtime::Result<Result<Resource<atomics::Cas>, Error>> {
        let store = match self.bucket(&bucket) {
            Ok(store) => store,
            Err(e) => return Ok(Err(e)),
        };
        let current = match store.get(&key) {
            Ok(current) => current,
            Err(e) => return Ok(Err(e)),
        };
        let rep = self.handle();
        self.cases.insert(
            rep,
            Cas {
                store,
                key,
                current,
            },
        );
        Ok(Ok(Resource::new_own(rep)))
    }

    async fn current(
        &mut self,
        cas: Resource<atomics::Cas>,
    ) -> wasmtime::Result<Result<Option<Vec<u8>>, Error>> {
        Ok(self
            .cases
            .get(&cas.rep())
            .map(|c| c.current.clone())
            .ok_or_else(|| Error::Other("unknown cas handle".into())))
    }

    async fn drop(&mut self, cas: Resource<atomics::Cas>) -> wasmtime::Result<()> {
        self.cases.remove(&cas.rep());
        Ok(())
    }
}

impl batch::Host for KeyValueState {
    async fn get_many(
        &mut self,
        bucket: Resource<store::Bucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<Vec<(String, Option<Vec<u8>>)>, Error>> {
        let store = match self.bucket(&bucket) {
            Ok(store) => store,
            Err(e) => return Ok(Err(e)),
        };
        Ok(keys
            .into_iter()
            .map(|key| store.get(&key).map(|value| (key, value)))
            .collect())
    }

    async fn set_many(
        &mut self,
        bucket: Resource<store::Bucket>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> wasmtime::Result<Result<(), Error>> {
        Ok(self.bucket(&bucket).and_then(|s| {
            s.with(|c, store| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                for (key, value) in &key_values {
                    tx.prepare_cached(SET)?.execute((store, key, value))?;
                }
                tx.commit()
            })
        }))
    }

    async fn delete_many(
        &mut self,
        bucket: Resource<store::Bucket>,
        keys: Vec<String>,
    ) -> wasmtime::Result<Result<(), Error>> {
        Ok(self.bucket(&bucket).and_then(|s| {
            s.with(|c, store| {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                for key in &keys {
                    tx.prepare_cached(DELETE)?.execute((store, key))?;
                }
                tx.commit()
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_kept_across_opens_and_a_swap_needs_the_value_it_saw() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DEFAULT_STORE_FILE);
        let store = KeyValueStore::open("default", &path).unwrap();
        assert_eq!(store.increment("n", 1).unwrap(), 1);
        assert_eq!(store.increment("n", 2).unwrap(), 3);
        assert_eq!(store.increment("n", -1).unwrap(), 2);
        assert_eq!(store.increment("absent", 0).unwrap(), 0);
        store.set("text", b"abc").unwrap();
        let Err(Error::Other(message)) = store.increment("text", 1) else {
            panic!("a 3-byte value is not a count")
        };
        assert!(message.contains("3 bytes, not a count"), "{message}");
        assert!(!store.swap("text", &Some(b"xyz".to_vec()), b"new").unwrap());
        assert!(store.swap("text", &Some(b"abc".to_vec()), b"new").unwrap());
        assert_eq!(store.get("text").unwrap().as_deref(), Some(&b"new"[..]));
        store.delete("text").unwrap();
        assert_eq!(store.keys().unwrap(), vec!["absent", "n"]);
        drop(store);
        let again = KeyValueStore::open("default", &path).unwrap();
        assert_eq!(again.increment("n", 0).unwrap(), 2);
    }
}
