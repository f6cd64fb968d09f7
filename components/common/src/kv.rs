//! Spin's key-value store (`wasi:keyvalue`) as the app uses it: one store, `default`, listed in
//! `key_value_stores` of the gateway and the outbox worker in `spin.toml` (the domain components
//! inherit it). It holds the rate-limit counters (`counters`) and the queues of the rows reads
//! write (a pharmacy lookup's under `calls/`, a medic's or the admin's read under `reads/`).

use anyhow::{Result, anyhow};
use spin_sdk::wit::wasi::keyvalue::{batch, store};

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

/// Keys read in one batch: one `get-many` and one `delete-many` each.
pub const BATCH: usize = 500;

/// A key and its value; `None` when another drain took it meanwhile.
pub type Found = (String, Option<Vec<u8>>);

/// What a drain did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drained {
    /// Keys listed under the prefix.
    pub listed: usize,
    /// What `write` answered, summed.
    pub written: u32,
}

/// Drains the queue under `prefix`, written once for the queues of the rows reads write (the
/// lookups' `calls/`, the reads' `reads/`): its keys in order, [`BATCH`] at a time, each batch read,
/// handed to `write` (which makes the rows durable), then deleted. A crash between the write and
/// the delete leaves the batch to be written again: `write` must take a row it wrote before as
/// written (a claim, or a row that says so itself).
pub fn drain<E: From<anyhow::Error>>(
    prefix: &str,
    mut write: impl FnMut(&[Found]) -> Result<u32, E>,
) -> Result<Drained, E> {
    let bucket = open()?;
    let keys = keys(&bucket, prefix)?;
    let mut drained = Drained {
        listed: keys.len(),
        written: 0,
    };
    for keys in keys.chunks(BATCH) {
        let found = batch::get_many(&bucket, keys)
            .map_err(|e| anyhow!("reading {} queued rows under {prefix:?}: {e:?}", keys.len()))?;
        drained.written += write(&found)?;
        batch::delete_many(&bucket, keys).map_err(|e| {
            anyhow!(
                "deleting {} drained rows under {prefix:?}: {e:?}",
                keys.len()
            )
        })?;
    }
    Ok(drained)
}
