//! The pharmacy calls' log rows on their way to the log: a call answered anything but 404 keeps
//! its row in Spin's key-value store (`default`, `calls/<at>/<nonce>`) instead of
//! committing it to the database, and `drain` writes the queued rows into `pharmacy_calls` (with
//! the prescription's access-log entry of a shown one) in one transaction per batch.
//!
//! Why: a commit to the database makes every other pooled connection drop its cache and memory
//! map at its next read (xtask/src/bench/findings.md), so a read that commits costs several times
//! a read that does not. The key-value store is another file: a lookup commits nothing the other
//! requests read. Nothing is lost: the store's write is on the disk (or, on this project's host,
//! in the operating system within the call and on the disk within a second) before the answer.
//!
//! Every reader of the two logs drains first (the admin's call list, the patient's page and its
//! JSON), and the background jobs drain them every second (`components/jobs`), so a reader never misses a row
//! and the tables catch up within seconds. The 404s stay direct commits: they feed the rate limit
//! (`calls::admit`), which must count every one at once.
//!
//! Drains may run at once (a worker and a reader): each row is claimed in
//! `pharmacy_calls_drained` (migration 0018) in the transaction that writes it, so it is written
//! once; a claim outlives its key (deleted after the commit) by ten minutes.

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};

use common::db::{Db, text};
use common::types::Error;

/// The queue's keys: `calls/<ISO 8601 time>/<16 hex digits>`, so key order is time order.
const PREFIX: &str = "calls/";
/// How long a claim outlives its key (longer than any drain that read the key before it was
/// deleted can take).
const CLAIM_KEPT_SECS: i64 = 600;

/// `?1` the keys (JSON array), `?2` now: the rows' claims; returns the keys this drain claimed
/// first. (`WHERE true` keeps `ON CONFLICT` from reading as a join constraint.)
const CLAIM: &str = "INSERT INTO pharmacy_calls_drained (queue_key, drained_at) \
    SELECT value, ?2 FROM json_each(?1) WHERE true \
    ON CONFLICT (queue_key) DO NOTHING RETURNING queue_key";

/// `?1` the claimed rows (JSON array of `Queued`, in time order): their call-log rows.
const CALLS: &str = "INSERT INTO pharmacy_calls (pharmacy_id, signature, action, status, created_at) \
    SELECT json_extract(value, '$.pharmacy'), json_extract(value, '$.signature'), \
      json_extract(value, '$.action'), \
      json_extract(value, '$.status'), json_extract(value, '$.created_at') \
    FROM json_each(?1) ORDER BY key";

/// `?1` the shown lookups (JSON array of `Seen`, one per pharmacy, signature and minute): their
/// access-log entries, with the pharmacy's name and license as they are now (none for an unknown
/// signature), unless that pharmacy's lookup of it is already logged in that minute (the patient's
/// page shows minutes).
const SEEN: &str = "INSERT INTO access_log \
    (prescription_id, action, actor, pharmacy_id, actor_name, actor_license, created_at) \
    SELECT p.id, 'lookup', 'pharmacy', ph.id, ph.name, ph.license, r.at \
    FROM (SELECT json_extract(value, '$.signature') AS signature, \
            json_extract(value, '$.pharmacy') AS pharmacy, json_extract(value, '$.at') AS at, \
            json_extract(value, '$.minute') AS minute, json_extract(value, '$.next') AS next \
          FROM json_each(?1)) r \
    JOIN prescriptions p ON p.signature = r.signature JOIN pharmacies ph ON ph.id = r.pharmacy \
    WHERE NOT EXISTS (SELECT 1 FROM access_log a WHERE a.prescription_id = p.id \
      AND a.action = 'lookup' AND a.pharmacy_id = r.pharmacy \
      AND a.created_at >= r.minute AND a.created_at < r.next)";

/// `?1` the oldest claim kept.
const FORGET_CLAIMS: &str = "DELETE FROM pharmacy_calls_drained WHERE drained_at < ?1";

/// A queued call's row, as the store keeps it (JSON).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct Queued {
    pub pharmacy: i64,
    pub signature: String,
    /// The call's `action` as the log names it (`lookup`, `dispense`, ...); rows queued before
    /// other calls were queued are lookups.
    #[serde(default = "lookup")]
    pub action: String,
    pub status: u16,
    pub created_at: String,
    /// A 2xx that showed the prescription: its access-log entry is written with the row.
    pub seen: bool,
}

/// A shown lookup's access-log entry, as `SEEN` reads it.
#[derive(Serialize)]
struct Seen<'a> {
    pharmacy: i64,
    signature: &'a str,
    at: &'a str,
    /// The start of `at`'s minute, and of the next one.
    minute: String,
    next: String,
}

impl<'a> Seen<'a> {
    fn of(row: &'a Queued) -> Option<Seen<'a>> {
        let minute = common::time::minute_start(&row.created_at);
        let next = common::time::shift(&minute, 60)?;
        Some(Seen {
            pharmacy: row.pharmacy,
            signature: &row.signature,
            at: &row.created_at,
            minute,
            next,
        })
    }
}

/// The entries of `rows` (in time order) that showed a prescription, the first of each pharmacy,
/// signature and minute.
fn seen(rows: &[Queued]) -> Vec<Seen<'_>> {
    let mut first = std::collections::HashSet::new();
    rows.iter()
        .filter(|r| r.seen)
        .filter_map(Seen::of)
        .filter(|s| first.insert((s.pharmacy, s.signature, s.minute.clone())))
        .collect()
}

fn lookup() -> String {
    "lookup".into()
}

/// The key of a row queued at `at` (a fresh random suffix: two lookups in one microsecond are
/// two rows).
fn key(at: &str) -> String {
    format!("{PREFIX}{at}/{}", common::hex::random::<8>())
}

/// Queues a call's row; with the database over HTTP, writes it at once instead (one request: the
/// row and its access-log entry in one transaction), the key-value store being the scarcer
/// resource there (`common::db::over_http`).
pub fn push(row: &Queued) -> Result<()> {
    if common::db::over_http()? {
        let rows = std::slice::from_ref(row);
        return Db::open()?.transaction(|db| write_rows(db, rows)).map(drop);
    }
    let value = serde_json::to_vec(row).context("encoding a queued call")?;
    let key = key(&row.created_at);
    common::kv::open()?
        .set(&key, &value)
        .map_err(|e| anyhow!("queueing the call under {key:?}: {e:?}"))
}

/// Writes every queued row into the logs, a transaction of three statements per `common::kv::BATCH` keys; how many
/// it wrote (rows another drain wrote first are not counted).
pub fn drain(db: &Db) -> Result<u32, Error> {
    let drained = common::kv::drain(PREFIX, |found| db.transaction(|db| write(db, found)))?;
    if drained.listed == 0 {
        return Ok(0);
    }
    // Every listed key is written and deleted: claims older than any drain still running go.
    let oldest = common::time::shift(&common::time::now_iso8601(), -CLAIM_KEPT_SECS)
        .context("the claims' cut-off")?;
    db.execute(FORGET_CLAIMS, &[text(&oldest)])?;
    Ok(drained.written)
}

/// Claims `found`'s rows and writes those this drain claimed first; how many.
fn write(db: &Db, found: &[common::kv::Found]) -> Result<u32, Error> {
    let keys: Vec<&str> = found
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k.as_str())
        .collect();
    let keys = serde_json::to_string(&keys).context("encoding the keys")?;
    let now = common::time::now_iso8601();
    let claimed: std::collections::HashSet<String> = db
        .query(CLAIM, &[text(&keys), text(&now)], |r| r.string("queue_key"))?
        .into_iter()
        .collect();
    let mut rows = Vec::with_capacity(claimed.len());
    for (key, bytes) in found {
        let Some(bytes) = bytes.as_ref().filter(|_| claimed.contains(key)) else {
            continue;
        };
        match serde_json::from_slice::<Queued>(bytes) {
            Ok(row) => rows.push(row),
            Err(e) => eprintln!("receta: pharmacies: dropping unreadable queued call {key:?}: {e}"),
        }
    }
    write_rows(db, &rows).map_err(Error::from)
}

/// Writes `rows` (in time order) and the access-log entries of those that showed a prescription;
/// how many rows. Batched writes: inside the caller's transaction, over HTTP they travel with its
/// `COMMIT`.
fn write_rows(db: &Db, rows: &[Queued]) -> Result<u32> {
    if rows.is_empty() {
        return Ok(0);
    }
    let json = serde_json::to_string(rows).context("encoding the calls")?;
    db.execute_batched(CALLS, &[text(&json)])?;
    let seen = seen(rows);
    if !seen.is_empty() {
        let json = serde_json::to_string(&seen).context("encoding the entries")?;
        db.execute_batched(SEEN, &[text(&json)])?;
    }
    Ok(rows.len() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_in_time_order_and_differ_within_a_microsecond() {
        let (a, b) = (
            key("2026-11-25T22:10:00.000001Z"),
            key("2026-11-25T22:10:00.000002Z"),
        );
        assert!(a < b, "{a} {b}");
        assert!(a.starts_with(PREFIX));
        let at = "2026-11-25T22:10:00.000001Z";
        assert_ne!(key(at), key(at));
    }

    #[test]
    fn a_queued_row_reads_back_as_it_was_written() {
        let row = Queued {
            pharmacy: 7,
            signature: "abc".into(),
            action: "dispense".into(),
            status: 200,
            created_at: "2026-11-25T22:10:00.000001Z".into(),
            seen: true,
        };
        let bytes = serde_json::to_vec(&row).unwrap();
        assert_eq!(serde_json::from_slice::<Queued>(&bytes).unwrap(), row);
    }

    #[test]
    fn a_row_queued_before_actions_were_kept_reads_as_a_lookup() {
        let bytes = br#"{"pharmacy":7,"signature":"abc","status":200,"created_at":"2026-11-25T22:10:00.000001Z","seen":true}"#;
        let row: Queued = serde_json::from_slice(bytes).unwrap();
        assert_eq!(row.action, "lookup");
    }

    fn row(pharmacy: i64, signature: &str, at: &str, seen: bool) -> Queued {
        Queued {
            pharmacy,
            signature: signature.into(),
            action: "lookup".into(),
            status: if seen { 200 } else { 410 },
            created_at: at.into(),
            seen,
        }
    }

    #[test]
    fn one_entry_per_pharmacy_signature_and_minute_the_first() {
        let rows = [
            row(1, "a", "2026-11-25T22:10:01.000000Z", true),
            row(1, "a", "2026-11-25T22:10:59.000000Z", true),
            row(2, "a", "2026-11-25T22:10:30.000000Z", true),
            row(1, "b", "2026-11-25T22:10:40.000000Z", false),
            row(1, "a", "2026-11-25T22:11:00.000000Z", true),
        ];
        let seen = seen(&rows);
        let got: Vec<(i64, &str, &str)> = seen
            .iter()
            .map(|s| (s.pharmacy, s.signature, s.at))
            .collect();
        assert_eq!(
            got,
            [
                (1, "a", "2026-11-25T22:10:01.000000Z"),
                (2, "a", "2026-11-25T22:10:30.000000Z"),
                (1, "a", "2026-11-25T22:11:00.000000Z"),
            ]
        );
        assert_eq!(seen[0].minute, "2026-11-25T22:10:00.000000Z");
        assert_eq!(seen[0].next, "2026-11-25T22:11:00.000000Z");
    }
}
