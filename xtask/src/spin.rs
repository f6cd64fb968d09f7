//! The black-box suite's passes on real Spin: `spin build`, then every test of `tests/api` against
//! `spin up` on the repository's own `spin.toml` (the README's "Running on real Spin": the app
//! migrating itself, variables as `SPIN_VARIABLE_*`, the cron trigger plugin installed), except the
//! tests of this project's host extensions, skipped by name with their reason; then the groups that
//! run on libSQL once more with the app's database on a libSQL server (`sqld`, authenticated with a
//! JWT as Spin requires: a runtime config with `type = "libsql"`, docs/scale-out.md). The cron-less
//! passes are what Fermyon Cloud and SpinKube run (docs/deploying.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::project::{Result, cargo_tested, on_path, root, run, target_dir, tested_host};
use crate::stages::Stages;

/// Tests that exercise what only `receta` does, with the reason each is skipped on Spin.
pub const SKIPPED_ON_SPIN: &[(&str, &str)] = &[
    (
        "availability::slow_clients_trickling_bodies_never_stall_the_service",
        "this host's read limits: a request's head and body are read, bounded in time, before it \
         takes an instance",
    ),
    (
        "availability::oversized_targets_and_headers_are_refused_in_the_api_shape",
        "this host's own answers before a component runs (414, 431 as JSON)",
    ),
    (
        "availability::what_the_http_library_answers_by_itself_is_in_the_api_shape_too",
        "this host's rewrite of hyper's bare 400/414/431 into JSON; Spin sends hyper's empty answers",
    ),
    (
        "availability::a_host_header_is_checked_and_never_copied_into_links",
        "this host's check of the Host header (Spin drops such a connection instead of answering)",
    ),
    (
        "claims::a_claim_and_its_renewals_last_at_most_three_claim_minutes",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS); on Spin it would \
         wait out three claim minutes",
    ),
    (
        "fhir::an_expired_prescription_is_a_stopped_request",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS); Spin's clock is the \
         machine's",
    ),
    (
        "claims::an_expired_claim_is_gone_without_a_worker",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS); on Spin it would \
         wait out a claim's minute",
    ),
    (
        "mexican_rules::a_prescription_expires_at_the_end_of_its_last_day",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS); Spin's clock is the \
         system's",
    ),
    (
        "verification::the_verify_counters_live_outside_the_records_and_old_ones_are_forgotten",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS) to see the worker \
         forget a past minute's counters",
    ),
    (
        "mexican_rules::the_next_fill_waits_for_the_interval",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS)",
    ),
    (
        "counter::a_code_expires_after_ten_minutes",
        "moves time with this host's test clock (RECETA_CLOCK_OFFSET_SECONDS)",
    ),
    (
        "scale_out::",
        "this host's migration ledger and log lines when several nodes start on one libSQL \
         server, and its prompt 503 when the server goes away (what every runtime does on \
         several nodes is `nodes::`, which runs on Spin too)",
    ),
    (
        "replicas::",
        "this host's embedded libSQL replicas (`replica_path`), which Spin's runtime config \
         refuses",
    ),
];

/// The Spins the app is tested on: the newest (the whole suite) and the floor the app promises
/// (docs/deploying.md, "Floors": the smoke groups), with the `XDG_DATA_HOME` their cron trigger
/// plugin is installed under when it is not the default.
pub struct Spins {
    /// The Spin people install today: `RECETA_SPIN`, `spin` on `PATH`, or the offline `spin41`.
    pub current: PathBuf,
    /// Spin 4.0: `RECETA_SPIN_FLOOR`, or the offline `spin` (4.0.2); none when neither is there.
    pub floor: Option<PathBuf>,
    /// The `XDG_DATA_HOME` the cron trigger plugin is installed under (`RECETA_SPIN_DATA`, or the
    /// offline copies'); none for Spin's default.
    pub data: Option<PathBuf>,
}

impl Spins {
    /// Each Spin to measure or test on, the floor first.
    pub fn each(&self) -> impl Iterator<Item = &Path> {
        self.floor
            .iter()
            .map(PathBuf::as_path)
            .chain([self.current.as_path()])
    }
}

/// Where Spin is: `RECETA_SPIN` (with `RECETA_SPIN_FLOOR`), `spin` on `PATH` (plugins where Spin
/// keeps them), or the offline copies beside the repository (4.1 and 4.0.2) unpacked under the
/// target directory.
pub fn locate() -> Result<Spins> {
    let floor = std::env::var_os("RECETA_SPIN_FLOOR")
        .filter(|b| !b.is_empty())
        .map(PathBuf::from);
    if let Some(bin) = std::env::var_os("RECETA_SPIN").filter(|b| !b.is_empty()) {
        let data = std::env::var_os("RECETA_SPIN_DATA").map(PathBuf::from);
        return Ok(Spins {
            current: PathBuf::from(bin),
            floor,
            data,
        });
    }
    if on_path("spin") {
        return Ok(Spins {
            current: PathBuf::from("spin"),
            floor,
            data: None,
        });
    }
    let install = root().join("../shared/tools/spin/install.sh");
    if install.is_file() {
        let dir = target_dir().join("spin-real");
        run(Command::new("bash").arg(&install).arg(&dir))?;
        return Ok(Spins {
            current: dir.join("spin41"),
            floor: Some(dir.join("spin")),
            data: Some(dir.join("data")),
        });
    }
    Err(
        "no Spin for the suite's pass on real Spin: install Spin 4.1 or newer \
         (https://spinframework.dev/install) and its cron trigger (`spin plugins install \
         trigger-cron`), or set RECETA_SPIN to a `spin` binary (and RECETA_SPIN_FLOOR to a Spin \
         4.0 for the floor's pass)"
            .into(),
    )
}

/// `spin --version`'s line (`spin 4.1.0-pre0 (94a8fc8a 2026-08-21)`).
pub fn version(spin: &Path) -> Result<String> {
    Command::new(spin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .map_err(|e| format!("{}: {e}", spin.display()))
}

/// `spin build`, then on the newest Spin the suite on `spin up` (the cron plugin), the suite again
/// cron-less (`spin.cloud.toml`, no plugin, a loopback scheduler calling the jobs door),
/// `libsql_groups` cron-less with the database on a libSQL server (two nodes start at once), the
/// same and `nodes::` on `spin.edge.toml` with the app reaching that server over HTTP; then
/// on the floor (Spin 4.0) the smoke groups, with the cron plugin and cron-less. Gives back the
/// Spins, for the OCI pass (`oci.rs`) that follows.
pub fn suite(stages: &mut Stages, libsql_groups: &[&str]) -> Result<Spins> {
    let spins = locate()?;
    let mut build = Command::new(&spins.current);
    build.arg("build");
    if let Some(data) = &spins.data {
        build.env("XDG_DATA_HOME", data);
    }
    stages.run("spin build", || run(&mut build))?;

    let current = version(&spins.current)?;
    eprintln!(
        "xtask: the black-box suite on real Spin ({current}, {}):",
        spins.current.display()
    );
    for (name, why) in SKIPPED_ON_SPIN {
        eprintln!("xtask: skipped on Spin: {name} ({why})");
    }
    let sqld = crate::cluster::sqld_binary()?;
    let test = |spin: &Path, groups: &[&str], database: Option<&str>, cronless: bool| {
        let mut test = cargo_tested("test");
        test.args(["--test", "api", "--"])
            .args(groups)
            .env("RECETA_BIN", tested_host())
            .env("RECETA_TEST_RUNTIME", "spin")
            .env("RECETA_SPIN", spin)
            .env("RECETA_SQLD", &sqld);
        for (name, _) in SKIPPED_ON_SPIN {
            test.args(["--skip", name]);
        }
        if let Some(database) = database {
            test.env("RECETA_TEST_DATABASE", database);
        }
        if cronless {
            test.env("RECETA_TEST_CRONLESS", "1");
        } else if let Some(data) = &spins.data {
            test.env("RECETA_SPIN_DATA", data);
        }
        run(&mut test)
    };
    let on = |what: &str| format!("{what} on {current}");
    stages.run(&on("suite (cron plugin)"), || {
        test(&spins.current, &[], None, false)
    })?;
    eprintln!(
        "xtask: the suite on real Spin again, cron-less: spin.cloud.toml, no plugin, \
         a loopback scheduler calling POST /api/v2/jobs/run/ every second:"
    );
    stages.run(&on("suite, cron-less"), || {
        test(&spins.current, &[], None, true)
    })?;
    eprintln!("xtask: the libSQL groups on real Spin, cron-less, the database on sqld:");
    stages.run(&on("libSQL groups, cron-less"), || {
        test(&spins.current, libsql_groups, Some("libsql"), true)
    })?;
    eprintln!(
        "xtask: the same groups and the two-node tests on real Spin, cron-less, on spin.edge.toml \
         (no SQLite): the app speaks to sqld over HTTP itself (database_url, issue 87):"
    );
    stages.run(&on("over HTTP (spin.edge.toml)"), || {
        let groups: Vec<&str> = libsql_groups.iter().copied().chain(["nodes::"]).collect();
        test(&spins.current, &groups, Some("hrana"), true)
    })?;
    match &spins.floor {
        Some(floor) => {
            let floor_version = version(floor)?;
            eprintln!(
                "xtask: the floor (docs/deploying.md), {floor_version}: the smoke groups with the \
                 cron plugin, then cron-less:"
            );
            stages.run(
                &format!("smoke groups on {floor_version}, both ways"),
                || {
                    test(floor, crate::oci::SMOKE, None, false)?;
                    test(floor, crate::oci::SMOKE, None, true)
                },
            )?;
        }
        None => eprintln!(
            "xtask: no Spin 4.0 given (RECETA_SPIN_FLOOR): the floor's smoke pass is not run"
        ),
    }
    Ok(spins)
}
