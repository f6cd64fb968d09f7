//! Part of `cargo xtask lint`: a file a reader finishes in one sitting. Every Rust file of the
//! repository (`git ls-files`) over [`MAX_LINES`] lines says why in its module docs, with a line
//! that starts `//! One file (over 500 lines): ` and gives the reason; split it where it splits
//! naturally otherwise.

use std::process::Command;

use crate::project::{Result, root};

/// The most lines a file has without a reason.
const MAX_LINES: usize = 500;
/// How a long file's module docs give the reason.
const REASON: &str = "//! One file (over 500 lines): ";

/// Lists the long files without a reason; an error when there is one.
pub fn check() -> Result {
    let root = root();
    let listed = Command::new("git")
        .args(["ls-files", "-z", "--", "*.rs"])
        .current_dir(&root)
        .output()
        .map_err(|e| format!("git ls-files: {e}"))?;
    let mut unexplained = Vec::new();
    let mut long = 0;
    for path in listed.stdout.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        // A file listed but deleted in the work tree is not read.
        let Ok(text) = std::fs::read_to_string(root.join(&path)) else {
            continue;
        };
        let lines = text.lines().count();
        if lines <= MAX_LINES {
            continue;
        }
        long += 1;
        if !explained(&text) {
            unexplained.push(format!("{path} ({lines} lines)"));
        }
    }
    if unexplained.is_empty() {
        println!("xtask: {long} file(s) over {MAX_LINES} lines, each saying why");
        Ok(())
    } else {
        Err(format!(
            "files over {MAX_LINES} lines that do not say why (split them, or add a line \
             `{REASON}<why>` to their module docs):\n  {}",
            unexplained.join("\n  ")
        ))
    }
}

/// Whether the module docs (the leading `//!` lines) give a reason.
fn explained(text: &str) -> bool {
    text.lines()
        .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
        .any(|l| l.starts_with(REASON) && l.len() > REASON.len() + 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_a_line_of_the_module_docs() {
        assert!(explained(
            "//! Tests.\n//! One file (over 500 lines): one resource's tests share a setup.\n\nuse x;"
        ));
        assert!(!explained("//! Tests.\n\nuse x;"));
        assert!(
            !explained("//! One file (over 500 lines): "),
            "no reason given"
        );
        assert!(!explained(
            "use x;\n//! One file (over 500 lines): not in the module docs"
        ));
    }
}
