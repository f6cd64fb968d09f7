//! The OpenAPI document compiled in without its indentation (`$OUT_DIR/openapi.json`): the same
//! JSON, keys in the same order, ~40% smaller, so the gateway's data fits its 1 MiB of initial
//! linear memory (`.cargo/config.toml`) with room for the document to grow.

use std::path::PathBuf;

fn main() {
    let source = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
        .join("../../openapi/receta.json");
    println!("cargo:rerun-if-changed={}", source.display());
    let text = std::fs::read_to_string(&source)
        .unwrap_or_else(|e| panic!("reading {}: {e}", source.display()));
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("openapi.json");
    std::fs::write(&out, compact(&text)).unwrap();
}

/// `json` without the whitespace between its tokens (strings, escapes included, kept as written).
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
    out
}
