//! The app as an OCI artifact, as SpinKube and Fermyon's platforms take it: `cargo xtask push <REF>`
//! runs `spin registry push` (which composes the components first, Spin's default) on
//! `spin.cloud.toml`; the test pass ([`smoke_pass`]) starts a registry on loopback (Debian's
//! `docker-registry`, the CNCF distribution server), pushes the app to it, and runs the smoke groups
//! against `spin up -k --from <ref>`: real Spin pulling the artifact, with no plugin, no `--sqlite`
//! flag and no file of the repository (`RECETA_TEST_FROM`, `tests/api/helpers.rs`).

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::project::{Result, cargo_tested, run, target_dir, tested_host};

/// The groups of the black-box suite run against the pulled artifact: the skeleton, the jobs door
/// and what it delivers, a pharmacy's whole round, verification (~1 min on 2 cores).
pub const SMOKE: &[&str] = &[
    "skeleton::",
    "jobs::",
    "notifications::",
    "pharmacies::",
    "verification::",
];

/// A registry on loopback, stopped when dropped.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:<port>`
    pub address: String,
}

impl Registry {
    /// Starts `docker-registry serve` on a free loopback port, storing under the target directory.
    pub fn start() -> Result<Registry> {
        let dir = target_dir().join("oci-registry");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let address = format!("127.0.0.1:{port}");
        let config = dir.join("config.yml");
        let text = format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
            dir.join("data").display()
        );
        std::fs::write(&config, text).map_err(|e| e.to_string())?;
        let log = std::fs::File::create(dir.join("registry.log")).map_err(|e| e.to_string())?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("docker-registry: {e} (apt-get install docker-registry)"))?;
        let registry = Registry { child, address };
        let start = Instant::now();
        while TcpStream::connect(&registry.address).is_err() {
            if start.elapsed() > Duration::from_secs(20) {
                return Err(format!(
                    "the registry did not listen on {}",
                    registry.address
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(registry)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `spin registry push` of `spin.cloud.toml` to `reference` (`-k`: a registry without TLS, as the
/// loopback one is; Spin then speaks plain HTTP to it).
pub fn push(spin: &Path, data: Option<&Path>, reference: &str, insecure: bool) -> Result {
    let mut push = Command::new(spin);
    push.args(["registry", "push", "-f", crate::manifests::CLOUD]);
    if insecure {
        push.arg("-k");
    }
    push.arg(reference);
    if let Some(data) = data {
        push.env("XDG_DATA_HOME", data);
    }
    run(&mut push)
}

/// `cargo xtask push <REF> [-k]` with `spin` (and its plugins' `data` directory): pushes the app.
pub fn push_command(spin: &Path, data: Option<&Path>, args: &[String]) -> Result {
    let reference = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .ok_or("usage: cargo xtask push <REGISTRY/REPOSITORY:TAG> [-k]")?;
    let insecure = args.iter().any(|a| a == "-k" || a == "--insecure");
    push(spin, data, reference, insecure)
}

/// The smoke groups against the app pulled from a loopback registry (see the module's text),
/// skipping the tests named in `skipped` (this host's own extensions).
pub fn smoke_pass(
    spin: &Path,
    data: Option<&Path>,
    sqld: &Path,
    skipped: &[(&str, &str)],
) -> Result {
    let registry = Registry::start()?;
    let reference = format!("{}/receta/app:ci", registry.address);
    push(spin, data, &reference, true)?;
    eprintln!("xtask: the smoke groups on `spin up --from {reference}` (pulled, cron-less):");
    let mut test = cargo_tested("test");
    test.args(["--test", "api", "--"])
        .args(SMOKE)
        .env("RECETA_BIN", tested_host())
        .env("RECETA_TEST_RUNTIME", "spin")
        .env("RECETA_TEST_CRONLESS", "1")
        .env("RECETA_TEST_FROM", &reference)
        .env("RECETA_SPIN", spin)
        .env("RECETA_SQLD", sqld);
    for (name, _) in skipped {
        test.args(["--skip", name]);
    }
    run(&mut test)
}
