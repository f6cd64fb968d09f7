//! `cargo xtask cycles` (also part of `lint`): no module of any crate imports, directly or through
//! others, a module that imports it back. Every `src/` tree of the workspace is read as files: a
//! file's module path comes from its place (`src/a/b.rs`, `src/a/b/mod.rs` → `a::b`); its edges
//! are the modules it names through `crate::…` (`use` lines with `{…}` groups included),
//! `super::…` and its own submodules' names (`router::Router` in `http/mod.rs`). A path counts
//! for the longest module it names (`crate::capability::sqlite::Connection` → `capability::sqlite`).
//! Comments and inline `mod tests` are skipped. Any strongly connected group of more than one file
//! is a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::project::{Result, root};

/// Checks every crate of the repository; the error lists the cycles found, edge by edge.
pub fn check() -> Result {
    let root = root();
    let mut report = Vec::new();
    let mut crates = 0;
    for dir in crate_dirs(&root)? {
        let name = dir
            .strip_prefix(&root)
            .unwrap_or(&dir)
            .display()
            .to_string();
        crates += 1;
        for cycle in cycles_in(&dir.join("src"))? {
            report.push(format!("{name}: {}", cycle.join(", ")));
        }
    }
    if report.is_empty() {
        println!("xtask: no module import cycle in {crates} crate(s)");
        Ok(())
    } else {
        Err(format!("module import cycles:\n  {}", report.join("\n  ")))
    }
}

/// Every directory with a `Cargo.toml` and a `src/` (the workspace's crates and fixtures).
fn crate_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            out.push(dir.clone());
        }
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() && !name.starts_with('.') && name != "target" && name != "src" {
                stack.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result {
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `src/a/b.rs` → `["a", "b"]`; `mod.rs`, `lib.rs` and `main.rs` name their directory.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        parts.clear();
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn cycles_in(src: &Path) -> Result<Vec<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut targets = BTreeSet::new();
        for path in file_paths(&code, module, &modules) {
            // The longest module the path names.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|prefix| modules.contains_key(prefix));
            if let Some(target) = target
                && &target != module
            {
                targets.insert(target);
            }
        }
        edges.insert(module.clone(), targets);
    }
    let name = |m: &Vec<String>| {
        let file = &modules[m];
        file.strip_prefix(src).unwrap_or(file).display().to_string()
    };
    // Each cycle as its files' edges inside it: `a.rs -> b.rs`.
    Ok(strongly_connected(&edges)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| {
            let mut shown = Vec::new();
            for from in &group {
                for to in edges[from].iter().filter(|to| group.contains(to)) {
                    shown.push(format!("{} -> {}", name(from), name(to)));
                }
            }
            shown
        })
        .collect())
}

/// Absolute module paths named in a file of module `module`, its inline `mod tests` left out: a
/// test module is a leaf compiled only for tests (it may call the crate's entry points).
fn file_paths(
    code: &str,
    module: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Vec<Vec<String>> {
    let main = &code[..code.find("mod tests {").unwrap_or(code.len())];
    referenced_paths(main, module, modules)
}

/// Absolute module paths named in `code` (a file of module `module`).
fn referenced_paths(
    code: &str,
    module: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        if !starts_word || !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
            i += 1;
            continue;
        }
        let (first, end) = ident(code, i);
        let base: Option<Vec<String>> = match first {
            "crate" => Some(Vec::new()),
            "super" => Some(module[..module.len().saturating_sub(1)].to_vec()),
            child => {
                let mut path = module.to_vec();
                path.push(child.to_string());
                modules.contains_key(&path).then(|| module.to_vec())
            }
        };
        match base {
            Some(base) if code[end..].starts_with("::") => {
                let start = if first == "crate" || first == "super" {
                    end + 2
                } else {
                    i
                };
                let (paths, next) = paths_after(code, start, &base);
                out.extend(paths);
                i = next;
            }
            _ => i = end,
        }
    }
    out
}

fn ident(code: &str, start: usize) -> (&str, usize) {
    let end = code[start..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(code.len(), |n| start + n);
    (&code[start..end], end)
}

/// The paths of `a::b::{c, d::e}` starting at `start`, prefixed with `base`.
fn paths_after(code: &str, start: usize, base: &[String]) -> (Vec<Vec<String>>, usize) {
    let mut path = base.to_vec();
    let mut i = start;
    loop {
        if code[i..].starts_with('{') {
            let mut out = Vec::new();
            i += 1;
            loop {
                i += code[i..].len() - code[i..].trim_start().len();
                if code[i..].starts_with('}') {
                    return (out, i + 1);
                }
                let (paths, next) = paths_after(code, i, &path);
                out.extend(paths);
                i = next;
                i += code[i..].len() - code[i..].trim_start().len();
                if code[i..].starts_with(',') {
                    i += 1;
                } else if !code[i..].starts_with('}') {
                    return (out, i);
                }
            }
        }
        let (name, end) = ident(code, i);
        if name.is_empty() {
            return (vec![path], i);
        }
        path.push(name.to_string());
        if code[end..].starts_with("::") {
            i = end + 2;
        } else {
            return (vec![path], end);
        }
    }
}

/// Tarjan's strongly connected components.
fn strongly_connected(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        groups: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.clone());
                if w == v {
                    break;
                }
            }
            s.groups.push(group);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_use_groups_and_relative_names() {
        let modules: BTreeMap<Vec<String>, PathBuf> = [
            vec![],
            vec!["a".to_string()],
            vec!["a".to_string(), "b".to_string()],
            vec!["c".to_string()],
        ]
        .into_iter()
        .map(|m| (m, PathBuf::new()))
        .collect();
        let code = "use crate::a::{b::X, Y};\nlet z = super::c::Z; b::f();";
        let found = referenced_paths(code, &["a".to_string()], &modules);
        let found: Vec<String> = found.iter().map(|p| p.join("::")).collect();
        assert_eq!(found, ["a::b::X", "a::Y", "c::Z", "a::b::f"]);
    }
}
