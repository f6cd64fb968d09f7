//! Where the project's things are and how to run them: the root and target directories, cargo, the
//! host binary, building the components and the host, installing a Debian package. Every command
//! module builds on this one.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const WASM_TARGET: &str = "wasm32-wasip2";

pub type Result<T = ()> = std::result::Result<T, String>;

/// The project's root: the parent of xtask's manifest directory, read at run time first (`cargo run`
/// sets it), so an xtask binary left in a target directory shared by two checkouts serves the one
/// that ran it.
pub fn root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().unwrap_or(Path::new(".")).to_path_buf()
}

/// Where cargo puts its output (`CARGO_TARGET_DIR` or `<root>/target`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

pub fn run(cmd: &mut Command) -> Result {
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

pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// Where component crates live: the app's, the bench's fixtures, the host tests' fixture.
const COMPONENT_DIRS: [&str; 3] = ["components", "bench/components", "tests/components"];

/// The component crates (wasm32-wasip2 `cdylib`s) of `COMPONENT_DIRS`.
pub fn component_crates() -> Result<Vec<String>> {
    let mut names = Vec::new();
    for dir in COMPONENT_DIRS {
        let dir = root().join(dir);
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let manifest = std::fs::read_to_string(path.join("Cargo.toml")).unwrap_or_default();
            if manifest.contains("cdylib") {
                names.push(path.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Adds the wasm target with rustup when it is missing.
pub fn ensure_wasm_target() -> Result {
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

/// The components and the host, release mode (`cargo xtask build`).
pub fn build() -> Result {
    build_components()?;
    build_host()
}

/// The components (wasm32-wasip2), copied where spin.toml names them.
pub fn build_components() -> Result {
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
    Ok(())
}

/// The host, and `receta-verify` (the offline seal check: the app's tool, not the host's).
fn build_host() -> Result {
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "receta-host",
        "-p",
        "receta-verify",
    ]))
}

/// The shipped host (`release`: fat LTO), as `build` leaves it: for `up`, the bench, the cluster.
pub fn host_binary() -> PathBuf {
    target_dir().join("release").join("receta")
}

/// The profile `cargo xtask test` builds every native crate with (Cargo.toml, `[profile.test-run]`:
/// the release profile without fat LTO).
pub const TEST_PROFILE: &str = "test-run";

/// Crates built only for wasm32-wasip2: the HTTP components, whose `wasi:http` export links only
/// there (the gateway's unit tests run natively on their own, `--lib`), and the fixtures.
pub const WASM_ONLY: &[&str] = &[
    "gateway",
    "probe",
    "echo",
    "echo-front",
    "hello",
    "hello-p3",
    "pdfbench",
];

/// `cargo <command> --profile test-run --workspace` without [`WASM_ONLY`]: every native `test` or
/// `build` of the test command selects the same packages, so Cargo resolves the same features for
/// them all and builds each dependency once. Selected one package at a time (`-p receta-harness`)
/// they resolved differently (`regex`, `serde`, `digest`… each with fewer features) and wasmtime,
/// rustls and the host were built again: ~6 min of the component tests' stage from an empty cache.
/// The black-box suite and the component tests are then picked by target (`--test api`, `--test
/// component`), which leaves the features alone.
pub fn cargo_tested(command: &str) -> Command {
    let mut cmd = cargo();
    cmd.args([command, "--profile", TEST_PROFILE, "--workspace"]);
    for name in WASM_ONLY {
        cmd.args(["--exclude", name]);
    }
    cmd
}

/// The host the tests run, as the test command's unit-test stage builds it (`TEST_PROFILE`).
pub fn tested_host() -> PathBuf {
    target_dir().join(TEST_PROFILE).join("receta")
}

/// Development defaults for the outbound permissions (spin.toml's defaults allow nothing): local
/// email relays, webhook receivers and timestamp authorities work out of the box. A variable
/// already set is kept.
pub const DEV_OUTBOUND: [(&str, &str); 4] = [
    ("SPIN_VARIABLE_EMAIL_RELAY_HOST", "http://127.0.0.1:*"),
    ("SPIN_VARIABLE_TIMESTAMP_HOST", "http://127.0.0.1:*"),
    ("SPIN_VARIABLE_WEBHOOK_HOST_A", "http://127.0.0.1:*"),
    ("SPIN_VARIABLE_WEBHOOK_HOST_B", "http://localhost:*"),
];

/// `apt-get update` then `apt-get install` of `packages` (with sudo unless root).
pub fn apt_install(packages: &[&str]) -> Result {
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

pub fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
