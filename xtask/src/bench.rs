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
//!    idle RSS, component sizes;
//! 3. the app (`spin.toml`) on a fresh state dir, seeded through the API (10 hospitals, 100
//!    medics, 10,000 patients, then 1,000 and 50,000 prescriptions): lists, searches, details,
//!    PDFs and creates, with the list and search measured at 1,000 and at 50,000 prescriptions.
//!
//! Every load comes from `wrk` (installed with apt-get when missing) on loopback: fixed
//! connections, a warm-up run, then measured runs; the median run is reported. The table goes to
//! stdout and `docs/bench.md`. Environment: `RECETA_BENCH_SECONDS` (per run, 5),
//! `RECETA_BENCH_RUNS` (3), `RECETA_BENCH_CONNS` (`2,8`), `RECETA_BENCH_PRESCRIPTIONS` (50000).
//!
//! One file (over 500 lines): the bench's stages in the order they run, each a function; what they share is in `bench/` (harness, settings, wrk, procs, report).

mod harness;
mod libsql;
mod procs;
mod report;
mod scripts;
mod settings;
mod wrk;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use procs::{Banner, Server};
use report::{Row, Target, ms, thousands};
use scripts::Req;

use crate::project::{Result, WASM_TARGET, cargo, host_binary, on_path, root, run, target_dir};
use harness::{
    ADMIN_HEADER, ADMIN_TOKEN, FLOOR_PATH, MEDICS, READY_PATH, Seed, app_command, bench_binary,
    helper, helper_text, key_values, load_rows, seed_rx, spread, value,
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

const LIGHT: usize = 10;

/// Searches of the scenarios: surnames, rotated over the medics.
const SURNAMES: &[&str] = &[
    "García",
    "Hernández",
    "López",
    "Martínez",
    "Pérez",
    "Sánchez",
];

/// Throughput measurements kept for the ratios.
#[derive(Default)]
struct Ceilings {
    hyper: Vec<(u32, f64)>,
    wasmtime: Vec<(u32, f64)>,
    hello: Vec<(u32, f64)>,
    sqlite_tps: f64,
}

fn at(list: &[(u32, f64)], conns: u32) -> Option<f64> {
    list.iter().find(|(c, _)| *c == conns).map(|(_, v)| *v)
}

pub fn bench() -> Result {
    let settings = Settings::from_env()?;
    ensure_wrk()?;
    let wasmtime = ensure_wasmtime_cli()?;
    crate::project::build()?;
    run(cargo().args(["build", "--release", "-p", "receta-bench"]))?;

    let dir = target_dir().join("bench").join("latest");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
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
    app(&settings, &dir, &mut rows, &ceilings, &mut notes)?;
    libsql::rows(&settings, &dir, &mut rows, &mut notes)?;
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
    let out = root().join("docs").join("bench.md");
    std::fs::write(&out, &doc).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("xtask bench: wrote {}", out.display());
    Ok(())
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

/// The pharmacy of the pharmacy rows and its dispensable prescriptions (`seed-pharmacy`).
struct Dispensable {
    token: String,
    /// (signature, the medication's id).
    prescriptions: Vec<(String, i64)>,
}

impl Dispensable {
    fn read(dir: &Path) -> Result<Dispensable> {
        let text = std::fs::read_to_string(dir.join("pharmacy.tsv"))
            .map_err(|e| format!("pharmacy.tsv: {e}"))?;
        let mut lines = text.lines();
        let token = lines.next().unwrap_or_default().to_string();
        let prescriptions = lines
            .filter_map(|l| {
                let (s, m) = l.split_once('\t')?;
                Some((s.to_string(), m.parse().ok()?))
            })
            .collect();
        Ok(Dispensable {
            token,
            prescriptions,
        })
    }
}

fn app(
    settings: &Settings,
    dir: &Path,
    rows: &mut Vec<Row>,
    ceilings: &Ceilings,
    notes: &mut Vec<String>,
) -> Result {
    let state = dir.join("app-state");
    let seed_dir = dir.join("seed");
    std::fs::create_dir_all(&seed_dir).map_err(|e| e.to_string())?;
    let scripts_dir = dir.join("scripts");
    std::fs::create_dir_all(&scripts_dir).map_err(|e| e.to_string())?;
    let server = Server::start(
        app_command(dir, &state, &dir.join("cache"), "127.0.0.1:0"),
        Banner::Stdout,
        &dir.join("app-host.log"),
        READY_PATH,
        &[ADMIN_HEADER],
    )?;

    eprintln!("xtask bench: seeding hospitals, medics and patients");
    let seeded_at = std::time::Instant::now();
    let kv = helper(&[
        "seed-catalog",
        "--url",
        &server.url,
        "--admin-token",
        ADMIN_TOKEN,
        "--out",
        &seed_dir.to_string_lossy(),
        "--hospitals",
        "10",
        "--medics",
        &MEDICS.to_string(),
        "--patients",
        "10000",
        "--threads",
        "4",
    ])?;
    notes.push(format!(
        "Seeding: {} hospitals, {} medics (each a MEMBER of one hospital; Argon2id password \
         hashing), {} patients through the API in {:.0} s.",
        value(&kv, "hospitals")?,
        value(&kv, "medics")?,
        thousands(value(&kv, "patients")?),
        seeded_at.elapsed().as_secs_f64()
    ));

    let hello = |c: u32| at(&ceilings.hello, c);
    let conns = settings.conns.clone();
    let first = 1000.min(settings.prescriptions);

    // Stage 1: lists and searches at 1,000 prescriptions, 10 per medic. The last LIGHT medics get
    // no more afterwards: their lists measure the table's growth alone, while the other medics'
    // lists also grow with their own history.
    let light = MEDICS - LIGHT..MEDICS;
    let heavy = 0..MEDICS - LIGHT;
    seed_rx(&server.url, &seed_dir, first, MEDICS, notes)?;
    let seed = Seed::read(&seed_dir)?;
    let flat_list = scripts::write(
        &scripts_dir,
        "rx-list-10",
        &seed.per_medic(light.clone(), |_| "/api/v2/rx-endpoint/?limit=10".into()),
    )?;
    let flat_search = scripts::write(
        &scripts_dir,
        "rx-search-all-10",
        &seed.per_medic(light.clone(), |_| {
            "/api/v2/rx-endpoint/?search=correo.mx&limit=10".into()
        }),
    )?;
    let flat_rows = |name: &str| format!("{name} at {} prescriptions", thousands(first as f64));
    rows.push(Row::section(&format!(
        "The app at {} prescriptions (10 hospitals, 100 medics, 10,000 patients)",
        thousands(first as f64)
    )));
    let list_1k = load_rows(
        settings,
        &server,
        &flat_rows("GET /api/v2/rx-endpoint/?limit=10, medics with 10 prescriptions,"),
        "/",
        &[],
        Some(&flat_list),
        &conns,
        |_, _, _| {},
        rows,
    )?;
    let search_1k = load_rows(
        settings,
        &server,
        &flat_rows(
            "GET /api/v2/rx-endpoint/?search=correo.mx&limit=10 (matches all 10), medics with 10 prescriptions,",
        ),
        "/",
        &[],
        Some(&flat_search),
        &conns,
        |_, _, _| {},
        rows,
    )?;

    // Stage 2: everything at the full size.
    seed_rx(
        &server.url,
        &seed_dir,
        settings.prescriptions,
        heavy.len(),
        notes,
    )?;
    let seed = Seed::read(&seed_dir)?;
    let full = thousands(seed.signatures.len() as f64);
    rows.push(Row::section(&format!(
        "The app at {full} prescriptions (ratios: to the `hello` component through `receta`, same connections)"
    )));
    let vs_hello = |want: Option<f64>| {
        move |c: u32, run: &wrk::Run, row: &mut Row| {
            if let Some(h) = hello(c) {
                let r = run.rps / h;
                row.ratios.push((r, "of `hello`".into()));
                if let Some(want) = want {
                    row.targets.push(target(
                        format!("≥ {:.0}% of `hello`", want * 100.0),
                        r >= want,
                    ));
                }
            }
        }
    };

    load_rows(
        settings,
        &server,
        "GET /nothing: the gateway's 404 (the floor: the gateway alone, no dependency called, no SQL)",
        FLOOR_PATH,
        &[],
        None,
        &conns,
        vs_hello(None),
        rows,
    )?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/hospital/ (API admin, paginated: 10 of 10)",
        "/api/v2/hospital/",
        &[ADMIN_HEADER],
        None,
        &conns,
        vs_hello(Some(0.5)),
        rows,
    )?;
    let list = scripts::write(
        &scripts_dir,
        "rx-list",
        &seed.per_medic(heavy.clone(), |_| "/api/v2/rx-endpoint/".into()),
    )?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/rx-endpoint/ (a medic's newest 20, with medications)",
        "/",
        &[],
        Some(&list),
        &conns,
        vs_hello(Some(0.5)),
        rows,
    )?;
    let detail = scripts::write(
        &scripts_dir,
        "rx-detail",
        &seed.per_signature(2000, |s| format!("/api/v2/rx-endpoint/{s}/")),
    )?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/rx-endpoint/&lt;signature&gt;/ (2,000 signatures rotated)",
        "/",
        &[],
        Some(&detail),
        &conns,
        vs_hello(Some(0.5)),
        rows,
    )?;
    let pdf = scripts::write(
        &scripts_dir,
        "rx-pdf",
        &seed.per_signature(2000, |s| format!("/api/v2/rx/pdf/{s}/")),
    )?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/rx/pdf/&lt;signature&gt;/ (stored PDF, base64 in JSON)",
        "/",
        &[],
        Some(&pdf),
        &conns,
        vs_hello(None),
        rows,
    )?;
    // The pharmacy calls: a lookup of any prescription by signature, and (with the writes below) a
    // one-unit dispense. Each call also checks the pharmacy's rate limit and is logged (one commit).
    let kv = helper(&[
        "seed-pharmacy",
        "--url",
        &server.url,
        "--admin-token",
        ADMIN_TOKEN,
        "--out",
        &seed_dir.to_string_lossy(),
        "--prescriptions",
        "200",
    ])?;
    let dispensable = Dispensable::read(&seed_dir)?;
    notes.push(format!(
        "Pharmacy rows: one pharmacy registered through the API, and {} prescriptions of one \
         9,999-unit medication for the dispense row (each burn sells 1 unit).",
        value(&kv, "prescriptions")?
    ));
    let lookups: Vec<Req> = seed
        .per_signature(2000, |s| format!("/api/v2/pharmacy/rx/{s}"))
        .into_iter()
        .map(|r| Req {
            token: dispensable.token.clone(),
            ..r
        })
        .collect();
    let lookup = scripts::write(&scripts_dir, "pharmacy-lookup", &lookups)?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/pharmacy/rx/&lt;signature&gt; (pharmacy token, 2,000 signatures rotated, call logged)",
        "/",
        &[],
        Some(&lookup),
        &conns,
        vs_hello(None),
        rows,
    )?;
    let verifies = scripts::write(
        &scripts_dir,
        "verify",
        &seed.per_signature(2000, |s| format!("/api/v2/verify/{s}")),
    )?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/verify/&lt;signature&gt; (no token: digest + Ed25519 check, rate-limit commit)",
        "/",
        &[],
        Some(&verifies),
        &conns,
        vs_hello(None),
        rows,
    )?;
    let search = scripts::write(
        &scripts_dir,
        "rx-search",
        &seed.per_medic(heavy.clone(), |i| {
            format!(
                "/api/v2/rx-endpoint/?search={}",
                scripts::encode(SURNAMES[i % SURNAMES.len()])
            )
        }),
    )?;
    load_rows(
        settings,
        &server,
        &format!("GET /api/v2/rx-endpoint/?search=&lt;surname&gt; over the {full}"),
        "/",
        &[],
        Some(&search),
        &conns,
        vs_hello(None),
        rows,
    )?;
    let patients = scripts::write(
        &scripts_dir,
        "patient-search",
        &seed.per_medic(0..MEDICS, |i| {
            format!(
                "/api/v2/patient/?search={}",
                scripts::encode(SURNAMES[i % SURNAMES.len()])
            )
        }),
    )?;
    load_rows(
        settings,
        &server,
        "GET /api/v2/patient/?search=&lt;surname&gt; (100 patients per medic)",
        "/",
        &[],
        Some(&patients),
        &conns,
        vs_hello(None),
        rows,
    )?;

    // Flatness: the same list and search as at 1,000.
    let flat = |before: Vec<(u32, f64)>| {
        move |c: u32, run: &wrk::Run, row: &mut Row| {
            if let Some(b) = at(&before, c) {
                let r = run.rps / b;
                row.ratios.push((r, "of the same at 1,000".into()));
                row.targets
                    .push(target("flat: ≥ 80% of the same at 1,000", r >= 0.8));
            }
        }
    };
    load_rows(
        settings,
        &server,
        &format!(
            "GET /api/v2/rx-endpoint/?limit=10, the same medics (10 prescriptions each), at {full}"
        ),
        "/",
        &[],
        Some(&flat_list),
        &conns,
        flat(list_1k),
        rows,
    )?;
    let search_light = load_rows(
        settings,
        &server,
        &format!(
            "GET /api/v2/rx-endpoint/?search=correo.mx&limit=10 (matches all 10), the same medics, at {full}"
        ),
        "/",
        &[],
        Some(&flat_search),
        &conns,
        flat(search_1k),
        rows,
    )?;
    // A search tests every one of the medic's own prescriptions (`LIKE '%…%'` plus the total
    // count), reading them from `prescriptions_search_by_medic` (0011), never the whole table.
    let heavy_search = scripts::write(
        &scripts_dir,
        "rx-search-all-10-heavy",
        &seed.per_medic(heavy.clone(), |_| {
            "/api/v2/rx-endpoint/?search=correo.mx&limit=10".into()
        }),
    )?;
    let per_heavy = (seed.signatures.len() - first) / heavy.len() + first / MEDICS;
    load_rows(
        settings,
        &server,
        &format!(
            "GET /api/v2/rx-endpoint/?search=correo.mx&limit=10 (matches all), medics with ~{per_heavy} prescriptions, at {full}"
        ),
        "/",
        &[],
        Some(&heavy_search),
        &conns,
        |c, run, row| {
            if let Some(b) = at(&search_light, c) {
                row.ratios.push((
                    run.rps / b,
                    "of the same for medics with 10, same table".into(),
                ));
            }
        },
        rows,
    )?;

    // Writes last: they add rows.
    let sqlite = ceilings.sqlite_tps;
    let vs_sqlite = |want: Option<f64>| {
        move |_: u32, run: &wrk::Run, row: &mut Row| {
            let r = run.rps / sqlite;
            row.ratios.push((r, "of raw SQLite tx/s".into()));
            if let Some(want) = want {
                row.targets.push(target(
                    format!("≥ {:.0}% of raw SQLite", want * 100.0),
                    r >= want,
                ));
            }
        }
    };
    let new_patients: Vec<Req> = (0..seed.medics.len())
        .map(|i| Req {
            method: "POST",
            path: "/api/v2/patient/".into(),
            token: seed.medics[i].0.clone(),
            body: Some(format!(
                r#"{{"name":"Paciente Nuevo {i} Ramírez","email":"nuevo{i}@correo.mx","date_of_birth":"1985-04-12","gender":"F","phone":"5512345678","state":"Jalisco","zip_code":"44100"}}"#
            )),
        })
        .collect();
    let create_patient = scripts::write(&scripts_dir, "patient-create", &new_patients)?;
    load_rows(
        settings,
        &server,
        "POST /api/v2/patient/",
        "/",
        &[],
        Some(&create_patient),
        &conns,
        vs_sqlite(None),
        rows,
    )?;
    let new_rx = seed.rx_creates();
    let create_rx = scripts::write(&scripts_dir, "rx-create", &new_rx)?;
    load_rows(
        settings,
        &server,
        "POST /api/v2/rx-endpoint/ (5 medications, PDF stored, outbox row, one commit)",
        "/",
        &[],
        Some(&create_rx),
        &conns,
        vs_sqlite(Some(0.25)),
        rows,
    )?;
    let burns: Vec<Req> = dispensable
        .prescriptions
        .iter()
        .enumerate()
        .map(|(i, (signature, medication))| Req {
            method: "POST",
            path: format!("/api/v1/prescriptions/burn/{signature}"),
            token: dispensable.token.clone(),
            body: Some(format!(
                r#"{{"sales_code":"TICKET-{i}","medications":[{{"id":{medication},"bought_qty":1}}]}}"#
            )),
        })
        .collect();
    let burn = scripts::write(&scripts_dir, "pharmacy-burn", &burns)?;
    load_rows(
        settings,
        &server,
        "POST /api/v1/prescriptions/burn/&lt;signature&gt; (1 unit: event, conditional UPDATE, one commit; call logged)",
        "/",
        &[],
        Some(&burn),
        &conns,
        vs_sqlite(None),
        rows,
    )?;
    server.stop();

    let plans = helper_text(&[
        "explain",
        "--db",
        &state.join("sqlite_db.db").to_string_lossy(),
    ])?;
    notes.push(format!(
        "EXPLAIN QUERY PLAN of the statements behind these rows, on the seeded database \
         (`receta-bench explain`):\n\n```text\n{}```",
        plans
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
        name: "`outbox_worker.wasm` (the cron trigger, composed with `notifications`)".into(),
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

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, v)| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} × {cpu}")
}

fn git_revision() -> String {
    Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn document(
    settings: &Settings,
    rows: &[Row],
    notes: &[String],
    load_before: &str,
    load_after: &str,
    took: Duration,
) -> String {
    let mut doc = String::new();
    let _ = writeln!(doc, "# Benchmarks\n");
    let _ = writeln!(
        doc,
        "Made by `cargo xtask bench` (see `xtask/src/bench.rs`) at commit `{}`; the whole run \
         took {:.0} min. Every load is `wrk` on loopback from a separate process: a {} s warm-up, \
         then {} runs of {} s at a fixed number of connections; the median run is shown, ± is half \
         the spread of the runs. Machine: {}; load average {} before, {} after (other builds were \
         running: compare ratios, not absolute numbers).\n",
        git_revision(),
        took.as_secs_f64() / 60.0,
        settings.warmup_seconds,
        settings.runs,
        settings.seconds,
        machine(),
        load_before,
        load_after,
    );
    doc.push_str(&report::markdown(rows));
    doc.push_str("\n## Notes on this run\n\n");
    for note in notes {
        let _ = writeln!(doc, "- {note}\n");
    }
    doc.push('\n');
    doc.push_str(FINDINGS);
    doc
}

/// What profiling found and what was changed because of it (kept by hand, `bench/findings.md`).
const FINDINGS: &str = include_str!("bench/findings.md");

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
