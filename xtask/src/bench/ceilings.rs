//! The bench's first section, ceilings and peers: the HTTP stack's limit (native hyper), the
//! runtime's reference server (`wasmtime serve`), the trivial component through this host (WASIp2
//! and WASIp3), PDF and seal times, and raw SQLite's durable transaction rate; their rates are the
//! baselines of the app's ratios.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::harness::{Measure, bench_binary, helper, key_values, load_rows, spread, value, wasm};
use super::procs::{self, Banner, Server};
use super::report::{Row, ms, target, thousands};
use super::scenarios::at;
use super::settings::Settings;
use crate::project::{Result, cargo, host_binary, root, run};

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
pub struct Ceilings {
    pub hyper: Vec<(u32, f64)>,
    pub wasmtime: Vec<(u32, f64)>,
    pub hello: Vec<(u32, f64)>,
    pub sqlite_tps: f64,
}

/// The ceilings' rows (the section "Ceilings and peers"), and their rates for the app's ratios.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    wasmtime: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result<Ceilings> {
    rows.push(Row::section("Ceilings and peers (same run, same machine)"));
    let mut ceilings = Ceilings::default();
    servers(settings, dir, wasmtime, rows, &mut ceilings)?;
    let fixture = fixture_host(dir)?;
    hello(settings, &fixture, rows, &mut ceilings)?;
    let pdf = pdf_and_seal(&fixture, rows, notes);
    fixture.stop();
    pdf?;
    ceilings.sqlite_tps = raw_sqlite(settings, dir, rows, notes)?;
    Ok(ceilings)
}

/// The HTTP stack's own limit, and the runtime's own reference server on the same `.wasm`.
fn servers(
    settings: &Settings,
    dir: &Path,
    wasmtime: &Path,
    rows: &mut Vec<Row>,
    ceilings: &mut Ceilings,
) -> Result {
    let conns = &settings.conns;

    // The HTTP stack's own limit.
    let mut cmd = Command::new(bench_binary());
    cmd.args(["hyper-hello", "--listen", "127.0.0.1:0"]);
    let hyper = Server::start(cmd, Banner::Stdout, &dir.join("hyper.log"), "/", &[])?;
    ceilings.hyper = load_rows(
        settings,
        &hyper,
        &Measure::get("native hyper \"hello\" (the HTTP stack's limit)", "/"),
        conns,
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
        &Measure::get("`hello` component under `wasmtime serve` 48", "/"),
        conns,
        |c, run, row| {
            if let Some(h) = at(&hyper_rps, c) {
                row.ratios.push((run.rps / h, "of native hyper".into()));
            }
        },
        rows,
    )?;
    serve.stop();
    Ok(())
}

/// The same component through our host, as WASIp2 and as a reused WASIp3 handler.
fn hello(
    settings: &Settings,
    fixture: &Server,
    rows: &mut Vec<Row>,
    ceilings: &mut Ceilings,
) -> Result {
    let conns = &settings.conns;
    let hyper_rps = ceilings.hyper.clone();
    let wasmtime_rps = ceilings.wasmtime.clone();
    let min_conns = conns.iter().copied().min().unwrap_or(2);
    ceilings.hello = load_rows(
        settings,
        fixture,
        &Measure::get("`hello` component through `receta`", "/"),
        conns,
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
        fixture,
        &Measure::get(
            "`hello-p3` component (WASIp3, instances reused with the default flags) through `receta`",
            "/p3/",
        ),
        conns,
        |c, run, row| {
            if let Some(h) = at(&hello_p2, c) {
                row.ratios
                    .push((run.rps / h, "of the WASIp2 `hello`".into()));
            }
        },
        rows,
    )?;

    Ok(())
}

/// PDF render time in the component and natively, and the seal's time in the component.
fn pdf_and_seal(fixture: &Server, rows: &mut Vec<Row>, notes: &mut Vec<String>) -> Result {
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

    Ok(())
}

/// Raw SQLite durable transactions on the same disk, with the host's pragmas: the rate.
fn raw_sqlite(
    settings: &Settings,
    dir: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result<f64> {
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
    Ok(tps)
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

/// `wasmtime` 48 under `~/.cache/receta/wasmtime-cli`, installed with `cargo install` the first time.
pub fn ensure_wasmtime_cli() -> Result<PathBuf> {
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
