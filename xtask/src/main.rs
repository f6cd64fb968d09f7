//! `cargo xtask <command>`: the project's commands, in plain Rust with no dependencies.
//!
//! - `up [HOST FLAGS]`  build everything, then run the app (`receta up`), flags passed through
//! - `test`             build everything, then run every test (unit, component, black-box, real Spin)
//! - `lint`             `cargo fmt --check`, clippy for the host (also without libSQL) and the wasm
//!   target, the deployment floors name the gateway's WASIp3 world (`floors.rs`), no module
//!   cycles, no file over 500 lines without a reason
//! - `push REF [-k]`    `spin registry push` the app (`spin.cloud.toml`, composed) to an OCI registry (`oci.rs`)
//! - `manifests`        write `spin.cloud.toml`, the cron-less manifest, from `spin.toml` (`manifests.rs`)
//! - `cycles`           no module of any crate imports one that imports it back (`cycles.rs`)
//! - `build`            build the components (wasm32-wasip2) and the host, release mode
//! - `bench`            build, then measure the host and the app, write `docs/bench.md` (`bench.rs`);
//!   `bench peer` measures the Django peer alone, `bench spin` the peer and the app on real Spin,
//!   `bench libsql` the libSQL stage alone, `bench constancias` the NOM-151 rows alone, `bench jobs`
//!   the background jobs' rows alone
//! - `cluster [PORT]`   build, then a libSQL primary and two nodes with embedded replicas (`cluster.rs`)
//! - `fuzz [EXAMPLES]`  build, then schemathesis against the real host for every operation (`fuzz.rs`)

mod bench;
mod cluster;
mod cycles;
mod floors;
mod fuzz;
mod long_files;
mod manifests;
mod oci;
mod previous;
mod project;
mod spin;
mod stages;

use std::process::{Command, ExitCode};

use project::{
    DEV_OUTBOUND, Result, WASM_TARGET, apt_install, build, cargo, cargo_tested, component_crates,
    host_binary, on_path, run, tested_host,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("up") => build().and_then(|()| up(&args[1..])),
        Some("build") => build(),
        // The host is built by the unit tests' step (`test`), not before it.
        Some("test") => test(),
        Some("lint") => lint(),
        Some("cycles") => cycles::check(),
        Some("manifests") => manifests::write(),
        Some("push") => spin::locate()
            .and_then(|spins| oci::push_command(&spins.current, spins.data.as_deref(), &args[1..])),
        Some("cluster") => {
            let base = args.get(1).and_then(|p| p.parse().ok()).unwrap_or(3000);
            build().and_then(|()| cluster::cluster(base))
        }
        Some("bench") if args.get(1).is_some_and(|a| a == "peer") => bench::peer_only(),
        Some("bench") if args.get(1).is_some_and(|a| a == "app") => bench::app_only(),
        Some("bench") if args.get(1).is_some_and(|a| a == "spin") => bench::spin_only(),
        Some("bench") if args.get(1).is_some_and(|a| a == "libsql") => bench::libsql_only(),
        Some("bench") if args.get(1).is_some_and(|a| a == "constancias") => {
            bench::constancias_only()
        }
        Some("bench") if args.get(1).is_some_and(|a| a == "efirma") => bench::efirma_only(),
        Some("bench") if args.get(1).is_some_and(|a| a == "jobs") => bench::jobs_only(),
        Some("bench") => bench::bench(),
        Some("fuzz") => {
            let examples = args
                .get(1)
                .and_then(|n| n.parse().ok())
                .unwrap_or(fuzz::CI_EXAMPLES);
            build().and_then(|()| fuzz::fuzz(examples))
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <up [receta up flags…] | test | lint | manifests | push REF [-k] | cycles | build | bench [app|peer|spin|libsql|constancias|efirma|jobs] | cluster [PORT] | fuzz [EXAMPLES]>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn up(flags: &[String]) -> Result {
    let mut cmd = Command::new(host_binary());
    cmd.arg("up").args(flags);
    for (name, value) in DEV_OUTBOUND {
        if std::env::var_os(name).is_none() {
            cmd.env(name, value);
        }
    }
    run(&mut cmd)
}

/// The black-box groups that run a second time on libSQL: catalog, patients, prescriptions,
/// notifications (SMS and WhatsApp too), pharmacies and their statuses, the patient's contact, constancias, the prescriber's e.firma, what was handed over,
/// who speaks for the person (test-name filters: `efirma` is `efirma::` and `efirma_signing::`).
const LIBSQL_GROUPS: [&str; 19] = [
    "channels::",
    "consent::",
    "contact::",
    "hospitals::",
    "counter::",
    "medics::",
    "memberships::",
    "locations::",
    "campaigns::",
    "patients::",
    "prescriptions::",
    "notifications::",
    "pharmacies::",
    "pharmacy_status::",
    "constancias::",
    "efirma",
    "handover::",
    "jobs::",
    "person::",
];

/// Every test, stage by stage; the stages' times are printed at the end, passed or failed
/// (`stages.rs`).
fn test() -> Result {
    let mut stages = stages::Stages::new();
    let result = test_stages(&mut stages);
    eprint!("{}", stages.table());
    result
}

fn test_stages(stages: &mut stages::Stages) -> Result {
    stages.run("components (wasm32-wasip2)", project::build_components)?;
    // The previous release's components, from git, for the upgrade test (`previous.rs`).
    let previous = stages.run("previous release's components (from git)", previous::build)?;
    stages.run("test tools (apt)", ensure_test_tools)?;
    // Several passes need a libSQL server: say so in one line before anything runs.
    let sqld = cluster::sqld_binary()?;
    // Unit tests of every crate natively, then the black-box suite against the real host.
    let mut unit = cargo_tested("test");
    // The host's tests of its libSQL replicas talk to a real server.
    unit.env("RECETA_SQLD", &sqld);
    stages.run("unit tests (native; builds the host)", || run(&mut unit))?;
    // That step built the host binary (the host's own behaviour tests run it). Every native step
    // selects the same packages (`cargo_tested`): a step that selected fewer made Cargo resolve
    // other features and build the host, wasmtime and the TLS crates again (the cause of the ~6
    // min an earlier `build()` before this step cost). `receta-verify` is built on its own: no
    // test of the workspace builds its binary.
    stages.run("receta-verify", || {
        run(cargo_tested("build").args(["--bin", "receta-verify"]))
    })?;
    stages.run("component tests", component_tests)?;
    // The gateway's unit tests: `--lib` builds only their test harness, not the cdylib.
    stages.run("gateway unit tests", || {
        run(cargo()
            .args(["test", "--profile", project::TEST_PROFILE])
            .args(["--lib", "-p", "gateway"]))
    })?;
    // The contract: valid OpenAPI 3.1; then every black-box response is checked against it
    // (`tests/api/contract.rs`); then a bounded fuzzing pass over every operation.
    stages.run("OpenAPI valid (Python tools)", fuzz::validate_openapi)?;
    stages.run("black-box suite on receta", || {
        let mut suite = cargo_tested("test");
        suite
            .args(["--test", "api"])
            .env("RECETA_BIN", tested_host())
            .env("RECETA_SQLD", &sqld);
        if let Some(previous) = &previous {
            suite.env("RECETA_PREVIOUS_MANIFEST", previous);
        }
        run(&mut suite)
    })?;
    // No pass with `RECETA_COMPOSITION=static` or `lazy-dynamic` any more: the gateway is a WASIp3
    // handler, which the host always composes ahead of time, as Spin does (host/README.md); lazy
    // linking, typed and dynamic, is left to the WASIp2 cron worker and the host's own tests
    // (`tests/spin_semantics.rs`).
    // The same groups once more with the app's database on a libSQL server (docs/scale-out.md),
    // then on a node with an embedded replica of it: reads from the node's copy, transactions held
    // back and sent in few requests (`host/src/capability/sqlite/remote/deferred.rs`).
    for database in ["libsql", "libsql-replica"] {
        stages.run(&format!("libSQL groups on receta ({database})"), || {
            run(cargo_tested("test")
                .args(["--test", "api", "--"])
                .args(LIBSQL_GROUPS)
                .env("RECETA_BIN", tested_host())
                .env("RECETA_SQLD", &sqld)
                .env("RECETA_TEST_DATABASE", database))
        })?;
    }
    // The whole suite once more on real Spin, with the app built by `spin build` and the cron
    // plugin, again cron-less (`spin.cloud.toml`, no plugin, a scheduler calling the jobs door),
    // then the same groups as above cron-less on real Spin with the database on libSQL (`spin.rs`).
    let spins = spin::suite(stages, &LIBSQL_GROUPS)?;
    // The app pushed to a loopback OCI registry, pulled and run by `spin up --from` (`oci.rs`).
    stages.run("OCI: pushed, pulled, smoke groups on real Spin", || {
        oci::smoke_pass(
            &spins.current,
            spins.data.as_deref(),
            &sqld,
            spin::SKIPPED_ON_SPIN,
        )
    })?;
    stages.run("fuzz pass (schemathesis)", fuzz::ci_pass)
}

/// The component tests (`tests/harness`, docs/testing-components.md): each domain component alone,
/// and the gateway composed, in-process on the host's capabilities. Says how many before running.
fn component_tests() -> Result {
    let listed = cargo_tested("test")
        .args(["--test", "component"])
        .args(["--", "--list", "--format", "terse"])
        .current_dir(project::root())
        .output()
        .map_err(|e| format!("listing the component tests: {e}"))?;
    if !listed.status.success() {
        return Err(format!(
            "listing the component tests failed:\n{}",
            String::from_utf8_lossy(&listed.stderr)
        ));
    }
    let count = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|line| line.ends_with(": test"))
        .count();
    if count == 0 {
        return Err("no component tests found in tests/harness".into());
    }
    println!("xtask: {count} component tests (tests/harness: one component in-process per test)");
    run(cargo_tested("test").args(["--test", "component"]))
}

/// Command-line tools the tests drive, and the Debian packages that provide them. `chromium` runs
/// headless in the patient landing's browser test (`tests/api/landing_browser.rs`); `openssl` is
/// the tests' timestamp authority (`openssl ts -reply`) and their independent check of constancias
/// (`openssl ts -verify`, `tests/support/tsa`).
const TEST_TOOLS: &[(&str, &str)] = &[
    ("openssl", "openssl"),
    ("pdftotext", "poppler-utils"),
    ("zbarimg", "zbar-tools"),
    ("chromium", "chromium"),
    // The OCI registry the pushed app is pulled from (`oci.rs`): the CNCF distribution server.
    ("docker-registry", "docker-registry"),
];

/// Installs the tools the tests need with apt-get when they are missing.
fn ensure_test_tools() -> Result {
    let missing: Vec<&str> = TEST_TOOLS
        .iter()
        .filter(|(tool, _)| !on_path(tool))
        .map(|(_, package)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("xtask: installing {} with apt-get", missing.join(" "));
    apt_install(&missing)
}

fn lint() -> Result {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    // `--all-targets` leaves out the test targets marked `test = false` (the black-box suite and
    // the component tests, run by name): named here.
    run(cargo().args([
        "clippy",
        "--release",
        "--all-targets",
        "--test",
        "api",
        "--test",
        "component",
        "--",
        "-D",
        "warnings",
    ]))?;
    let mut wasm = cargo();
    wasm.args(["clippy", "--release", "--target", WASM_TARGET]);
    for name in component_crates()? {
        wasm.args(["-p", &name]);
    }
    run(wasm.args(["--", "-D", "warnings"]))?;
    // The host builds without its libSQL backend (`capability::sqlite::remote`).
    run(cargo().args([
        "clippy",
        "--release",
        "-p",
        "receta-host",
        "--no-default-features",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    manifests::check()?;
    floors::check()?;
    cycles::check()?;
    long_files::check()
}
