//! The names a manifest gives things, checked as Spin 4 checks them when it reads `spin.toml`:
//! `[variables]` and `[component.<id>.variables]` keys are lower snake case, component ids are
//! kebab case, and each component's dependency entries name distinct packages (Spin's composer
//! registers one package per entry). The messages use Spin's wording, so an app refused here reads
//! the same as on `spin up`.

use anyhow::{Result, bail};

/// `[variables]` and component variable keys: words of ASCII letters and digits separated by single
/// `_`, each starting with a lowercase letter (`webhook_host_a`; not `webhook_host_1`).
pub fn lower_snake(id: &str) -> Result<()> {
    words(id, '_', true)
}

/// Component ids: words separated by single `-`, each starting with a letter and all lowercase or
/// all uppercase (`outbox-worker`).
pub fn kebab(id: &str) -> Result<()> {
    words(id, '-', false)
}

fn words(id: &str, delim: char, lower_only: bool) -> Result<()> {
    let wrong = if delim == '_' { '-' } else { '_' };
    if id.is_empty() {
        bail!("empty");
    }
    if id.contains(wrong) {
        bail!("words must be separated with {delim:?}, not {wrong:?}");
    }
    for word in id.split(delim) {
        let Some(first) = word.chars().next() else {
            bail!("{delim:?}-separated words must not be empty");
        };
        if !first.is_ascii_alphabetic() {
            bail!("{delim:?}-separated words must start with an ASCII letter; got {first:?}");
        }
        let upper = first.is_ascii_uppercase();
        for c in word.chars().skip(1) {
            if !c.is_ascii_alphanumeric() {
                bail!("{delim:?}-separated words may only contain alphanumeric ASCII; got {c:?}");
            }
            if c.is_ascii_alphabetic() && c.is_ascii_uppercase() != upper {
                bail!(
                    "{delim:?}-separated words must be all lowercase or all UPPERCASE; got {word:?}"
                );
            }
        }
        if lower_only && upper {
            bail!("Lower-case identifiers must be all lowercase; got {id:?}");
        }
    }
    Ok(())
}

/// The package Spin's composer registers a dependency entry under: `ns:pkg` for `ns:pkg/iface@ver`
/// (any interface, any version), the name itself for a plain name.
pub fn dependency_package(name: &str) -> &str {
    if !name.contains([':', '/']) {
        return name;
    }
    let name = name.split_once('@').map_or(name, |(name, _)| name);
    name.split_once('/').map_or(name, |(package, _)| package)
}

/// Spin 4 composes a component by registering the component itself (as a package named after its
/// id) and then one package per dependency entry; a second entry of the same package fails with
/// wac-graph's "has already been registered". So do two interfaces of one WIT package as two entries:
/// name the package once (`"ns:pkg@1.0.0" = ...`) or give each interface its own package.
pub fn distinct_dependency_packages<'a>(
    component: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    let mut seen = vec![component];
    for name in names {
        let package = dependency_package(name);
        if seen.contains(&package) {
            bail!(
                "failed to resolve dependencies for component {component:?}: package `{package}` \
                 has already been registered in the graph (Spin registers one package per \
                 dependency entry: name the package once, e.g. \"{package}@<version>\", or give \
                 each dependency's interfaces a package of their own)"
            );
        }
        seen.push(package);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<()>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn variable_names_are_lower_snake_words_that_start_with_a_letter() {
        for good in ["admin_token", "webhook_host_a", "a", "k8s_url"] {
            assert!(lower_snake(good).is_ok(), "{good}");
        }
        assert_eq!(
            message(lower_snake("webhook_host_1")),
            "'_'-separated words must start with an ASCII letter; got '1'"
        );
        assert_eq!(
            message(lower_snake("relay-host")),
            "words must be separated with '_', not '-'"
        );
        assert_eq!(
            message(lower_snake("a__b")),
            "'_'-separated words must not be empty"
        );
        assert!(message(lower_snake("Admin")).contains("lowercase"));
        assert!(message(lower_snake("")).contains("empty"));
    }

    #[test]
    fn component_ids_are_kebab_words() {
        assert!(kebab("outbox-worker").is_ok());
        assert!(kebab("API-v2").is_ok());
        assert!(message(kebab("outbox_worker")).contains("not '_'"));
        assert!(message(kebab("worker-2")).contains("start with an ASCII letter"));
        assert!(message(kebab("Api")).contains("all lowercase or all UPPERCASE"));
    }

    #[test]
    fn a_dependency_entry_registers_its_package() {
        assert_eq!(dependency_package("receta:auth/auth@0.1.0"), "receta:auth");
        assert_eq!(dependency_package("receta:catalog@0.1.0"), "receta:catalog");
        assert_eq!(dependency_package("receta:auth/auth"), "receta:auth");
        assert_eq!(dependency_package("my-dep"), "my-dep");
    }

    #[test]
    fn two_entries_of_one_package_are_refused_as_spin_composes() {
        let ok = ["receta:auth/auth@0.1.0", "receta:catalog@0.1.0"];
        assert!(distinct_dependency_packages("gateway", ok).is_ok());
        let twice = ["receta:erx/auth@0.1.0", "receta:erx/catalog@0.1.0"];
        let err = message(distinct_dependency_packages("gateway", twice));
        assert!(
            err.contains("package `receta:erx` has already been registered in the graph"),
            "{err}"
        );
        assert!(distinct_dependency_packages("gateway", ["gateway"]).is_err());
    }
}
