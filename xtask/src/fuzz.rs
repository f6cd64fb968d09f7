//! `cargo xtask fuzz [EXAMPLES]`: schemathesis, driven by `openapi/fuzz.py`, against the real host
//! for every operation of `openapi/receta.json`, with the admin's, a medic's and a pharmacy's
//! tokens: zero 5xx, zero answers outside the document, zero hangs. CI runs a bounded pass.
//!
//! The Python tools (schemathesis, openapi-spec-validator, and the tests' biip) live in a virtualenv under the target
//! directory that this module creates and fills from PyPI, pinned; nothing is installed by hand.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::project::{Result, host_binary, root, run, target_dir, tested_host};

/// Pinned Python tools.
/// `biip` and `fhir.resources` are the black-box tests' independent GS1 reader
/// (`tests/api/handover.rs`) and FHIR R4 validator (`tests/api/fhir.rs`); `kubernetes-validate`
/// (with schemathesis's `jsonschema` and PyYAML) checks the Kubernetes manifests (`tests/api/deploy.rs`); `python-stdnum` is the CURP
/// check the identity rule is compared with (`tests/api/counter.rs`); `phonenumbers` (libphonenumber's
/// Python port) is what `phone_e164` is compared with (`tests/api/contact.rs`).
const PYTHON_TOOLS: &[&str] = &[
    "schemathesis==4.32.5",
    "openapi-spec-validator==0.9.0",
    "biip==5.2.0",
    "fhir.resources==8.1.0",
    "kubernetes-validate==1.34.0",
    "python-stdnum==2.2",
    "phonenumbers==9.0.43",
    "twilio==9.13.0",
];
/// Examples per operation and token in CI's bounded pass.
pub const CI_EXAMPLES: u32 = 25;
const ADMIN_TOKEN: &str = "fuzz-admin-token-0123456789abcdef";

/// The virtualenv's `bin/`, created and filled when missing.
pub fn python_tools() -> Result<PathBuf> {
    let venv = target_dir().join("receta-py");
    let bin = venv.join("bin");
    let marker = venv.join(format!("installed-{}", PYTHON_TOOLS.join("+")));
    if marker.exists() {
        return Ok(bin);
    }
    eprintln!(
        "xtask: installing {} into {}",
        PYTHON_TOOLS.join(" "),
        venv.display()
    );
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(bin.join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(PYTHON_TOOLS))?;
    std::fs::write(&marker, "").map_err(|e| e.to_string())?;
    Ok(bin)
}

/// Validates `openapi/receta.json` against the OpenAPI 3.1 specification.
pub fn validate_openapi() -> Result {
    let bin = python_tools()?;
    run(Command::new(bin.join("openapi-spec-validator")).arg(root().join("openapi/receta.json")))
}

/// The seed of CI's bounded pass (the same inputs every run; `cargo xtask fuzz` draws new ones).
pub const CI_SEED: &str = "20261123";

pub fn fuzz(examples: u32) -> Result {
    fuzz_with(&host_binary(), examples, None)
}

/// The bounded, reproducible pass `cargo xtask test` ends with.
pub fn ci_pass() -> Result {
    fuzz_with(&tested_host(), CI_EXAMPLES, Some(CI_SEED))
}

fn fuzz_with(host: &Path, examples: u32, seed: Option<&str>) -> Result {
    let bin = python_tools()?;
    validate_openapi()?;
    let state = target_dir().join("fuzz-state");
    let _ = std::fs::remove_dir_all(&state);
    let mut host = Command::new(host)
        .args(["up", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(&state)
        .arg("--from")
        .arg(root().join("spin.toml"))
        .env("SPIN_VARIABLE_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("SPIN_VARIABLE_VERIFY_CALLS_PER_MINUTE", "1000000")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("receta: {e}"))?;
    let url = serving_url(&mut host);
    let result = url.and_then(|url| {
        eprintln!("xtask fuzz: {url}, {examples} examples per operation and token");
        let mut driver = Command::new(bin.join("python"));
        if let Some(seed) = seed {
            driver.env("RECETA_FUZZ_SEED", seed);
        }
        run(driver
            .arg(root().join("openapi/fuzz.py"))
            .arg(bin.join("st"))
            .arg(&url)
            .arg(ADMIN_TOKEN)
            .arg(examples.to_string())
            .arg(target_dir().join("fuzz-report")))
    });
    let _ = host.kill();
    let _ = host.wait();
    result
}

/// The host's `Serving http://…` line. Its stdout is read to the end in a thread of its own, so
/// the host never writes into a closed pipe.
fn serving_url(host: &mut std::process::Child) -> Result<String> {
    use std::io::BufRead;
    let stdout = host.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
        {
            if let Some(url) = line.trim().strip_prefix("Serving ") {
                let _ = tx.send(url.trim().to_string());
            }
        }
    });
    rx.recv_timeout(std::time::Duration::from_secs(120))
        .map_err(|_| "the host did not start serving".to_string())
}
