//! Spin's key-value store (`wasi:keyvalue`) as the app uses it: one store, `default`, listed in
//! `key_value_stores` of the gateway and the outbox worker in `spin.toml` (the domain components
//! inherit it). It holds the rate-limit counters (`counters`) and the queues of the rows reads
//! write (a pharmacy lookup's under `calls/`, a medic's or the admin's read under `reads/`).

use anyhow::{Result, anyhow};
use spin_sdk::wit::wasi::keyvalue::store;

/// The app's store.
pub const STORE: &str = "default";

/// The open store.
pub fn open() -> Result<store::Bucket> {
    store::open(STORE).map_err(|e| anyhow!("opening the key-value store {STORE:?}: {e:?}"))
}

/// The keys under `prefix`, in order.
pub fn keys(bucket: &store::Bucket, prefix: &str) -> Result<Vec<String>> {
    let mut keys: Vec<String> = bucket
        .list_keys(None)
        .map_err(|e| anyhow!("listing the key-value store: {e:?}"))?
        .keys
        .into_iter()
        .filter(|k| k.starts_with(prefix))
        .collect();
    keys.sort();
    Ok(keys)
}
