//! The rows on real Spin (issues 37 and 59): the same app, state and loads as the app stage's
//! detail, search, create, pharmacy lookup and claim-then-burn, served by `spin up` on the
//! repository's `spin.toml` as the README runs it (the app migrating itself, variables as
//! `SPIN_VARIABLE_*`, and Spin's default instance reuse: no reuse flag given), beside the same rows
//! on this project's host and the Django peer, so the table says what the host adds and where the
//! app stands where its users deploy it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::app::{Dispensable, claims_then_burns, details, lookups, searches};
use super::harness::{ADMIN_HEADER, ADMIN_TOKEN, FLOOR_PATH, READY_PATH, Seed};
use super::procs::{Banner, Server};
use super::report::Row;
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::settings::Settings;
use crate::project::{Result, root};

/// On Spin, detail, search and create each at least this many times the peer at 2 connections
/// (issue 59)…
const PEER_TIMES: Option<f64> = Some(3.0);
/// … and this many at 8 (issue 89).
const PEER_TIMES_AT_8: Option<f64> = Some(5.0);

/// The preload shim's source (`bench/spin-nodelay/`): `TCP_NODELAY` on the sockets Spin accepts.
const NODELAY_SOURCE: &str = "bench/spin-nodelay/nodelay.c";

/// Measures the rows on the app stage's state dir (`app-state`, its host stopped) and appends
/// them (and a note) to `rows`.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    baselines: &Baselines,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result {
    let spins = crate::spin::locate()?;
    let data = spins.data.as_deref();
    for spin in spins.each() {
        rows_on(spin, data, None, settings, dir, baselines, rows)?;
    }
    // The floor once more without Nagle's algorithm on its sockets: the app's own part of a row.
    let floor = spins.floor.as_deref().unwrap_or(&spins.current);
    match nodelay_shim(dir) {
        Ok(shim) => rows_on(floor, data, Some(&shim), settings, dir, baselines, rows)?,
        Err(e) => notes.push(format!(
            "The Spin rows with TCP_NODELAY were not measured: {e}"
        )),
    }
    notes.push(SPIN_NOTE.to_string());
    Ok(())
}

/// Builds the preload shim ([`NODELAY_SOURCE`]) into `dir`, with the C compiler Rust links with.
fn nodelay_shim(dir: &Path) -> Result<PathBuf> {
    let shim = dir.join("spin-nodelay.so");
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let status = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&shim)
        .arg(root().join(NODELAY_SOURCE))
        .arg("-ldl")
        .status()
        .map_err(|e| format!("running {}: {e}", cc.to_string_lossy()))?;
    if !status.success() {
        return Err(format!("building {NODELAY_SOURCE} failed: {status}"));
    }
    Ok(shim)
}

/// The rows on one Spin (`spin`, its cron plugin under `data`; `nodelay`: the shim preloaded), in
/// a section of their own.
fn rows_on(
    spin: &Path,
    data: Option<&Path>,
    nodelay: Option<&Path>,
    settings: &Settings,
    dir: &Path,
    baselines: &Baselines,
    rows: &mut Vec<Row>,
) -> Result {
    let version = crate::spin::version(spin)?;
    let name = spin.file_name().unwrap_or_default().to_string_lossy();
    let variant = if nodelay.is_some() { "-nodelay" } else { "" };
    let work = dir.join(format!("{name}{variant}-work"));
    let scripts_dir = work.join("scripts");
    std::fs::create_dir_all(&scripts_dir).map_err(|e| e.to_string())?;

    let mut cmd = Command::new(spin);
    cmd.arg("up")
        .args(["--listen", "127.0.0.1:0", "--state-dir"])
        .arg(dir.join("app-state"))
        .env("SPIN_VARIABLE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("SPIN_VARIABLE_VERIFY_CALLS_PER_MINUTE", "100000000")
        .current_dir(root())
        // Its own process group: `spin up` runs each trigger as a child process, and stopping
        // the server stops them all.
        .process_group(0);
    if let Some(data) = data {
        cmd.env("XDG_DATA_HOME", data);
    }
    if let Some(shim) = nodelay {
        cmd.env("LD_PRELOAD", shim);
    }
    let server = Server::start(
        cmd,
        Banner::Stdout,
        &work.join("spin.log"),
        READY_PATH,
        &[ADMIN_HEADER],
    )?;

    let sockets = match nodelay {
        None => "",
        Some(_) => {
            ", and TCP_NODELAY forced on the sockets it accepts (`bench/spin-nodelay/`, preloaded): the app's part of each row without Spin's Nagle stall"
        }
    };
    rows.push(Row::section(&format!(
        "The app on real Spin ({version}, its pooling allocator and SQLite as shipped, default instance reuse: --max-instance-reuse-count 128, --max-instance-concurrent-reuse-count 16, --idle-instance-timeout 1s; the app stage's database{sockets}): compare with the same rows on `receta` above and the peer"
    )));
    let seed = Seed::read(&dir.join("seed"))?;
    let pharmacy = Dispensable::read(&dir.join("seed"))?;
    let scenarios = vec![
        Scenario::new(
            "floor",
            "Spin: GET /nothing (the gateway's 404: the composition instantiated, no SQL)",
            Load::Path(FLOOR_PATH, &[]),
        ),
        Scenario::new(
            "rx-detail",
            "Spin: GET /api/v2/rx-endpoint/&lt;signature&gt;/ (2,000 signatures rotated)",
            details(&seed),
        )
        .vs_peer(PEER_TIMES)
        .vs_peer_row("rx-detail", PEER_TIMES_AT_8, 8),
        Scenario::new(
            "rx-search",
            "Spin: GET /api/v2/rx-endpoint/?search=&lt;surname&gt;",
            searches(&seed),
        )
        .vs_peer(PEER_TIMES)
        .vs_peer_row("rx-search", PEER_TIMES_AT_8, 8),
        Scenario::new(
            "rx-create",
            "Spin: POST /api/v2/rx-endpoint/ (5 medications)",
            Load::Rotated(seed.rx_creates()),
        )
        .vs_peer(PEER_TIMES)
        .vs_peer_row("rx-create", PEER_TIMES_AT_8, 8),
        Scenario::new(
            "pharmacy-lookup",
            "Spin: GET /api/v2/pharmacy/rx/&lt;signature&gt; (pharmacy token, 2,000 signatures rotated)",
            lookups(&seed, &pharmacy),
        )
        .vs_row("rx-detail", "of Spin's detail", None),
        Scenario::new(
            "pharmacy-claim-burn",
            "Spin: POST /api/v2/pharmacy/rx/&lt;signature&gt;/claim/ then its burn by the holder (req/s counts each call)",
            Load::Rotated(claims_then_burns(&pharmacy)),
        ),
    ];
    let first = rows.len();
    measure(
        settings,
        &server,
        &scripts_dir,
        baselines,
        scenarios,
        &mut Measured::default(),
        rows,
    )?;
    // The peak of `spin up` itself says nothing: its HTTP trigger is a child process.
    for row in &mut rows[first..] {
        row.peak_rss_mib = None;
    }
    server.stop();
    Ok(())
}

const SPIN_NOTE: &str = "Spin rows: `spin up` (Spin 4.0.2, the floor, then Spin 4.1: the offline \
    copies of `../shared/tools/spin` unless `RECETA_SPIN_FLOOR` and `RECETA_SPIN`, or `spin` on \
    `PATH`) on the repository's \
    `spin.toml` and the app stage's state dir, after that stage's host stopped; CPU per request \
    is `spin up` and its trigger processes. The gateway is a WASIp3 handler: Spin reuses an \
    instance of the whole composition (the gateway and its dependencies) for up to 128 requests, \
    16 at once, and the components keep their clean SQLite connections across them \
    (docs/architecture.md, \"What an instance keeps\"); with `--max-instance-reuse-count 1` every \
    request pays a new composition and a new connection that parses the whole schema, as it did \
    with the WASIp2 gateway. Then the floor once more with `bench/spin-nodelay/` preloaded: \
    TCP_NODELAY on the sockets Spin accepts, which Spin does not set; without it a response \
    whose head hyper wrote before the guest's body reached it waits ~40 ms for the client's \
    delayed ACK (docs/architecture.md, \"Nagle and the delayed ACK, again, on WASIp3\"), so the \
    difference between the two sections is Spin's stall and the second is the app's own cost.";
