//! Component dependencies, composed at load time with `wac-graph` as Spin does.
//!
//! Plug semantics: every import of the main component that a `[component.x.dependencies]` key
//! names is satisfied by the same-named export (or the `export` given) of that dependency;
//! dependencies are never composed further. Whatever the dependencies themselves import (Spin
//! SQLite, variables, `wasi:http` outgoing, `wasi:cli`, ...) becomes an import of the composed
//! component, so it runs with the main component's permissions: that is
//! `dependencies_inherit_configuration = true` (Spin 3 and 4) or a per-dependency
//! `inherit_configuration = true` (Spin 4).
//!
//! Key matching follows Spin: `ns:pkg/iface@1.0.0` names exactly that import; `ns:pkg/iface` any
//! version of it; `ns:pkg@1.0.0` / `ns:pkg` every interface of the package (at that version); a
//! plain kebab name the plain import of that name. An import matched by two keys is an error,
//! and so is a key matching no import.

use std::collections::{BTreeMap, HashSet};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};
use wac_graph::types::{Package, SubtypeChecker};
use wac_graph::{CompositionGraph, EncodeOptions, NodeId};

use crate::config::manifest::{ComponentDecl, Dependency};

/// Interfaces that carry a permission: a dependency importing one must inherit configuration.
const PERMISSIONED: &[&str] = &[
    "spin:sqlite/",
    "fermyon:spin/",
    "spin:postgres/",
    "wasi:http/outgoing-handler",
    "wasi:keyvalue/",
    "wasi:config/",
    "wasi:sockets/",
];

/// A component's source files, read: the main component and each dependency.
pub struct Sources {
    /// The component id.
    pub id: String,
    /// The main component's bytes.
    pub main: Vec<u8>,
    /// Each dependency with its bytes, in manifest order.
    pub dependencies: Vec<(Dependency, Vec<u8>)>,
}

/// Bumped whenever the composition below changes what it produces for the same inputs.
const COMPOSITION_VERSION: &str = "receta-compose-1 wac-graph-0.12";

impl Sources {
    /// Reads the component's files.
    pub fn read(component: &ComponentDecl) -> Result<Self> {
        let main = std::fs::read(&component.source).with_context(|| {
            format!(
                "cannot read the source of component {:?}: {} (was it built? `spin build` / `cargo xtask build`)",
                component.id,
                component.source.display()
            )
        })?;
        let mut dependencies = Vec::new();
        for dep in &component.dependencies {
            let bytes = std::fs::read(&dep.source).with_context(|| {
                format!(
                    "cannot read dependency {:?}: {}",
                    dep.name,
                    dep.source.display()
                )
            })?;
            dependencies.push((dep.clone(), bytes));
        }
        Ok(Self {
            id: component.id.clone(),
            main,
            dependencies,
        })
    }

    /// One component on its own (a lazily linked component or dependency), for its cache key.
    pub fn single(id: &str, bytes: Vec<u8>) -> Self {
        Self {
            id: id.to_string(),
            main: bytes,
            dependencies: Vec::new(),
        }
    }

    /// SHA-256 of everything the composed bytes depend on, for the compiled-code cache key: the
    /// same inputs always compose to the same component, so a cache hit skips composing altogether.
    pub fn identity(&self) -> [u8; 32] {
        let mut hasher = Sha256::new();
        let mut field = |bytes: &[u8]| {
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        field(COMPOSITION_VERSION.as_bytes());
        field(&self.main);
        for (dep, bytes) in &self.dependencies {
            field(dep.name.as_bytes());
            field(dep.export.as_deref().unwrap_or("").as_bytes());
            field(&[u8::from(dep.inherit_configuration)]);
            field(bytes);
        }
        hasher.finalize().into()
    }

    /// The runnable component: the main one, composed with its dependencies if it has any.
    pub fn compose(self) -> Result<Vec<u8>> {
        if self.dependencies.is_empty() {
            return Ok(self.main);
        }
        let id = self.id.clone();
        compose(&self.id, self.main, &self.dependencies)
            .with_context(|| format!("cannot compose component {id:?} with its dependencies"))
    }
}

/// Does a dependency key match an import name?
fn matches(key: &str, import: &str) -> bool {
    let Some((ns_pkg_key, rest_key)) = split_package(key) else {
        return key == import; // plain kebab names
    };
    let Some((ns_pkg_import, rest_import)) = split_package(import) else {
        return false;
    };
    if ns_pkg_key != ns_pkg_import {
        return false;
    }
    // rest = (interface, version)
    let (key_iface, key_version) = rest_key;
    let (import_iface, import_version) = rest_import;
    if let Some(iface) = key_iface
        && Some(iface) != import_iface
    {
        return false;
    }
    if let Some(version) = key_version
        && Some(version) != import_version
    {
        return false;
    }
    true
}

/// `ns:pkg/iface@ver` → (`ns:pkg`, (Some(iface), Some(ver))); `ns:pkg@ver` → (`ns:pkg`, (None, Some(ver))).
#[allow(clippy::type_complexity, reason = "a private parser helper")]
fn split_package(name: &str) -> Option<(&str, (Option<&str>, Option<&str>))> {
    if !name.contains(':') {
        return None;
    }
    let (path, version) = match name.split_once('@') {
        Some((path, version)) => (path, Some(version)),
        None => (name, None),
    };
    Some(match path.split_once('/') {
        Some((pkg, iface)) => (pkg, (Some(iface), version)),
        None => (path, (None, version)),
    })
}

/// Which dependency satisfies each plugged import (import name → dependency index), by Spin's key
/// matching: a key matching no import, or an import matched by two keys, is an error.
pub fn plugs<'a>(
    id: &str,
    imports: &[String],
    dependencies: impl Iterator<Item = &'a Dependency>,
) -> Result<BTreeMap<String, usize>> {
    let dependencies: Vec<&Dependency> = dependencies.collect();
    let mut plugged: BTreeMap<String, usize> = BTreeMap::new();
    for (n, dep) in dependencies.iter().enumerate() {
        let matched: Vec<&String> = imports.iter().filter(|i| matches(&dep.name, i)).collect();
        if matched.is_empty() {
            bail!(
                "dependency {:?} matches no import of component {id:?} (its imports: {})",
                dep.name,
                imports.join(", ")
            );
        }
        for import in matched {
            if let Some(other) = plugged.insert(import.clone(), n) {
                bail!(
                    "import {import:?} is matched by two dependencies: {:?} and {:?}",
                    dependencies[other].name,
                    dep.name
                );
            }
        }
    }
    Ok(plugged)
}

fn compose(id: &str, main: Vec<u8>, dependencies: &[(Dependency, Vec<u8>)]) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let main_pkg = Package::from_bytes(&format!("receta:{id}"), None, main, graph.types_mut())
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .context("cannot read the main component")?;
    let main_world = main_pkg.ty();
    let main_id = graph
        .register_package(main_pkg)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let main_instance = graph.instantiate(main_id);
    let imports: Vec<String> = graph.types()[main_world].imports.keys().cloned().collect();

    let plugged = plugs(id, &imports, dependencies.iter().map(|(dep, _)| dep))?;

    let mut instances: Vec<Option<(NodeId, wac_graph::types::WorldId)>> =
        vec![None; dependencies.len()];
    let mut cache = HashSet::new();
    for (import, n) in &plugged {
        let (dep, bytes) = &dependencies[*n];
        let (instance, world) = match instances[*n] {
            Some(existing) => existing,
            None => {
                let pkg = Package::from_bytes(
                    &format!("receta-dep:{id}-{n}"),
                    None,
                    bytes.clone(),
                    graph.types_mut(),
                )
                .map_err(|e| anyhow::anyhow!("{e:#}"))
                .with_context(|| {
                    format!(
                        "cannot read dependency {:?} ({})",
                        dep.name,
                        dep.source.display()
                    )
                })?;
                let world = pkg.ty();
                check_inheritance(dep, graph.types()[world].imports.keys())?;
                let pkg_id = graph
                    .register_package(pkg)
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                let instance = graph.instantiate(pkg_id);
                instances[*n] = Some((instance, world));
                (instance, world)
            }
        };
        let export = dep.export.clone().unwrap_or_else(|| import.clone());
        let Some(export_ty) = graph.types()[world].exports.get(&export).copied() else {
            bail!(
                "dependency {:?} ({}) does not export {export:?} to satisfy import {import:?}",
                dep.name,
                dep.source.display()
            );
        };
        let import_ty = graph.types()[main_world].imports[import.as_str()];
        SubtypeChecker::new(&mut cache)
            .is_subtype(export_ty, graph.types(), import_ty, graph.types())
            .map_err(|e| anyhow::anyhow!("{e:#}"))
            .with_context(|| {
                format!(
                    "dependency {:?} export {export:?} does not fit import {import:?}",
                    dep.name
                )
            })?;
        let alias = graph
            .alias_instance_export(instance, &export)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        graph
            .set_instantiation_argument(main_instance, import, alias)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("cannot plug {import:?}"))?;
    }

    let exports: Vec<String> = graph.types()[main_world].exports.keys().cloned().collect();
    for export in exports {
        let alias = graph
            .alias_instance_export(main_instance, &export)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        graph
            .export(alias, &export)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let options = EncodeOptions {
        // Wasmtime validates the result when it compiles it.
        validate: false,
        ..EncodeOptions::default()
    };
    graph
        .encode(options)
        .map_err(|e| anyhow::anyhow!("{e:#}"))
        .context("cannot encode the composition")
}

/// A dependency that does not inherit configuration would run with no permissions in Spin (a
/// deny-all adapter is plugged in). `receta` cannot do that, so it refuses such a dependency if
/// it imports a permissioned interface.
pub fn check_inheritance<'a>(
    dep: &Dependency,
    imports: impl Iterator<Item = &'a String>,
) -> Result<()> {
    if dep.inherit_configuration {
        return Ok(());
    }
    let permissioned: Vec<&String> = imports
        .filter(|i| PERMISSIONED.iter().any(|p| i.starts_with(p)))
        .collect();
    if !permissioned.is_empty() {
        bail!(
            "dependency {:?} imports {} but does not inherit configuration; set \
             `dependencies_inherit_configuration = true` on the component (Spin 3 and 4) so it runs \
             with the component's permissions",
            dep.name,
            permissioned
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn key_matching_follows_spin() {
        for (key, import) in [
            ("foo:bar/baz@0.1.0", "foo:bar/baz@0.1.0"),
            ("foo:bar/baz", "foo:bar/baz@0.1.0"),
            ("foo:bar/baz", "foo:bar/baz"),
            ("foo:bar", "foo:bar/baz@0.1.0"),
            ("foo:bar@0.1.0", "foo:bar/baz@0.1.0"),
            ("foo-bar", "foo-bar"),
        ] {
            assert!(matches(key, import), "{key} should match {import}");
        }
        for (key, import) in [
            ("foo:bar/baz@0.1.0", "foo:bar/baz"),
            ("foo:bar/baz", "foo:bar/bub@0.1.0"),
            ("foo:bar", "foo:bub/bib"),
            ("foo:bar@0.1.0", "foo:bar/baz"),
            ("foo:bar/baz", "foo:bar/baz-bub"),
            ("foo:bar/baz", "foo-bar"),
        ] {
            assert!(!matches(key, import), "{key} should not match {import}");
        }
    }
}
