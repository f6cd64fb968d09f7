//! `cargo xtask bench`: where every millisecond goes, measured the same way every time.
//!
//! Builds everything in release mode, then, on a fresh bench directory
//! (`$CARGO_TARGET_DIR/bench/latest`: state dirs, compiled-code cache, logs, wrk scripts):
//!
//! 1. ceilings and peers: a native hyper "hello" (`receta-bench hyper-hello`), the trivial
//!    component `bench/components/hello` under `wasmtime serve` (wasmtime-cli 48, installed once under
//!    `~/.cache/receta/wasmtime-cli`) and under our host, raw SQLite durable transactions with the
//!    host's pragmas (`receta-bench sqlite-tps`), PDF render time in a component (`pdfbench`) and
//!    natively;
//! 2. start-up time (process start to the first 200) without and with the compiled-code cache,
//!    idle RSS, component sizes; then the Django peer (`bench/peer.rs`, `../shared/peers/drf` or
//!    `RECETA_PEER_DIR`): detail, search and create at the app's sizes, from the same script
//!    generator, so the app's rows print "× peer";
//! 3. the app (`spin.toml`) on a fresh state dir, seeded through the API (10 hospitals, 100
//!    medics, 10,000 patients, then 1,000 and 50,000 prescriptions): lists, searches, details,
//!    PDFs, pharmacy calls and creates, with the list and search measured at 1,000 and at 50,000
//!    prescriptions (`bench/app.rs`: two tables of scenarios, `bench/scenarios.rs`: the loop that
//!    measures them and computes their ratios and targets);
//! 4. the same app on real Spin 4.0.2 (`bench/spin.rs`): detail, search and create on the app
//!    stage's database, beside the same rows on this host and the peer;
//! 5. the same app on libSQL (`bench/libsql.rs`);
//! 6. the NOM-151 rows (`bench/constancias.rs`): the create and the burn on the app stage's
//!    database without and with a timestamp authority on loopback, and the stamping rate;
//! 7. the background jobs' rows (`bench/jobs.rs`): the create and the detail with emails delivered
//!    by the cron trigger, then by the jobs door called every second, and the door's own calls.
//!
//! Every load comes from `wrk` (installed with apt-get when missing) on loopback: fixed
//! connections, a warm-up run, then measured runs; the median run is reported. The table goes to
//! stdout and `docs/bench.md` (when the Spin or libSQL stage fails, to the bench directory instead, with
//! the failure in its notes, and the command fails). Environment: `RECETA_BENCH_SECONDS` (per
//! run, 5), `RECETA_BENCH_RUNS` (3), `RECETA_BENCH_CONNS` (`2,8`), `RECETA_BENCH_PRESCRIPTIONS`
//! (50000), `RECETA_BENCH_ONLY` (the app and libSQL stages' scenario keys to measure; all unless set).
//!
//! This file: the driver, the ceilings and peers, start-up and sizes; what the stages share is in
//! `bench/` (harness, settings, wrk, procs, scripts, report).

mod app;
mod ceilings;
mod constancias;
mod edge;
mod efirma;
mod harness;
mod jobs;
mod libsql;
mod peer;
mod procs;
mod report;
mod scenarios;
mod scripts;
mod settings;
mod spin;
mod wrk;

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::{ADMIN_HEADER, READY_PATH, app_command, wasm};
use report::{Row, document, loadavg, machine, ms, target, thousands};
use settings::Settings;

use crate::project::{Result, cargo, on_path, root, run, target_dir};

pub fn bench() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let wasmtime = ceilings::ensure_wasmtime_cli()?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;

    let dir = fresh_dir("latest")?;
    eprintln!("xtask bench: working in {}", dir.display());
    let load_before = loadavg();
    let started = std::time::Instant::now();

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let ceilings = ceilings::rows(&settings, &dir, &wasmtime, &mut rows, &mut notes)?;
    startup(&dir, &mut rows, &mut notes)?;
    let peer = peer::rows(&settings, &dir, &mut rows, &mut notes)?;
    let baselines = scenarios::Baselines {
        hello: &ceilings.hello,
        sqlite_tps: ceilings.sqlite_tps,
        peer: &peer.rates,
        peer_rss_mib: peer.rss_mib,
    };
    let local = app::rows(&settings, &dir, &baselines, &mut rows, &mut notes)?;
    // A Spin or libSQL stage that fails (no Spin, no sqld, a server that stalls) must not lose
    // the rows measured before it: they are written with the failure in the notes, beside the
    // logs, not over docs/bench.md, and the command still fails.
    let on_spin = spin::rows(&settings, &dir, &baselines, &mut rows, &mut notes);
    if let Err(e) = &on_spin {
        notes.push(format!("The Spin stage did not complete: {e}"));
    }
    let libsql = libsql::rows(&settings, &dir, &local, &baselines, &mut rows, &mut notes);
    if let Err(e) = &libsql {
        notes.push(format!("The libSQL stage did not complete: {e}"));
    }
    let stamping = constancias::rows(&settings, &dir, &mut rows, &mut notes);
    if let Err(e) = &stamping {
        notes.push(format!("The NOM-151 stage did not complete: {e}"));
    }
    let background = jobs::rows(&settings, &dir, &mut rows, &mut notes);
    if let Err(e) = &background {
        notes.push(format!("The background jobs stage did not complete: {e}"));
    }
    let signing = efirma::rows(&dir, &mut rows, &mut notes);
    if let Err(e) = &signing {
        notes.push(format!("The e.firma stage did not complete: {e}"));
    }
    let stages = on_spin
        .and(libsql)
        .and(stamping)
        .and(background)
        .and(signing);
    sizes(&mut rows)?;

    let load_after = loadavg();
    let doc = document(
        &settings,
        &rows,
        &notes,
        &load_before,
        &load_after,
        started.elapsed(),
    );
    println!("{doc}");
    let out = match stages {
        Ok(()) => root().join("docs").join("bench.md"),
        Err(_) => dir.join("bench.md"),
    };
    std::fs::write(&out, &doc).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("xtask bench: wrote {}", out.display());
    stages
}

/// `cargo xtask bench peer`: the Django peer's rows alone (to compare with a change of the app's
/// measured by hand), printed, in `$CARGO_TARGET_DIR/bench/peer`.
pub fn peer_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let dir = fresh_dir("peer")?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    peer::rows(&settings, &dir, &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
}

/// `cargo xtask bench app`: the app stage alone (no ceilings, no peer, so no ratios to them), on a
/// fresh `$CARGO_TARGET_DIR/bench/latest` that the Spin, NOM-151, jobs and e.firma stages can then
/// use; with `RECETA_BENCH_ONLY` and `RECETA_BENCH_PRESCRIPTIONS`, a quick check of a change.
pub fn app_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;
    let dir = fresh_dir("latest")?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    let baselines = scenarios::Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &Default::default(),
        peer_rss_mib: None,
    };
    app::rows(&settings, &dir, &baselines, &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
}

/// `cargo xtask bench spin`: the peer's rows, then the Spin stage on the last full run's seeded
/// state (`$CARGO_TARGET_DIR/bench/latest`, which it changes: its creates add prescriptions),
/// printed: to check a change for Spin without the whole run.
pub fn spin_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let dir = last_seeded()?;
    crate::project::build()?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    let peer = peer::rows(&settings, &dir, &mut rows, &mut notes)?;
    let baselines = scenarios::Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &peer.rates,
        peer_rss_mib: peer.rss_mib,
    };
    let stage = spin::rows(&settings, &dir, &baselines, &mut rows, &mut notes);
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    stage
}

/// `cargo xtask bench libsql`: the peer's rows, then the libSQL stage alone (real Spin, remote and
/// embedded-replica rows with their round trips; no local rows to compare with), printed, in
/// `$CARGO_TARGET_DIR/bench/libsql-only`.
pub fn libsql_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let dir = fresh_dir("libsql-only")?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    let peer = peer::rows(&settings, &dir, &mut rows, &mut notes)?;
    let baselines = scenarios::Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &peer.rates,
        peer_rss_mib: peer.rss_mib,
    };
    // The rows measured before a failure are printed too (a replica's row can meet a log
    // compaction half an hour into the stage).
    let stage = libsql::rows(
        &settings,
        &dir,
        &Default::default(),
        &baselines,
        &mut rows,
        &mut notes,
    );
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    stage
}

/// `cargo xtask bench constancias`: the NOM-151 stage alone on the last full run's seeded state
/// (which it changes: its creates and burns add documents), printed.
pub fn constancias_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let dir = last_seeded()?;
    crate::project::build()?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    constancias::rows(&settings, &dir, &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
}

/// `cargo xtask bench jobs`: the background jobs' rows alone on the last full run's seeded state
/// (which they change: their creates add prescriptions), printed.
pub fn jobs_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let dir = last_seeded()?;
    crate::project::build()?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    jobs::rows(&settings, &dir, &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
}

/// `cargo xtask bench efirma`: the e.firma stage alone on the last full run's seeded state (which
/// it changes: its drafts and creates add prescriptions), printed.
pub fn efirma_only() -> Result {
    let dir = last_seeded()?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    efirma::rows(&dir, &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
}

/// The last full run's directory, `$CARGO_TARGET_DIR/bench/latest`, when it holds a seeded app.
fn last_seeded() -> Result<PathBuf> {
    let dir = target_dir().join("bench").join("latest");
    if !dir.join("app-state").is_dir() || !dir.join("seed").is_dir() {
        return Err(format!(
            "no seeded state in {}: run `cargo xtask bench` once first",
            dir.display()
        ));
    }
    Ok(dir)
}

/// `$CARGO_TARGET_DIR/bench/<name>`, emptied.
fn fresh_dir(name: &str) -> Result<PathBuf> {
    let dir = target_dir().join("bench").join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn startup(dir: &Path, rows: &mut Vec<Row>, notes: &mut Vec<String>) -> Result {
    rows.push(Row::section(
        "Start-up (process start to the first 200 of GET /api/v2/hospital/, fresh state dir)",
    ));
    let measure = |name: &str, cache: &Path| -> Result<(Duration, f64)> {
        let state = dir.join(format!("startup-{name}"));
        let port = procs::free_port()?;
        let cmd = app_command(dir, &state, cache, &format!("127.0.0.1:{port}"));
        let (took, mut child) = procs::time_to_first_200(
            cmd,
            port,
            READY_PATH,
            &[ADMIN_HEADER],
            &dir.join(format!("startup-{name}.log")),
        )?;
        std::thread::sleep(Duration::from_millis(500));
        let rss = procs::proc_status_kib(child.id(), "VmRSS") as f64 / 1024.0;
        let _ = child.kill();
        let _ = child.wait();
        let _ = std::fs::remove_dir_all(&state);
        Ok((took, rss))
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut cold = Vec::new();
    for i in 0..3 {
        let cache = dir.join(format!("cold-cache-{i}"));
        let (took, _) = measure(&format!("cold-{i}"), &cache)?;
        let _ = std::fs::remove_dir_all(&cache);
        cold.push(took.as_secs_f64() * 1000.0);
    }
    let cache = dir.join("cache");
    measure("warm-up", &cache)?;
    let (mut warm, mut idle) = (Vec::new(), Vec::new());
    for i in 0..5 {
        let (took, rss) = measure(&format!("cached-{i}"), &cache)?;
        warm.push(took.as_secs_f64() * 1000.0);
        idle.push(rss);
    }
    let (cold, warm, idle) = (median(cold), median(warm), median(idle));
    rows.push(Row {
        name: "start-up without the compiled-code cache (median of 3)".into(),
        result: ms(cold),
        ..Row::default()
    });
    rows.push(Row {
        name: "start-up with the compiled-code cache (median of 5)".into(),
        result: ms(warm),
        ratios: vec![(cold / warm, "faster than without".into())],
        targets: vec![target("≤ 100 ms", warm <= 100.0)],
        ..Row::default()
    });
    rows.push(Row {
        name: "idle RSS after start-up (VmRSS 0.5 s after the first 200)".into(),
        result: format!("{idle:.1} MiB"),
        targets: vec![target("≤ 64 MiB", idle <= 64.0)],
        ..Row::default()
    });
    notes.push(format!(
        "Start-up: `receta up` on the app's `spin.toml` with a fresh state dir (so the migrations \
         run too), polled every millisecond. Without the cache every component is composed and \
         compiled; with it, the compiled code is loaded from `RECETA_CACHE_DIR`. Machine: {}.",
        machine()
    ));
    Ok(())
}

fn sizes(rows: &mut Vec<Row>) -> Result {
    rows.push(Row::section("Component sizes (release, wasm32-wasip2)"));
    let mut total = 0;
    for name in [
        "gateway",
        "auth",
        "catalog",
        "patients",
        "prescriptions",
        "pharmacies",
        "notifications",
        "constancias",
    ] {
        let bytes = std::fs::metadata(wasm(name))
            .map_err(|e| format!("{name}.wasm: {e}"))?
            .len();
        total += bytes;
        rows.push(Row {
            name: format!("`{name}.wasm`"),
            result: format!("{} KiB", thousands(bytes as f64 / 1024.0)),
            ..Row::default()
        });
    }
    rows.push(Row {
        name: "the HTTP app (the gateway and its seven dependencies, composed at load)".into(),
        result: format!("{} KiB", thousands(total as f64 / 1024.0)),
        ..Row::default()
    });
    let worker = std::fs::metadata(wasm("outbox_worker"))
        .map_err(|e| format!("outbox_worker.wasm: {e}"))?
        .len();
    rows.push(Row {
        name: "`outbox_worker.wasm` (the cron trigger, composed with `notifications`, `constancias`, `pharmacies` and `prescriptions`)".into(),
        result: format!("{} KiB", thousands(worker as f64 / 1024.0)),
        ..Row::default()
    });
    let hello = std::fs::metadata(wasm("hello"))
        .map_err(|e| e.to_string())?
        .len();
    rows.push(Row {
        name: "`hello.wasm` (the trivial component)".into(),
        result: format!("{} KiB", thousands(hello as f64 / 1024.0)),
        ..Row::default()
    });
    Ok(())
}

/// Installs `wrk` with apt-get when it is missing.
fn ensure_wrk() -> Result {
    if on_path("wrk") {
        return Ok(());
    }
    eprintln!("xtask bench: installing wrk with apt-get");
    crate::project::apt_install(&["wrk"])
}
