//! The libSQL rows: the app with its `default` database on a libSQL server (`sqld`, a primary on
//! loopback), a detail and a create, so the cost of the network hop sits beside the local SQLite
//! rows (docs/scale-out.md).

use std::path::Path;

use super::harness::{ADMIN_HEADER, MEDICS, READY_PATH, Seed, app_command, seed_catalog, seed_rx};
use super::procs::{Banner, Server, free_port};
use super::report::{Row, thousands};
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::settings::Settings;
use crate::project::Result;

/// Prescriptions seeded before the rows are measured.
const PRESCRIPTIONS: usize = 2_000;

/// Measures the rows and appends them (and a note) to `rows`.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result {
    let dir = dir.join("libsql");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut procs = crate::cluster::Processes::default();
    let url = procs.sqld(
        "libSQL primary",
        &dir.join("primary.sqld"),
        free_port()?,
        &[],
        &dir.join("sqld.log"),
    )?;
    let config = dir.join("runtime-config.toml");
    std::fs::write(&config, crate::cluster::runtime_config(&url)).map_err(|e| e.to_string())?;
    let mut cmd = app_command(
        &dir,
        &dir.join("state"),
        &dir.join("../cache"),
        "127.0.0.1:0",
    );
    cmd.arg("--runtime-config-file").arg(&config);
    let server = Server::start(
        cmd,
        Banner::Stdout,
        &dir.join("host.log"),
        READY_PATH,
        &[ADMIN_HEADER],
    )?;

    eprintln!("xtask bench: libSQL: seeding");
    let seed_dir = dir.join("seed");
    std::fs::create_dir_all(&seed_dir).map_err(|e| e.to_string())?;
    seed_catalog(&server.url, &seed_dir, 2_000)?;
    let mut seeding = Vec::new();
    seed_rx(&server.url, &seed_dir, PRESCRIPTIONS, MEDICS, &mut seeding)?;
    let seed = Seed::read(&seed_dir)?;

    rows.push(Row::section(&format!(
        "The app on libSQL (sqld {} primary on loopback, {} prescriptions): compare with the same rows on local SQLite above",
        "0.24", thousands(PRESCRIPTIONS as f64)
    )));
    let scripts_dir = dir.join("scripts");
    std::fs::create_dir_all(&scripts_dir).map_err(|e| e.to_string())?;
    let scenarios = vec![
        Scenario::new(
            "rx-detail",
            "libSQL: GET /api/v2/rx-endpoint/&lt;signature&gt;/",
            Load::Rotated(
                seed.per_signature(PRESCRIPTIONS, |s| format!("/api/v2/rx-endpoint/{s}/")),
            ),
        ),
        Scenario::new(
            "rx-create",
            "libSQL: POST /api/v2/rx-endpoint/ (5 medications)",
            Load::Rotated(seed.rx_creates()),
        ),
    ];
    let baselines = Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &Default::default(),
        peer_rss_mib: None,
    };
    measure(
        settings,
        &server,
        &scripts_dir,
        &baselines,
        scenarios,
        &mut Measured::default(),
        rows,
    )?;
    server.stop();
    notes.push(format!(
        "libSQL rows: the app's `default` database on `sqld` (libSQL's server) on loopback, \
         through the host's `type = \"libsql\"` backend; every statement is one HTTP round trip \
         (Hrana), so a request costs its statement count in round trips. On libSQL: {}",
        seeding.join(" ")
    ));
    Ok(())
}
