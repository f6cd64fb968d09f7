//! The previous release, for the upgrade test (`tests/api/upgrade.rs`, issue 88): its tree at
//! [`COMMIT`] exported from git under the target directory, its components built for
//! wasm32-wasip2 with a target directory of their own (so the current build's `*.wasm` are never
//! overwritten), and the path of its cron-less manifest handed to the suite as
//! `RECETA_PREVIOUS_MANIFEST`. The host is always this build's: what an upgrade changes is the
//! app and its database, which the host serves unchanged.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::project::{Result, WASM_TARGET, cargo, ensure_wasm_target, root, target_dir};

/// The previous release: the last one landed before the one-to-one tables are folded into their
/// owners (issue 88; stop 91), migrations up to `0033_person_proof.sql`. Move it forward when a
/// release has landed whose answers this build changes on purpose: the test compares answers
/// exactly. (`5db433a`, which issue 88 names, answered everything the same after the upgrade
/// except the patient's page, which issue 86 gave a link to the records page since.)
pub const COMMIT: &str = "3925e4e99da3d7bffe51d9ed93e03d7251955b17";

/// The manifest the upgrade test starts the previous release with (no cron trigger: the test runs
/// the jobs door itself).
const MANIFEST: &str = "spin.cloud.toml";

/// Where the components' `source` paths in the release's manifests point.
const SOURCES: &str = "target/wasm32-wasip2/release/";

/// Exports the release's tree (once per target directory), builds its components and answers its
/// manifest's path; none, said loudly, in a clone without that commit (a shallow one), where the
/// upgrade test then says it did not run.
pub fn build() -> Result<Option<PathBuf>> {
    ensure_wasm_target()?;
    let dir = target_dir().join("previous-release");
    let tree = dir.join(&COMMIT[..12]);
    if !tree.join(MANIFEST).exists()
        && let Err(e) = export(&tree)
    {
        eprintln!("xtask: WARNING: the upgrade test will not run: {e}");
        return Ok(None);
    }
    let manifest = tree.join(MANIFEST);
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let files = component_files(&text);
    if files.is_empty() {
        return Err(format!("{} names no component", manifest.display()));
    }
    let built = dir.join("target");
    // Not `project::run`, which runs in this tree's root: the release's own `.cargo/config.toml`
    // (its linker flags) applies only from its tree.
    let mut cargo = cargo();
    cargo
        .args(["build", "--release", "--target", WASM_TARGET])
        .current_dir(&tree)
        .env("CARGO_TARGET_DIR", &built);
    for file in &files {
        cargo.args(["-p", &file.trim_end_matches(".wasm").replace('_', "-")]);
    }
    let status = cargo
        .status()
        .map_err(|e| format!("building the previous release: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the previous release ({COMMIT}) failed: {status}"
        ));
    }
    let sources = tree.join(SOURCES);
    std::fs::create_dir_all(&sources).map_err(|e| e.to_string())?;
    for file in &files {
        let from = built.join(WASM_TARGET).join("release").join(file);
        std::fs::copy(&from, sources.join(file))
            .map_err(|e| format!("copying {}: {e}", from.display()))?;
    }
    Ok(Some(manifest))
}

/// `git archive` of [`COMMIT`] unpacked into `tree` (a clone without that commit says how to get it).
fn export(tree: &Path) -> Result {
    let _ = std::fs::remove_dir_all(tree);
    std::fs::create_dir_all(tree).map_err(|e| format!("{}: {e}", tree.display()))?;
    let archive = Command::new("git")
        .args(["archive", "--format=tar", COMMIT])
        .current_dir(root())
        .output()
        .map_err(|e| format!("git archive: {e}"))?;
    if !archive.status.success() {
        return Err(format!(
            "the previous release ({COMMIT}) is not in this clone ({}); the upgrade test needs \
             it: `git fetch --unshallow` or a full clone",
            String::from_utf8_lossy(&archive.stderr).trim()
        ));
    }
    let mut tar = Command::new("tar")
        .args(["-x", "-C"])
        .arg(tree)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("tar: {e}"))?;
    {
        use std::io::Write;
        let mut stdin = tar.stdin.take().ok_or("tar's stdin")?;
        stdin
            .write_all(&archive.stdout)
            .map_err(|e| format!("tar: {e}"))?;
    }
    let status = tar.wait().map_err(|e| format!("tar: {e}"))?;
    if !status.success() {
        return Err(format!("unpacking the previous release failed: {status}"));
    }
    Ok(())
}

/// The file names of the components `manifest` runs: every quoted `target/…/release/x.wasm` (a
/// component's `source`, a dependency's `path`).
fn component_files(manifest: &str) -> Vec<String> {
    let quoted = format!("\"{SOURCES}");
    let mut files: Vec<String> = manifest
        .match_indices(&quoted)
        .filter_map(|(at, _)| {
            let rest = &manifest[at + quoted.len()..];
            let file = &rest[..rest.find('"')?];
            file.ends_with(".wasm").then(|| file.to_string())
        })
        .collect();
    files.sort();
    files.dedup();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_components_are_read_from_the_sources_of_a_manifest() {
        let manifest = r#"
[component.gateway]
source = "target/wasm32-wasip2/release/gateway.wasm"
[component.outbox-worker]
source = "target/wasm32-wasip2/release/outbox_worker.wasm"
[component.gateway.dependencies]
"receta:auth/auth@0.1.0" = { path = "target/wasm32-wasip2/release/auth.wasm" }
[component.other]
source = { url = "https://example.com/x.wasm", digest = "sha256:00" }
"#;
        assert_eq!(
            component_files(manifest),
            ["auth.wasm", "gateway.wasm", "outbox_worker.wasm"]
        );
    }
}
