//! `cargo xtask <command>`: the project's commands, in plain Rust with no dependencies.
//!
//! - `up [HOST FLAGS]`  build everything, then run the app (`receta up`), flags passed through
//! - `test`             build everything, then run every test (unit and black-box)
//! - `lint`             `cargo fmt --check`, clippy for the host and the wasm target, no module cycles
//! - `cycles`           no module of any crate imports one that imports it back (`cycles.rs`)
//! - `build`            build the components (wasm32-wasip2) and the host, release mode
//! - `bench`            build, then measure the host and the app, write `docs/bench.md` (`bench.rs`)
//! - `cluster [PORT]`   build, then a libSQL primary + replica and two nodes on them (`cluster.rs`)
//! - `fuzz [EXAMPLES]`  build, then schemathesis against the real host for every operation (`fuzz.rs`)

mod bench;
mod cluster;
mod cycles;
mod fuzz;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const WASM_TARGET: &str = "wasm32-wasip2";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("up") => build().and_then(|()| up(&args[1..])),
        Some("build") => build(),
        Some("test") => build().and_then(|()| test()),
        Some("lint") => lint(),
        Some("cycles") => cycles::check(None),
        Some("cluster") => {
            let base = args.get(1).and_then(|p| p.parse().ok()).unwrap_or(3000);
            build().and_then(|()| cluster::cluster(base))
        }
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
                "usage: cargo xtask <up [receta up flags…] | test | lint | cycles | build | bench | cluster [PORT] | fuzz [EXAMPLES]>"
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

type Result<T = ()> = std::result::Result<T, String>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Where cargo puts its output (`CARGO_TARGET_DIR` or `<root>/target`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn run(cmd: &mut Command) -> Result {
    let shown = format!("{cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .map_err(|e| format!("{shown}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed: {status}"))
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The component crates: every `components/*` except the shared library.
fn component_crates() -> Result<Vec<String>> {
    let mut names = Vec::new();
    let dir = root().join("components");
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let manifest = std::fs::read_to_string(path.join("Cargo.toml")).unwrap_or_default();
        if manifest.contains("cdylib") {
            names.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Adds the wasm target with rustup when it is missing.
fn ensure_wasm_target() -> Result {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.trim() == WASM_TARGET)
        })
        .unwrap_or(false);
    if installed {
        return Ok(());
    }
    eprintln!("xtask: adding the {WASM_TARGET} target with rustup");
    run(Command::new("rustup").args(["target", "add", WASM_TARGET]))
}

fn build() -> Result {
    ensure_wasm_target()?;
    let mut wasm = cargo();
    wasm.args(["build", "--release", "--target", WASM_TARGET]);
    for name in component_crates()? {
        wasm.args(["-p", &name]);
    }
    run(&mut wasm)?;
    // spin.toml names `target/wasm32-wasip2/release/*.wasm`; with an outside CARGO_TARGET_DIR, copy them there.
    let built = target_dir().join(WASM_TARGET).join("release");
    let expected = root().join("target").join(WASM_TARGET).join("release");
    if built.canonicalize().ok() != expected.canonicalize().ok() {
        std::fs::create_dir_all(&expected).map_err(|e| e.to_string())?;
        for name in component_crates()? {
            // Cargo names the file after the library: `outbox-worker` → `outbox_worker.wasm`.
            let file = format!("{}.wasm", name.replace('-', "_"));
            std::fs::copy(built.join(&file), expected.join(&file))
                .map_err(|e| format!("copying {file}: {e}"))?;
        }
    }
    run(cargo().args(["build", "--release", "-p", "receta-host"]))
}

fn host_binary() -> PathBuf {
    target_dir().join("release").join("receta")
}

/// Development defaults for the outbound permissions (spin.toml's defaults allow nothing): local
/// email relays and webhook receivers work out of the box. A variable already set is kept.
const DEV_OUTBOUND: [(&str, &str); 3] = [
    ("SPIN_VARIABLE_EMAIL_RELAY_HOST", "http://127.0.0.1:*"),
    ("SPIN_VARIABLE_WEBHOOK_HOST_1", "http://127.0.0.1:*"),
    ("SPIN_VARIABLE_WEBHOOK_HOST_2", "http://localhost:*"),
];

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
/// notifications, pharmacies (test-name filters).
const LIBSQL_GROUPS: [&str; 9] = [
    "hospitals::",
    "medics::",
    "memberships::",
    "locations::",
    "campaigns::",
    "patients::",
    "prescriptions::",
    "notifications::",
    "pharmacies::",
];

fn test() -> Result {
    ensure_test_tools()?;
    // Unit tests of every crate natively, then the black-box suite against the real host.
    let mut unit = cargo();
    unit.args(["test", "--release", "--workspace"]);
    for name in NOT_NATIVE {
        unit.args(["--exclude", name]);
    }
    run(&mut unit)?;
    // The gateway's unit tests: `--lib` builds only their test harness, not the cdylib.
    run(cargo().args(["test", "--release", "--lib", "-p", "gateway"]))?;
    // The contract: valid OpenAPI 3.1; then every black-box response is checked against it
    // (`tests/api/contract.rs`); then a bounded fuzzing pass over every operation.
    fuzz::validate_openapi()?;
    run(cargo()
        .args(["test", "--release", "-p", "receta-tests"])
        .env("RECETA_BIN", host_binary()))?;
    // The same groups once more with the app's database on a libSQL server (docs/scale-out.md).
    let sqld = cluster::sqld_binary()?;
    run(cargo()
        .args(["test", "--release", "-p", "receta-tests", "--"])
        .args(LIBSQL_GROUPS)
        .env("RECETA_BIN", host_binary())
        .env("RECETA_SQLD", sqld)
        .env("RECETA_TEST_DATABASE", "libsql"))?;
    fuzz::ci_pass()
}

/// Crates without native unit tests: the black-box suite (run next, against the host) and the HTTP
/// components, whose `wasi:http` export only links on wasm32 (the test and bench fixtures too).
const NOT_NATIVE: &[&str] = &["receta-tests", "gateway", "probe", "hello", "pdfbench"];

/// Command-line tools the tests drive, and the Debian packages that provide them. `chromium` runs
/// headless in the patient landing's browser test (`tests/api/landing_browser.rs`).
const TEST_TOOLS: &[(&str, &str)] = &[
    ("pdftotext", "poppler-utils"),
    ("zbarimg", "zbar-tools"),
    ("chromium", "chromium"),
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

/// `apt-get update` then `apt-get install` of `packages` (with sudo unless root).
fn apt_install(packages: &[&str]) -> Result {
    let sudo: &[&str] = if is_root() { &[] } else { &["sudo"] };
    let apt = |args: &[&str]| {
        let mut cmd = Command::new(sudo.first().copied().unwrap_or("apt-get"));
        if !sudo.is_empty() {
            cmd.arg("apt-get");
        }
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut cmd)
    };
    apt(&["update", "-q"])?;
    let mut install = vec!["install", "-y", "-q", "--no-install-recommends"];
    install.extend(packages);
    apt(&install)
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn lint() -> Result {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--release",
        "--all-targets",
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
    cycles::check(Some(cycles::ACYCLIC))
}
