//! Compiles the files of `migrations/` into the crate: `$OUT_DIR/migrations.rs` holds one
//! `(name, include_str!(..))` per `.sql` file, in file-name order, so a new file needs no list kept
//! by hand.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| entry.expect("a migrations/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    let mut out = String::from("/// The migrations, in order: file name and text.\n");
    out.push_str("pub const MIGRATIONS: &[(&str, &str)] = &[\n");
    for path in files {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path
            .file_name()
            .unwrap()
            .to_str()
            .expect("a UTF-8 file name");
        let path = path.canonicalize().expect("a migration's path");
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("migrations.rs");
    std::fs::write(target, out).expect("writing migrations.rs");
}
