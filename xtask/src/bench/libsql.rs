//! The libSQL rows: the app with its `default` database on a libSQL server (`sqld`, a primary on
//! loopback), a detail and a create, first through the remote backend (every statement a round
//! trip, as on Spin), then on a node with an embedded replica (reads from its local copy, writes to
//! the primary), beside the same rows on a local file (docs/scale-out.md). Each row says how many
//! HTTP round trips to the server a request cost, read from `sqld`'s own metrics.

use std::path::Path;

use super::harness::{ADMIN_HEADER, MEDICS, READY_PATH, Seed, app_command, seed_catalog, seed_rx};
use super::procs::{Banner, Server, free_port, get, send};
use super::report::{Row, thousands};
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::scripts::Req;
use super::settings::Settings;
use crate::cluster::{Processes, SYNC_MS, replica_runtime_config, runtime_config};
use crate::project::Result;

/// Prescriptions seeded before the rows are measured.
const PRESCRIPTIONS: usize = 2_000;
/// Requests sent one at a time to count a row's round trips.
const COUNTED: usize = 200;

/// Measures the rows and appends them (and a note) to `rows`; `local` holds the local-file rows
/// of this run (`rx-detail`, `rx-create`) that the replica's rows are held against.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    local: &Measured,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result {
    let dir = dir.join("libsql");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut procs = Processes::default();
    let admin = format!("http://127.0.0.1:{}", free_port()?);
    let url = procs.sqld(
        "libSQL primary",
        &dir.join("primary.sqld"),
        free_port()?,
        &["--admin-listen-addr", admin.trim_start_matches("http://")],
        &dir.join("sqld.log"),
    )?;
    let remote_config = dir.join("runtime-config.toml");
    std::fs::write(&remote_config, runtime_config(&url)).map_err(|e| e.to_string())?;
    let server = node(&dir, "state", &remote_config)?;

    eprintln!("xtask bench: libSQL: seeding");
    let seed_dir = dir.join("seed");
    std::fs::create_dir_all(&seed_dir).map_err(|e| e.to_string())?;
    seed_catalog(&server.url, &seed_dir, 2_000)?;
    let mut seeding = Vec::new();
    seed_rx(&server.url, &seed_dir, PRESCRIPTIONS, MEDICS, &mut seeding)?;
    let seed = Seed::read(&seed_dir)?;
    let details = || seed.per_signature(PRESCRIPTIONS, |s| format!("/api/v2/rx-endpoint/{s}/"));

    rows.push(Row::section(&format!(
        "The app on libSQL (sqld {} primary on loopback, {} prescriptions): compare with the same rows on local SQLite above",
        "0.24", thousands(PRESCRIPTIONS as f64)
    )));
    let scripts_dir = dir.join("scripts");
    std::fs::create_dir_all(&scripts_dir).map_err(|e| e.to_string())?;
    let baselines = Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &Default::default(),
        peer_rss_mib: None,
    };
    let mut measured = Measured::with_rows_of(local);
    let mut stage = |server: &Server, scenario: Scenario, rows: &mut Vec<Row>| -> Result {
        let reqs = match &scenario.load {
            Load::Rotated(reqs) => reqs.clone(),
            Load::Path(..) => Vec::new(),
        };
        let first = rows.len();
        measure(
            settings,
            server,
            &scripts_dir,
            &baselines,
            vec![scenario],
            &mut measured,
            rows,
        )?;
        let trips = round_trips(&admin, server, &reqs)?;
        for row in &mut rows[first..] {
            row.round_trips = Some(trips);
        }
        Ok(())
    };
    stage(
        &server,
        Scenario::new(
            "libsql-rx-detail",
            "libSQL, remote (every statement sent): GET /api/v2/rx-endpoint/&lt;signature&gt;/",
            Load::Rotated(details()),
        ),
        rows,
    )?;
    stage(
        &server,
        Scenario::new(
            "libsql-rx-create",
            "libSQL, remote (every statement sent): POST /api/v2/rx-endpoint/ (5 medications)",
            Load::Rotated(seed.rx_creates()),
        ),
        rows,
    )?;
    server.stop();

    // The same database through a node with an embedded replica.
    let replica_config = dir.join("replica-config.toml");
    let replica = dir.join("replica-state/replica/app.db");
    std::fs::write(
        &replica_config,
        replica_runtime_config(&url, &replica, SYNC_MS),
    )
    .map_err(|e| e.to_string())?;
    let server = node(&dir, "replica-state", &replica_config)?;
    stage(
        &server,
        Scenario::new(
            "replica-rx-detail",
            "libSQL, embedded replica (reads local): GET /api/v2/rx-endpoint/&lt;signature&gt;/",
            Load::Rotated(details()),
        )
        .vs_row("rx-detail", "of the local file's row", Some(0.5)),
        rows,
    )?;
    stage(
        &server,
        Scenario::new(
            "replica-rx-create",
            "libSQL, embedded replica (writes to the primary): POST /api/v2/rx-endpoint/ (5 medications)",
            Load::Rotated(seed.rx_creates()),
        )
        .vs_row("rx-create", "of the local file's row", Some(0.25)),
        rows,
    )?;
    server.stop();
    notes.push(format!(
        "libSQL rows: the app's `default` database on `sqld` (libSQL's server) on loopback. \
         Remote: the host's `type = \"libsql\"` backend as Spin's, every statement one HTTP round \
         trip (Hrana). Embedded replica (`replica_path`, this host's extension): reads from a local \
         copy pulled every {SYNC_MS} ms and up to each of the node's own writes; writes and \
         transactions sent to the primary, a transaction's batched writes held back and sent \
         together (docs/scale-out.md, \"Round trips\"). Round trips per request: \
         `sqld`'s user HTTP responses (its `/metrics`) over {COUNTED} requests sent one at a time \
         after the row, the replica's periodic pulls included. On libSQL: {}",
        seeding.join(" ")
    ));
    Ok(())
}

/// A node of the app on the runtime config `config`, its state in `dir/state`.
fn node(dir: &Path, state: &str, config: &Path) -> Result<Server> {
    let mut cmd = app_command(dir, &dir.join(state), &dir.join("../cache"), "127.0.0.1:0");
    cmd.arg("--runtime-config-file").arg(config);
    Server::start(
        cmd,
        Banner::Stdout,
        &dir.join(format!("{state}.log")),
        READY_PATH,
        &[ADMIN_HEADER],
    )
}

/// HTTP round trips to `sqld` per request: its user-API responses counted by its metrics
/// (`admin`'s `/metrics`) over [`COUNTED`] of `reqs` sent one at a time.
fn round_trips(admin: &str, server: &Server, reqs: &[Req]) -> Result<f64> {
    if reqs.is_empty() {
        return Err("a row without requests to count".into());
    }
    let before = served(admin)?;
    for req in reqs.iter().cycle().take(COUNTED) {
        let token = format!("Token {}", req.token);
        let (status, body) = send(
            &server.url,
            req.method,
            &req.path,
            &[("Authorization", &token)],
            req.body.as_deref(),
        )?;
        if !(200..300).contains(&status) {
            return Err(format!(
                "{} {} answered {status} while counting round trips: {}",
                req.method,
                req.path,
                String::from_utf8_lossy(&body)
            ));
        }
    }
    Ok((served(admin)? - before) / COUNTED as f64)
}

/// `sqld`'s count of user-API HTTP responses (Hrana and gRPC), from its Prometheus metrics.
fn served(admin: &str) -> Result<f64> {
    let (status, body) = get(admin, "/metrics", &[])?;
    if status != 200 {
        return Err(format!("sqld's /metrics answered {status}"));
    }
    Ok(String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| l.starts_with("libsql_server_user_http_response{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}
