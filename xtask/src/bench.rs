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
//!    database without and with a timestamp authority on loopback, and the stamping rate.
//!
//! Every load comes from `wrk` (installed with apt-get when missing) on loopback: fixed
//! connections, a warm-up run, then measured runs; the median run is reported. The table goes to
//! stdout and `docs/bench.md` (when the Spin or libSQL stage fails, to the bench directory instead, with
//! the failure in its notes, and the command fails). Environment: `RECETA_BENCH_SECONDS` (per
//! run, 5), `RECETA_BENCH_RUNS` (3), `RECETA_BENCH_CONNS` (`2,8`), `RECETA_BENCH_PRESCRIPTIONS`
//! (50000).
//!
//! This file: the driver, the ceilings and peers, start-up and sizes; what the stages share is in
//! `bench/` (harness, settings, wrk, procs, scripts, report).

mod app;
mod constancias;
mod efirma;
mod harness;
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
use std::process::Command;
use std::time::Duration;

use procs::{Banner, Server};
use report::{Row, Target, document, loadavg, machine, ms, thousands};
use scenarios::at;

use crate::project::{Result, WASM_TARGET, cargo, host_binary, on_path, root, run, target_dir};
use harness::{
    ADMIN_HEADER, READY_PATH, app_command, bench_binary, helper, key_values, load_rows, spread,
    value,
};
use settings::Settings;

/// wasmtime-cli, the runtime's own reference server (`wasmtime serve`).
const WASMTIME_VERSION: &str = "48.0.8";

/// Only what `wasmtime serve` needs (a default-features build takes far longer to compile; `serve`
/// does not build without `component-model-async`); no `profiling` (its call hook would slow the
/// reference down).
const WASMTIME_FEATURES: &str = "run,serve,component-model-async,cranelift,cache,config,parallel-compilation,pooling-allocator,component-model";

/// PDF renders per measurement.
const PDF_RENDERS: u32 = 1000;

/// Throughput measurements kept for the ratios.
#[derive(Default)]
struct Ceilings {
    hyper: Vec<(u32, f64)>,
    wasmtime: Vec<(u32, f64)>,
    hello: Vec<(u32, f64)>,
    sqlite_tps: f64,
}

pub fn bench() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let wasmtime = ensure_wasmtime_cli()?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;

    let dir = fresh_dir("latest")?;
    eprintln!("xtask bench: working in {}", dir.display());
    let load_before = loadavg();
    let started = std::time::Instant::now();

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut ceilings = Ceilings::default();

    peers(
        &settings,
        &dir,
        &wasmtime,
        &mut rows,
        &mut ceilings,
        &mut notes,
    )?;
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
    let libsql = libsql::rows(&settings, &dir, &local, &mut rows, &mut notes);
    if let Err(e) = &libsql {
        notes.push(format!("The libSQL stage did not complete: {e}"));
    }
    let stamping = constancias::rows(&settings, &dir, &mut rows, &mut notes);
    if let Err(e) = &stamping {
        notes.push(format!("The NOM-151 stage did not complete: {e}"));
    }
    let signing = efirma::rows(&dir, &mut rows, &mut notes);
    if let Err(e) = &signing {
        notes.push(format!("The e.firma stage did not complete: {e}"));
    }
    let stages = on_spin.and(libsql).and(stamping).and(signing);
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
    spin::rows(&settings, &dir, &baselines, &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
}

/// `cargo xtask bench libsql`: the libSQL stage alone (remote and embedded-replica rows with their
/// round trips; no local rows to compare with), printed, in `$CARGO_TARGET_DIR/bench/libsql-only`.
pub fn libsql_only() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let dir = fresh_dir("libsql-only")?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;
    let (mut rows, mut notes) = (Vec::new(), Vec::new());
    libsql::rows(&settings, &dir, &Default::default(), &mut rows, &mut notes)?;
    println!("{}\n{}", report::markdown(&rows), notes.join("\n\n"));
    Ok(())
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

fn wasm(name: &str) -> PathBuf {
    root()
        .join("target")
        .join(WASM_TARGET)
        .join("release")
        .join(format!("{name}.wasm"))
}

fn target(text: impl Into<String>, met: bool) -> Target {
    Target {
        text: text.into(),
        met,
    }
}

fn peers(
    settings: &Settings,
    dir: &Path,
    wasmtime: &Path,
    rows: &mut Vec<Row>,
    ceilings: &mut Ceilings,
    notes: &mut Vec<String>,
) -> Result {
    rows.push(Row::section("Ceilings and peers (same run, same machine)"));
    let conns = settings.conns.clone();

    // The HTTP stack's own limit.
    let mut cmd = Command::new(bench_binary());
    cmd.args(["hyper-hello", "--listen", "127.0.0.1:0"]);
    let hyper = Server::start(cmd, Banner::Stdout, &dir.join("hyper.log"), "/", &[])?;
    ceilings.hyper = load_rows(
        settings,
        &hyper,
        "native hyper \"hello\" (the HTTP stack's limit)",
        "/",
        &[],
        None,
        &conns,
        |_, _, _| {},
        rows,
    )?;
    hyper.stop();

    // The runtime's own reference server, same .wasm.
    let mut cmd = Command::new(wasmtime);
    cmd.args(["serve", "-S", "cli", "--addr", "127.0.0.1:0"])
        .arg(wasm("hello"));
    let serve = Server::start(
        cmd,
        Banner::Stderr,
        &dir.join("wasmtime-serve.log"),
        "/",
        &[],
    )?;
    let hyper_rps = ceilings.hyper.clone();
    ceilings.wasmtime = load_rows(
        settings,
        &serve,
        "`hello` component under `wasmtime serve` 48",
        "/",
        &[],
        None,
        &conns,
        |c, run, row| {
            if let Some(h) = at(&hyper_rps, c) {
                row.ratios.push((run.rps / h, "of native hyper".into()));
            }
        },
        rows,
    )?;
    serve.stop();

    // The same component through our host.
    let fixture = fixture_host(dir)?;
    let wasmtime_rps = ceilings.wasmtime.clone();
    let min_conns = conns.iter().copied().min().unwrap_or(2);
    ceilings.hello = load_rows(
        settings,
        &fixture,
        "`hello` component through `receta`",
        "/",
        &[],
        None,
        &conns,
        |c, run, row| {
            if let Some(h) = at(&hyper_rps, c) {
                let r = run.rps / h;
                row.ratios.push((r, "of native hyper".into()));
                row.targets.push(target("≥ 35% of hyper", r >= 0.35));
            }
            if let Some(w) = at(&wasmtime_rps, c) {
                let r = run.rps / w;
                row.ratios.push((r, "of wasmtime serve".into()));
                row.targets.push(target("≥ 1.2× wasmtime serve", r >= 1.2));
            }
            if c == min_conns {
                row.targets.push(target(
                    format!("p99 ≤ 2 ms at {c} conns"),
                    run.p99_ms <= 2.0,
                ));
            }
        },
        rows,
    )?;
    // The same as a WASIp3 handler, its instances reused (`spin up`'s defaults), as the gateway's.
    let hello_p2 = ceilings.hello.clone();
    load_rows(
        settings,
        &fixture,
        "`hello-p3` component (WASIp3, instances reused with the default flags) through `receta`",
        "/p3/",
        &[],
        None,
        &conns,
        |c, run, row| {
            if let Some(h) = at(&hello_p2, c) {
                row.ratios
                    .push((run.rps / h, "of the WASIp2 `hello`".into()));
            }
        },
        rows,
    )?;

    // PDF render time in the component and natively.
    let path = format!("/pdf/run?renders={PDF_RENDERS}");
    let (status, body) = procs::get(&fixture.url, &path, &[])?;
    if status != 200 {
        return Err(format!(
            "pdfbench answered {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    let in_wasm = key_values(&String::from_utf8_lossy(&body));
    let (status, body) = procs::get(&fixture.url, &format!("/pdf/run?seals={PDF_RENDERS}"), &[])?;
    if status != 200 {
        return Err(format!("pdfbench seals answered {status}"));
    }
    let seals = key_values(&String::from_utf8_lossy(&body));
    fixture.stop();
    let native = helper(&["pdf-native", "--renders", &PDF_RENDERS.to_string()])?;
    let wasm_ms = value(&in_wasm, "median_ns")? / 1e6;
    let native_ms = value(&native, "median_ns")? / 1e6;
    rows.push(Row {
        name: format!("PDF render natively (median of {PDF_RENDERS})"),
        result: ms(native_ms),
        p99_ms: Some(value(&native, "p99_ns")? / 1e6),
        ..Row::default()
    });
    rows.push(Row {
        name: format!("PDF render in the component (median of {PDF_RENDERS})"),
        result: ms(wasm_ms),
        p99_ms: Some(value(&in_wasm, "p99_ns")? / 1e6),
        ratios: vec![(native_ms / wasm_ms, "of native speed".into())],
        targets: vec![target("≤ 2 ms", wasm_ms <= 2.0)],
        ..Row::default()
    });
    notes.push(format!(
        "PDF: rxpdf's sample prescription (Letter, five medications, both logos, {} bytes).",
        value(&native, "bytes")?
    ));
    rows.push(Row {
        name: format!(
            "Seal in the component: Ed25519 key from its seed + signature (median of {PDF_RENDERS})"
        ),
        result: ms(value(&seals, "median_ns")? / 1e6),
        p99_ms: Some(value(&seals, "p99_ns")? / 1e6),
        ..Row::default()
    });

    // Raw SQLite durable transactions on the same disk, the host's pragmas.
    let raw = dir.join("raw-sqlite");
    std::fs::create_dir_all(&raw).map_err(|e| e.to_string())?;
    let mut runs = Vec::new();
    for i in 0..settings.runs {
        let db = raw.join(format!("tps-{i}.db"));
        let kv = helper(&[
            "sqlite-tps",
            "--db",
            &db.to_string_lossy(),
            "--seconds",
            &settings.seconds.to_string(),
        ])?;
        runs.push((
            value(&kv, "tps")?,
            value(&kv, "p50_ns")? / 1e6,
            value(&kv, "p99_ns")? / 1e6,
        ));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let all: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let (tps, p50, p99) = runs[runs.len() / 2];
    ceilings.sqlite_tps = tps;
    rows.push(Row {
        name: "raw SQLite: one small INSERT per transaction (WAL, synchronous=FULL, as the host)"
            .into(),
        conns: Some(1),
        result: format!("{} tx/s{}", thousands(tps), spread(&all)),
        p50_ms: Some(p50),
        p99_ms: Some(p99),
        ..Row::default()
    });
    let full = helper(&[
        "sqlite-tps",
        "--db",
        &raw.join("tps-normal.db").to_string_lossy(),
        "--seconds",
        &settings.seconds.to_string(),
        "--synchronous",
        "NORMAL",
    ])?;
    notes.push(format!(
        "Raw SQLite with `synchronous=NORMAL` (no fsync per commit, not what the host runs): {} tx/s, \
         p50 {}. The host's setting (WAL, `synchronous=FULL`) flushes every commit, so an accepted \
         prescription survives a crash of the machine too (host/README.md).",
        thousands(value(&full, "tps")?),
        ms(value(&full, "p50_ns")? / 1e6)
    ));
    Ok(())
}

/// Our host on the bench fixture (`hello` at `/`, `pdfbench` at `/pdf/`).
fn fixture_host(dir: &Path) -> Result<Server> {
    let state = dir.join("fixture-state");
    let mut cmd = Command::new(host_binary());
    cmd.arg("up")
        .args(["--listen", "127.0.0.1:0", "--state-dir"])
        .arg(&state)
        .arg("--from")
        .arg(root().join("tests/fixtures/bench/spin.toml"))
        .env("RECETA_CACHE_DIR", dir.join("cache"));
    Server::start(cmd, Banner::Stdout, &dir.join("fixture-host.log"), "/", &[])
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
        "notifications",
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
        name: "the HTTP app (the gateway and its five dependencies, composed at load)".into(),
        result: format!("{} KiB", thousands(total as f64 / 1024.0)),
        ..Row::default()
    });
    let worker = std::fs::metadata(wasm("outbox_worker"))
        .map_err(|e| format!("outbox_worker.wasm: {e}"))?
        .len();
    rows.push(Row {
        name: "`outbox_worker.wasm` (the cron trigger, composed with `notifications`, `pharmacies` and `prescriptions`)".into(),
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

/// `wasmtime` 48 under `~/.cache/receta/wasmtime-cli`, installed with `cargo install` the first time.
fn ensure_wasmtime_cli() -> Result<PathBuf> {
    let home = std::env::var_os("HOME").ok_or("HOME is not set")?;
    let root_dir = PathBuf::from(home).join(".cache/receta/wasmtime-cli");
    let bin = root_dir.join("bin/wasmtime");
    let version = Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if version.contains(WASMTIME_VERSION) {
        return Ok(bin);
    }
    eprintln!(
        "xtask bench: installing wasmtime-cli {WASMTIME_VERSION} into {} (once; it takes a while)",
        root_dir.display()
    );
    run(cargo()
        .args([
            "install",
            "wasmtime-cli",
            "--locked",
            "--version",
            WASMTIME_VERSION,
        ])
        .arg("--root")
        .arg(&root_dir)
        .args(["--no-default-features", "--features", WASMTIME_FEATURES])
        // Its own temporary target directory: not the project's, whose wasmtime has other features.
        .env_remove("CARGO_TARGET_DIR"))?;
    Ok(bin)
}
