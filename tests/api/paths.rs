//! Where the repository is, for the modules that read its files (a leaf: `helpers` and `contract`
//! both stand on it, so neither imports the other to find it).

use std::path::{Path, PathBuf};

/// The repository: the parent of this crate's directory, as `cargo test` says at run time (a test
/// binary shared through one target directory by two checkouts serves the one that runs it), else
/// as it was when compiled.
pub fn repo_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest.parent().unwrap_or(Path::new(".")).to_path_buf()
}
