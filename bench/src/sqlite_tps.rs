//! The durable-write ceiling: one small INSERT per transaction on the same disk with the host's
//! connection settings (`host/src/sqlite.rs`): WAL, `synchronous = FULL` (an fsync per commit: a
//! committed transaction survives a crash of the machine), `foreign_keys = ON`, `busy_timeout` 5 s,
//! `prepare_cached`, `BEGIN IMMEDIATE … COMMIT`. `--synchronous NORMAL` measures the commit rate
//! without the fsync, for the notes.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::args::{Flags, median_p99};

pub fn run(flags: &Flags) -> Result<()> {
    let path = flags.str("db")?;
    let seconds: f64 = flags.num("seconds", 5.0)?;
    let synchronous = flags.optional("synchronous").unwrap_or("FULL");
    if !matches!(synchronous, "NORMAL" | "FULL") {
        bail!("--synchronous must be NORMAL or FULL");
    }
    let conn = rusqlite::Connection::open(path).with_context(|| format!("open {path}"))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        bail!("journal mode {mode}, not WAL");
    }
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch(&format!(
        "PRAGMA foreign_keys = ON; PRAGMA synchronous = {synchronous};"
    ))?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS bench_tx (id INTEGER PRIMARY KEY AUTOINCREMENT, \
         created_at TEXT NOT NULL, note TEXT NOT NULL)",
    )?;
    let run_for = Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut latencies = Vec::new();
    while started.elapsed() < run_for {
        let t = Instant::now();
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        conn.prepare_cached("INSERT INTO bench_tx (created_at, note) VALUES (?1, ?2)")?
            .execute(["2026-11-22T10:00:00Z", "one small row"])?;
        conn.prepare_cached("COMMIT")?.execute([])?;
        latencies.push(t.elapsed().as_nanos());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let count = latencies.len();
    let (p50, p99) = median_p99(&mut latencies);
    println!(
        "tps={:.1} p50_ns={p50} p99_ns={p99} transactions={count} synchronous={synchronous}",
        count as f64 / elapsed
    );
    Ok(())
}
