//! `cargo xtask lint`: the oldest runtimes that run the app are written down (docs/deploying.md,
//! "Floors") for the WASIp3 world the gateway exports. That world is the `wasip3` crate's: its
//! version in Cargo.lock ends in `+wasi-<version>`. A change of it (a new release candidate, or the
//! final 0.3.0) moves the floors, so the lint fails until the table names the new world.

use crate::project::{Result, root};

const DOC: &str = "docs/deploying.md";

/// The WASI version the `wasip3` crate in Cargo.lock binds (`0.3.0-rc-2026-03-15`).
fn exported_world(lock: &str) -> Option<&str> {
    let package = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"wasip3\""))?;
    let version = package
        .lines()
        .find_map(|l| l.strip_prefix("version = \""))?;
    version.trim_end_matches('"').split("+wasi-").nth(1)
}

/// The "Floors" section of the deploying doc.
fn floors_section(doc: &str) -> Option<&str> {
    let start = doc.find("\n## Floors")?;
    let rest = &doc[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    Some(&rest[..end])
}

pub fn check() -> Result {
    let read =
        |path: &str| std::fs::read_to_string(root().join(path)).map_err(|e| format!("{path}: {e}"));
    let lock = read("Cargo.lock")?;
    let world = exported_world(&lock).ok_or("Cargo.lock: no `wasip3` package with `+wasi-`")?;
    let doc = read(DOC)?;
    let floors = floors_section(&doc).ok_or(format!("{DOC}: no \"## Floors\" section"))?;
    let named = format!("wasi:http/handler@{world}");
    if !floors.contains(&named) {
        return Err(format!(
            "the gateway exports `{named}` (the `wasip3` crate in Cargo.lock), which {DOC}'s \
             \"Floors\" table does not name: check which Spin and containerd-shim-spin accept \
             it, and update the table"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_comes_from_the_lock_and_the_doc_must_name_it() {
        let lock = "[[package]]\nname = \"wasip2\"\nversion = \"1.0.0+wasi-0.2.4\"\n\n\
                    [[package]]\nname = \"wasip3\"\nversion = \"0.6.0+wasi-0.3.0-rc-2026-03-15\"\n";
        assert_eq!(exported_world(lock), Some("0.3.0-rc-2026-03-15"));
        let doc = "# D\n\n## Floors\n\n| `wasi:http/handler@0.3.0-rc-2026-03-15` |\n\n## Next\nx";
        assert_eq!(
            floors_section(doc),
            Some("## Floors\n\n| `wasi:http/handler@0.3.0-rc-2026-03-15` |\n")
        );
        assert!(floors_section("# D\n## Other\n").is_none());
    }

    #[test]
    fn this_repository_passes() {
        check().unwrap();
    }
}
