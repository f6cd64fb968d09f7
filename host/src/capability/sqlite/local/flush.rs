//! The bound on a log-grade commit's exposure: a guest may make its connection's commits skip the
//! disk flush (`PRAGMA synchronous = NORMAL`, in WAL mode: the commit is written to the WAL file
//! before it returns, so it survives the process being killed, but is not `fsync`ed). A durable
//! commit of any connection flushes the whole WAL, and so everything committed before it; this
//! thread does the same once a second when the WAL changed, so a power cut loses at most the last
//! second of log-grade commits (docs/lifecycle.md, "What a crash can lose").

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

/// How often the WAL is flushed when it changed.
pub const PERIOD: Duration = Duration::from_secs(1);

/// Flushes a database's WAL file every [`PERIOD`] while it lives.
pub struct Flusher {
    stop: Arc<AtomicBool>,
}

impl Drop for Flusher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Flusher {
    /// Starts flushing `<database>-wal`, SQLite's WAL file of the database at `database`.
    pub fn start(label: &str, database: &std::path::Path) -> Result<Self> {
        let mut wal = database.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name(format!("flush-{label}"))
            .spawn(move || {
                let mut flushed = None;
                while !stopped.load(Ordering::Relaxed) {
                    std::thread::sleep(PERIOD);
                    flushed = flush_if_changed(&wal, flushed);
                }
            })
            .with_context(|| format!("cannot start the WAL flusher of database {label:?}"))?;
        Ok(Self { stop })
    }
}

/// Flushes `wal` if its size or modification time is not `flushed`'s; what it flushed (`None` when
/// the file is absent or the flush failed, so the next tick tries again).
fn flush_if_changed(
    wal: &std::path::Path,
    flushed: Option<(u64, SystemTime)>,
) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(wal).ok()?;
    let seen = (meta.len(), meta.modified().ok()?);
    if flushed == Some(seen) {
        return flushed;
    }
    let file = std::fs::OpenOptions::new().write(true).open(wal).ok()?;
    file.sync_data().ok()?;
    Some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_wal_is_flushed_once() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("t.db-wal");
        assert_eq!(flush_if_changed(&wal, None), None, "no WAL yet");
        std::fs::write(&wal, b"frames").unwrap();
        let flushed = flush_if_changed(&wal, None);
        assert!(flushed.is_some());
        assert_eq!(flush_if_changed(&wal, flushed), flushed);
        std::fs::write(&wal, b"more frames").unwrap();
        let again = flush_if_changed(&wal, flushed);
        assert!(again.is_some() && again != flushed);
    }
}
