//! The NOM-151 rows (issue 60): the app stage's database served again, once without and once with
//! a timestamp authority on loopback (`receta-test-tsa` signing in-process, `Mode::Fast`: the same
//! certificate as the tests' OpenSSL authority, without a process per reply, since a real PSC's
//! CPU is not the service's machine's), the create and the burn measured each time. With the
//! authority, the outbox worker stamps its batch every second while the rows run (the app stage's
//! documents are its backlog), so the rows show what stamping costs the requests. Then the
//! stamping rate, and where its CPU goes.

use std::path::Path;
use std::time::{Duration, Instant};

use super::app::{Dispensable, burns};
use super::harness::{ADMIN_HEADER, READY_PATH, Seed, app_command_on};
use super::procs::{Banner, Server};
use super::report::Row;
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::settings::Settings;
use super::wrk;
use crate::project::{Result, root};

/// How long the stamping rate is counted.
const WINDOW: Duration = Duration::from_secs(10);

/// Measures the rows on `dir`'s seeded app state (the app stage's) and appends them.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result {
    let seed_dir = dir.join("seed");
    let seed = Seed::read(&seed_dir)?;
    let pharmacy = Dispensable::read(&seed_dir)?;
    let scripts_dir = dir.join("scripts");
    let baselines = Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &Default::default(),
        peer_rss_mib: None,
    };
    let mut measured = Measured::default();
    rows.push(Row::section(
        "NOM-151 constancias: the create and the burn without, then with, a timestamp authority on loopback (signing in-process), the outbox worker stamping one batch a second while they run",
    ));

    let server = start(dir, &[], "constancias-off")?;
    let plain = vec![
        Scenario::new(
            "nom151-off-create",
            "POST /api/v2/rx-endpoint/ (5 medications), no timestamp authority",
            Load::Rotated(seed.rx_creates()),
        ),
        Scenario::new(
            "nom151-off-burn",
            "POST /api/v1/prescriptions/burn/&lt;signature&gt; (1 unit), no timestamp authority",
            Load::Rotated(burns(&pharmacy, false)),
        ),
    ];
    measure(
        settings,
        &server,
        &scripts_dir,
        &baselines,
        plain,
        &mut measured,
        rows,
    )?;
    server.stop();

    let tsa = receta_test_tsa::Server::start();
    tsa.set_mode(receta_test_tsa::Mode::Fast);
    let ca = tsa.authority().ca_pem();
    let url = tsa.url("/tsr");
    let origin = tsa.origin();
    let vars = [
        ("SPIN_VARIABLE_TIMESTAMP_URL", url.as_str()),
        ("SPIN_VARIABLE_TIMESTAMP_HOST", origin.as_str()),
        ("SPIN_VARIABLE_TIMESTAMP_CA", ca.as_str()),
    ];
    let server = start(dir, &vars, "constancias-on")?;
    let stamped = vec![
        Scenario::new(
            "nom151-on-create",
            "POST /api/v2/rx-endpoint/ (5 medications), `timestamp_url` set: each queues its constancia",
            Load::Rotated(seed.rx_creates()),
        )
        .vs_row("nom151-off-create", "of the same without an authority", None),
        Scenario::new(
            "nom151-on-burn",
            "POST /api/v1/prescriptions/burn/&lt;signature&gt; (1 unit), `timestamp_url` set: the receipt's constancia queued",
            Load::Rotated(burns(&pharmacy, false)),
        )
        .vs_row("nom151-off-burn", "of the same without an authority", None),
    ];
    measure(
        settings,
        &server,
        &scripts_dir,
        &baselines,
        stamped,
        &mut measured,
        rows,
    )?;

    // The backlog (every document of the app stage and of these rows) keeps the worker busy. Where
    // the CPU goes while it stamps: the host (the worker's requests, checks and commits) and the
    // authority (signing in this process's threads).
    let ticks = || {
        let host = wrk::process_ticks(server.pid()).unwrap_or(0);
        let authority = wrk::process_ticks(std::process::id()).unwrap_or(0);
        (host, authority)
    };
    let before = tsa.requests().len();
    let (host_before, authority_before) = ticks();
    let started = Instant::now();
    std::thread::sleep(WINDOW);
    let issued = tsa.requests().len() - before;
    let (host_after, authority_after) = ticks();
    let rate = issued as f64 / started.elapsed().as_secs_f64();
    server.stop();
    let per_stamp_ms =
        |ticks: u64| ticks as f64 / wrk::clock_ticks_per_second() * 1000.0 / issued.max(1) as f64;
    let host_ms = per_stamp_ms(host_after - host_before);
    let authority_ms = per_stamp_ms(authority_after - authority_before);
    rows.push(Row {
        name: format!(
            "Constancias stamped per second by the outbox worker (cron every second, one batch of \
             25 a firing, checked and stored in one commit), counted at the authority over {} s, \
             idle API",
            WINDOW.as_secs()
        ),
        result: format!("{rate:.0} constancias/s"),
        ..Row::default()
    });
    rows.push(Row {
        name: "CPU per constancia while stamping: the host (worker: request, reply checks, \
               commit) / the loopback authority (in-process signing)"
            .into(),
        result: format!("{host_ms:.2} ms / {authority_ms:.2} ms"),
        ..Row::default()
    });
    notes.push(format!(
        "NOM-151 rows: the authority signs in-process (`tests/support/tsa`, `fast.rs`: the tests' \
         TSA certificate, no OpenSSL process per reply); the worker stamps one batch of 25 a second, \
         so a backlog drains at that rate; {} documents had been stamped when the window closed \
         (requests to the authority in all).",
        tsa.requests().len()
    ));
    Ok(())
}

/// The app on the app stage's state, with `vars` set.
pub(super) fn start(dir: &Path, vars: &[(&str, &str)], log: &str) -> Result<Server> {
    start_on(dir, "spin.toml", vars, log)
}

/// [`start`] from another manifest of the repository (`spin.cloud.toml`).
pub(super) fn start_on(
    dir: &Path,
    manifest: &str,
    vars: &[(&str, &str)],
    log: &str,
) -> Result<Server> {
    let mut cmd = app_command_on(
        &root().join(manifest),
        dir,
        &dir.join("app-state"),
        &dir.join("cache"),
        "127.0.0.1:0",
    );
    for (name, value) in vars {
        cmd.env(name, value);
    }
    Server::start(
        cmd,
        Banner::Stdout,
        &dir.join(format!("{log}.log")),
        READY_PATH,
        &[ADMIN_HEADER],
    )
}
