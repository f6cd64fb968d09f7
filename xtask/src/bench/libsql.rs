//! The libSQL rows (issue 70): the app with its `default` database on a libSQL server (`sqld`, a
//! primary on loopback), first on real Spin 4.0.2 (its libSQL backend: remote only, every statement
//! one HTTP round trip), then on real Spin with the app speaking to the server over HTTP itself
//! (`spin.edge.toml`, `database_url`: issue 87), then on `receta`'s remote backend, then on a `receta` node with
//! an embedded replica (reads from its local copy, writes to the primary), beside the same rows on
//! a local file and the Django peer (docs/scale-out.md). Each setup serves the detail, the search,
//! the create, the pharmacy lookup and claim-then-burn, and each row says how many HTTP round trips
//! to the server a request cost, read from `sqld`'s own metrics. All three run `spin.cloud.toml`
//! (no cron trigger, no jobs door called), so a row's round trips are its requests' alone.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use super::app::{Dispensable, claims_then_burns, lookups, searches, seed_pharmacy};
use super::edge;
use super::harness::{
    ADMIN_HEADER, ADMIN_TOKEN, MEDICS, READY_PATH, Seed, app_command_on, seed_catalog, seed_rx,
};
use super::procs::{Banner, Server, free_port, get, sent_ok};
use super::report::{Row, thousands};
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::scripts::Req;
use super::settings::Settings;
use crate::cluster::{Processes, SYNC_MS, replica_runtime_config, runtime_config};
use crate::project::{Result, root};

/// Prescriptions seeded before the rows are measured.
const PRESCRIPTIONS: usize = 2_000;
/// Requests sent one at a time to count a row's round trips.
const COUNTED: usize = 200;
/// On real Spin with a libSQL primary, detail, search and create each at least this many times the
/// peer at 8 connections (issue 70).
const SPIN_PEER_TIMES: Option<f64> = Some(2.0);
const SPIN_PEER_CONNS: u32 = 8;

/// One way of serving the app on the server: its rows' prefix (the scenario keys), its label.
struct Setup {
    key: &'static str,
    label: &'static str,
}

const SPIN: Setup = Setup {
    key: "spin-libsql",
    label: "Spin + libSQL (remote, every statement sent)",
};
const SPIN_HTTP: Setup = Setup {
    key: "spin-http",
    label: "Spin, the app's own libSQL client over HTTP (spin.edge.toml)",
};
const REMOTE: Setup = Setup {
    key: "libsql",
    label: "receta + libSQL, remote (every statement sent)",
};
const REPLICA: Setup = Setup {
    key: "replica",
    label: "receta + libSQL, embedded replica (reads local)",
};

/// Measures the rows and appends them (and a note) to `rows`; `local` holds the local-file rows
/// of this run (`rx-detail`, `rx-create`, ...) that the replica's rows are held against, and
/// `baselines` the peer's rates.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    local: &Measured,
    baselines: &Baselines,
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
    let pharmacy = seed_pharmacy(&server, &seed_dir, &mut seeding)?;
    let seed = Seed::read(&seed_dir)?;
    server.stop();

    rows.push(Row::section(&format!(
        "The app on libSQL (sqld {} primary on loopback, {} prescriptions): real Spin, then `receta` remote, then `receta` with an embedded replica; compare with the same rows on a local file above and the peer",
        "0.24",
        thousands(PRESCRIPTIONS as f64)
    )));
    let scripts_dir = dir.join("scripts");
    std::fs::create_dir_all(&scripts_dir).map_err(|e| e.to_string())?;
    let mut measured = Measured::with_rows_of(local);
    let mut stage = |server: &Server, setup: &Setup, rows: &mut Vec<Row>| -> Result {
        for scenario in scenarios(setup, &seed, &pharmacy)
            .into_iter()
            .filter(|s| settings.measures(s.key))
        {
            let reqs = match &scenario.load {
                Load::Rotated(reqs) => reqs.clone(),
                Load::Path(..) => Vec::new(),
            };
            let first = rows.len();
            measure(
                settings,
                server,
                &scripts_dir,
                baselines,
                vec![scenario],
                &mut measured,
                rows,
            )?;
            let trips = round_trips(&admin, server, &reqs)?;
            for row in &mut rows[first..] {
                row.round_trips = Some(trips);
            }
        }
        Ok(())
    };

    // Real Spin, as a SpinKube replica or a `spin up` node behind a load balancer runs it.
    let spin_config = dir.join("spin-runtime-config.toml");
    std::fs::write(&spin_config, spin_runtime_config(&url)).map_err(|e| e.to_string())?;
    for (setup, database) in [
        (&SPIN, SpinDatabase::RuntimeConfig(&spin_config)),
        (&SPIN_HTTP, SpinDatabase::Http(&url)),
    ] {
        let server = spin_node(&dir, database)?;
        let first = rows.len();
        stage(&server, setup, rows)?;
        // The peak of `spin up` itself says nothing: its HTTP trigger is a child process.
        for row in &mut rows[first..] {
            row.peak_rss_mib = None;
        }
        server.stop();
    }

    if edge::measured(settings) {
        edge_rows(settings, &dir, &url, &seed, rows, notes)?;
    }

    let server = node(&dir, "state", &remote_config)?;
    stage(&server, &REMOTE, rows)?;
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
    stage(&server, &REPLICA, rows)?;
    server.stop();
    notes.push(format!(
        "libSQL rows: the app's `default` database on `sqld` (libSQL's server) on loopback, every \
         setup on `spin.cloud.toml` (no cron trigger; nothing called the jobs door while the rows \
         ran). Spin: `spin up` (Spin 4.0.2, default instance reuse) with `type = \"libsql\"` in its \
         runtime config: every statement one HTTP round trip (Hrana). Spin, the app's own client: \
         `spin.edge.toml` (no SQLite) with `database_url` set, the app sending a request's \
         statements itself in Hrana v3 pipelines (a transaction's kept writes with its next \
         statement or its `COMMIT`; issue 87). Remote: this host's `type = \
         \"libsql\"` backend as Spin's. Embedded replica (`replica_path`, this host's extension): \
         reads from a local copy pulled every {SYNC_MS} ms and up to each of the node's own \
         writes; writes and transactions sent to the primary, a transaction's batched writes held \
         back and sent together (docs/scale-out.md, \"Round trips\"). Round trips per request: \
         `sqld`'s user HTTP responses (its `/metrics`) over {COUNTED} requests sent one at a time \
         after the row, the replica's periodic pulls included. On libSQL: {}",
        seeding.join(" ")
    ));
    Ok(())
}

/// The five rows of one setup.
fn scenarios(setup: &Setup, seed: &Seed, pharmacy: &Dispensable) -> Vec<Scenario> {
    let key = |what: &str| -> &'static str { format!("{}-{what}", setup.key).leak() };
    let details = seed.per_signature(PRESCRIPTIONS, |s| format!("/api/v2/rx-endpoint/{s}/"));
    let peer = |scenario: Scenario, peer_key: &'static str| match setup.key {
        "spin-libsql" | "spin-http" => {
            scenario.vs_peer_row(peer_key, SPIN_PEER_TIMES, SPIN_PEER_CONNS)
        }
        _ => scenario.vs_peer_row(peer_key, None, SPIN_PEER_CONNS),
    };
    let local = |scenario: Scenario, local_key: &'static str| match setup.key {
        "replica" => scenario.vs_row(local_key, "of the local file's row", None),
        _ => scenario,
    };
    let label = setup.label;
    vec![
        local(
            peer(
                Scenario::new(
                    key("rx-detail"),
                    format!("{label}: GET /api/v2/rx-endpoint/&lt;signature&gt;/"),
                    Load::Rotated(details),
                ),
                "rx-detail",
            ),
            "rx-detail",
        ),
        peer(
            Scenario::new(
                key("rx-search"),
                format!("{label}: GET /api/v2/rx-endpoint/?search=&lt;surname&gt;"),
                searches(seed),
            ),
            "rx-search",
        ),
        local(
            peer(
                Scenario::new(
                    key("rx-create"),
                    format!("{label}: POST /api/v2/rx-endpoint/ (5 medications)"),
                    Load::Rotated(seed.rx_creates()),
                ),
                "rx-create",
            ),
            "rx-create",
        ),
        Scenario::new(
            key("pharmacy-lookup"),
            format!("{label}: GET /api/v2/pharmacy/rx/&lt;signature&gt; (pharmacy token)"),
            lookups(seed, pharmacy),
        )
        .vs_row(key("rx-detail"), "of this setup's detail", None),
        Scenario::new(
            key("pharmacy-claim-burn"),
            format!(
                "{label}: POST /api/v2/pharmacy/rx/&lt;signature&gt;/claim/ then its burn by the \
                 holder (req/s counts each call; round trips per call)"
            ),
            Load::Rotated(claims_then_burns(pharmacy)),
        ),
    ]
}

/// A `receta` node of the app (`spin.cloud.toml`) on the runtime config `config`, its state in
/// `dir/state`.
fn node(dir: &Path, state: &str, config: &Path) -> Result<Server> {
    let manifest = root().join("spin.cloud.toml");
    let mut cmd = app_command_on(
        &manifest,
        dir,
        &dir.join(state),
        &dir.join("../cache"),
        "127.0.0.1:0",
    );
    cmd.arg("--runtime-config-file").arg(config);
    Server::start(
        cmd,
        Banner::Stdout,
        &dir.join(format!("{state}.log")),
        READY_PATH,
        &[ADMIN_HEADER],
    )
}

/// The rows with the database [`edge::RTT`] away: Spin's libSQL backend and the app's own client
/// behind the delaying proxy, held to the floor measured on a local file.
fn edge_rows(
    settings: &Settings,
    dir: &Path,
    url: &str,
    seed: &Seed,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result {
    eprintln!(
        "xtask bench: libSQL: the database {} ms away",
        edge::RTT.as_millis()
    );
    rows.push(Row::section(&format!(
        "The database {} ms away (issue 87): one client, real Spin 4.0.2, p50 and round trips per request, held to one round trip per statement the issue allows plus the request's time on a local file",
        edge::RTT.as_millis()
    )));
    let local = spin_node(dir, SpinDatabase::LocalFile)?;
    let seed_dir = dir.join("edge-seed");
    std::fs::create_dir_all(&seed_dir).map_err(|e| e.to_string())?;
    seed_catalog(&local.url, &seed_dir, 200)?;
    seed_rx(&local.url, &seed_dir, 200, MEDICS, &mut Vec::new())?;
    let floors = edge::floors(&local, &Seed::read(&seed_dir)?)?;
    local.stop();
    let proxy = edge::DelayProxy::start(url.trim_start_matches("http://"))?;
    let proxied_config = dir.join("spin-edge-runtime-config.toml");
    std::fs::write(&proxied_config, spin_runtime_config(&proxy.url)).map_err(|e| e.to_string())?;
    for (setup, database, held) in [
        (&SPIN, SpinDatabase::RuntimeConfig(&proxied_config), false),
        (&SPIN_HTTP, SpinDatabase::Http(&proxy.url), true),
    ] {
        let server = spin_node(dir, database)?;
        let proxied = edge::Proxied {
            server: &server,
            proxy: &proxy,
            key: setup.key,
            label: setup.label,
            held,
        };
        let measured = edge::rows(settings, &proxied, seed, &floors, rows);
        server.stop();
        measured?;
    }
    notes.push(edge::note());
    Ok(())
}

/// `runtime_config` as Spin takes it: Spin requires a token (this server checks none).
fn spin_runtime_config(url: &str) -> String {
    runtime_config(url).replace("token = \"\"", "token = \"unused\"")
}

/// How a Spin node reaches the server.
enum SpinDatabase<'a> {
    /// Spin's libSQL backend, through this runtime config (`spin.cloud.toml`).
    RuntimeConfig(&'a Path),
    /// The app's own client, to this URL (`spin.edge.toml`, no SQLite).
    Http(&'a str),
    /// A local file of its own (`spin.cloud.toml`, no runtime config): the edge rows' floor.
    LocalFile,
}

/// A real Spin node (`spin up`, default instance reuse) of the app on `database`.
fn spin_node(dir: &Path, database: SpinDatabase) -> Result<Server> {
    // The rows of issue 70 were measured on Spin 4.0; they stay comparable on it.
    let spins = crate::spin::locate()?;
    let mut cmd = Command::new(spins.floor.as_ref().unwrap_or(&spins.current));
    cmd.arg("up").arg("-f");
    match database {
        SpinDatabase::RuntimeConfig(config) => {
            cmd.arg(root().join("spin.cloud.toml"))
                .arg("--runtime-config-file")
                .arg(config);
        }
        SpinDatabase::Http(url) => {
            cmd.arg(root().join(crate::manifests::EDGE))
                .env("SPIN_VARIABLE_DATABASE_URL", url)
                .env("SPIN_VARIABLE_DATABASE_HOST", url);
        }
        SpinDatabase::LocalFile => {
            cmd.arg(root().join("spin.cloud.toml"));
        }
    }
    let state = match database {
        SpinDatabase::LocalFile => "spin-local-state",
        _ => "spin-state",
    };
    cmd.args(["--listen", "127.0.0.1:0", "--state-dir"])
        .arg(dir.join(state))
        .env("SPIN_VARIABLE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("SPIN_VARIABLE_VERIFY_CALLS_PER_MINUTE", "100000000")
        .current_dir(root())
        // Its own process group: `spin up` runs each trigger as a child process.
        .process_group(0);
    if let Some(data) = &spins.data {
        cmd.env("XDG_DATA_HOME", data);
    }
    Server::start(
        cmd,
        Banner::Stdout,
        &dir.join("spin.log"),
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
        sent_ok(server, req).map_err(|e| format!("while counting round trips: {e}"))?;
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
