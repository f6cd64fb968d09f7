//! The subset of Spin's application manifest (`spin.toml`, manifest version 2) that `receta` runs.
//!
//! Unknown keys are ignored, as Spin ignores tool-specific ones; features `receta` cannot honour
//! (remote sources, key-value stores, file mounts, WAGI, ...) are rejected with a clear error
//! instead of being silently dropped.
//!
//! One file (over 500 lines): the manifest's schema and its validation, half of it unit tests of the messages a wrong `spin.toml` gets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

use crate::config::ids;
use crate::config::template::Template;

/// A parsed and validated application manifest.
#[derive(Debug)]
pub struct Manifest {
    /// Absolute path of the manifest file.
    pub path: PathBuf,
    /// Directory containing the manifest; relative paths are resolved against it.
    pub dir: PathBuf,
    /// `[application]`
    pub application: Application,
    /// `[variables]`, by name.
    pub variables: BTreeMap<String, VariableDecl>,
    /// `[[trigger.http]]`, in manifest order.
    pub http_triggers: Vec<HttpTrigger>,
    /// `[[trigger.cron]]`, in manifest order (run by `trigger::cron`).
    pub cron_triggers: Vec<CronTrigger>,
    /// `[component.<id>]`, by id.
    pub components: BTreeMap<String, ComponentDecl>,
}

/// `[application]`
#[derive(Debug, Clone)]
pub struct Application {
    /// `name`
    pub name: String,
    /// `version`
    pub version: Option<String>,
    /// `description`
    pub description: Option<String>,
    /// `[application.trigger.http] base`, default `/`.
    pub http_base: String,
}

/// One `[variables]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariableDecl {
    /// Value used when no provider has one.
    #[serde(default)]
    pub default: Option<String>,
    /// Start-up fails when no provider has a value.
    #[serde(default)]
    pub required: bool,
    /// Never logged (`receta` logs no variable values at all).
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "accepted for Spin compatibility; receta never logs values"
    )]
    pub secret: bool,
    /// Free text.
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "parsed for completeness; Spin only shows it in tooling"
    )]
    pub description: Option<String>,
}

/// What an HTTP route maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteSpec {
    /// A public route pattern such as `/api/...` or `/health`.
    Route(String),
    /// `route = { private = true }`: reachable only through service chaining (not by HTTP).
    Private,
}

/// One `[[trigger.http]]` (an `id` key is accepted and ignored).
#[derive(Debug, Clone)]
pub struct HttpTrigger {
    /// `route`
    pub route: RouteSpec,
    /// `component` (an id in `[component]`).
    pub component: String,
}

/// One `[[trigger.cron]]` (Spin's cron trigger plugin).
#[derive(Debug, Clone)]
pub struct CronTrigger {
    /// `component` (an id in `[component]`).
    pub component: String,
    /// `cron_expression`, six fields: sec min hour day-of-month month day-of-week.
    pub cron_expression: String,
}

/// One `[component.<id>]`.
#[derive(Debug, Clone)]
pub struct ComponentDecl {
    /// The component id.
    pub id: String,
    /// `source`, resolved against the manifest directory.
    pub source: PathBuf,
    /// `sqlite_databases`
    pub sqlite_databases: Vec<String>,
    /// `key_value_stores` (only `default` is defined: `capability::keyvalue`)
    pub key_value_stores: Vec<String>,
    /// `allowed_outbound_hosts` (each may contain `{{ variable }}` templates).
    pub allowed_outbound_hosts: Vec<Template>,
    /// `[component.<id>.variables]`: component variable name → template.
    pub variables: BTreeMap<String, Template>,
    /// `environment`: WASI environment variables.
    pub environment: BTreeMap<String, String>,
    /// `[component.<id>.dependencies]`, in manifest (sorted) order.
    pub dependencies: Vec<Dependency>,
}

/// One `[component.<id>.dependencies]` entry: which import it satisfies and with what.
#[derive(Debug, Clone)]
pub struct Dependency {
    /// The key: `ns:pkg/iface@ver`, `ns:pkg/iface`, `ns:pkg@ver`, `ns:pkg` or a plain kebab name.
    pub name: String,
    /// The dependency component file.
    pub source: PathBuf,
    /// `export` to use instead of the import's own name.
    pub export: Option<String>,
    /// Whether it runs with the depending component's permissions
    /// (`dependencies_inherit_configuration = true` or `inherit_configuration = true`).
    pub inherit_configuration: bool,
}

#[derive(Deserialize)]
struct RawManifest {
    spin_manifest_version: toml::Value,
    application: RawApplication,
    #[serde(default)]
    variables: BTreeMap<String, VariableDecl>,
    #[serde(default)]
    trigger: BTreeMap<String, Vec<toml::Table>>,
    #[serde(default)]
    component: BTreeMap<String, RawComponent>,
}

#[derive(Deserialize)]
struct RawApplication {
    name: String,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    trigger: BTreeMap<String, toml::Table>,
}

#[derive(Deserialize)]
struct RawComponent {
    source: toml::Value,
    #[serde(default)]
    sqlite_databases: Vec<String>,
    #[serde(default)]
    allowed_outbound_hosts: Vec<String>,
    #[serde(default)]
    allowed_http_hosts: Vec<String>,
    #[serde(default)]
    key_value_stores: Vec<String>,
    #[serde(default)]
    ai_models: Vec<String>,
    #[serde(default)]
    files: Vec<toml::Value>,
    #[serde(default)]
    variables: BTreeMap<String, String>,
    #[serde(default)]
    environment: BTreeMap<String, String>,
    #[serde(default)]
    dependencies_inherit_configuration: Option<bool>,
    #[serde(default)]
    dependencies: BTreeMap<String, toml::Value>,
}

impl Manifest {
    /// Reads and validates the manifest at `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let path = std::path::absolute(path)
            .with_context(|| format!("cannot resolve manifest path {}", path.display()))?;
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read manifest {}", path.display()))?;
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Self::parse(&text, path.clone(), dir)
            .with_context(|| format!("invalid manifest {}", path.display()))
    }

    /// Parses manifest text; `dir` is where relative paths are resolved from.
    pub fn parse(text: &str, path: PathBuf, dir: PathBuf) -> Result<Self> {
        let raw: RawManifest = toml::from_str(text).context("cannot parse TOML")?;
        match &raw.spin_manifest_version {
            toml::Value::Integer(2) => {}
            toml::Value::String(s) if s == "2" => {}
            other => bail!(
                "spin_manifest_version = {other} is not supported: receta runs manifest version 2 \
                 (`spin_manifest_version = 2`)"
            ),
        }

        let http_base = match raw.application.trigger.get("http") {
            Some(table) => match table.get("base") {
                Some(toml::Value::String(base)) => base.clone(),
                Some(other) => {
                    bail!("[application.trigger.http] base must be a string, got {other}")
                }
                None => "/".to_string(),
            },
            None => "/".to_string(),
        };
        let application = Application {
            name: raw.application.name,
            version: raw.application.version,
            description: raw.application.description,
            http_base,
        };

        for (name, decl) in &raw.variables {
            ids::lower_snake(name).with_context(|| format!("invalid [variables] name {name:?}"))?;
            ensure!(
                !(decl.required && decl.default.is_some()),
                "variable {name:?} is `required` and has a `default`: choose one"
            );
            ensure!(
                decl.required || decl.default.is_some(),
                "variable {name:?} needs either `default = \"...\"` or `required = true`"
            );
        }

        let mut components = BTreeMap::new();
        for (id, rc) in &raw.component {
            ids::kebab(id).with_context(|| format!("invalid component id {id:?}"))?;
            let decl = parse_component(id, rc, &raw.component, &raw.variables, &dir)
                .with_context(|| format!("in [component.{id}]"))?;
            components.insert(id.clone(), decl);
        }

        let mut http_triggers = Vec::new();
        let mut cron_triggers = Vec::new();
        for (kind, triggers) in &raw.trigger {
            match kind.as_str() {
                "http" => {
                    for (n, table) in triggers.iter().enumerate() {
                        let trigger = parse_http_trigger(table, &components)
                            .with_context(|| format!("in [[trigger.http]] #{}", n + 1))?;
                        http_triggers.push(trigger);
                    }
                }
                "cron" => {
                    for (n, table) in triggers.iter().enumerate() {
                        let trigger = parse_cron_trigger(table, &components)
                            .with_context(|| format!("in [[trigger.cron]] #{}", n + 1))?;
                        cron_triggers.push(trigger);
                    }
                }
                other => bail!(
                    "[[trigger.{other}]] is not supported: receta runs `http` (and parses `cron`) triggers"
                ),
            }
        }
        Ok(Self {
            path,
            dir,
            application,
            variables: raw.variables,
            http_triggers,
            cron_triggers,
            components,
        })
    }
}

fn parse_component(
    id: &str,
    rc: &RawComponent,
    all: &BTreeMap<String, RawComponent>,
    app_variables: &BTreeMap<String, VariableDecl>,
    dir: &Path,
) -> Result<ComponentDecl> {
    let source = local_source(&rc.source, dir)?;
    for label in &rc.key_value_stores {
        // Spin's wording; this host defines no store but `default` (no `[key_value_store]` in
        // its runtime config).
        ensure!(
            label == "default",
            "unknown key_value_stores label {label:?} for component {id:?} (receta defines only \"default\")"
        );
    }
    ensure!(
        rc.ai_models.is_empty(),
        "ai_models is not supported by receta"
    );
    ensure!(
        rc.files.is_empty(),
        "`files` mounts are not supported by receta: embed the data in the component"
    );
    ensure!(
        rc.allowed_http_hosts.is_empty(),
        "allowed_http_hosts is the manifest-v1 spelling: use allowed_outbound_hosts = [\"https://host\", ...]"
    );
    for label in &rc.sqlite_databases {
        ensure!(
            !label.is_empty(),
            "sqlite_databases contains an empty label"
        );
    }

    let templates = |what: &str, value: &str| -> Result<Template> {
        let template = Template::parse(value).with_context(|| format!("{what} {value:?}"))?;
        for var in template.references() {
            ensure!(
                app_variables.contains_key(var),
                "{what} {value:?} refers to {{{{ {var} }}}}, which is not declared in [variables]"
            );
        }
        Ok(template)
    };
    let allowed_outbound_hosts = rc
        .allowed_outbound_hosts
        .iter()
        .map(|h| templates("allowed_outbound_hosts entry", h))
        .collect::<Result<Vec<_>>>()?;
    let mut variables = BTreeMap::new();
    for (name, value) in &rc.variables {
        ids::lower_snake(name)
            .with_context(|| format!("invalid component variable name {name:?}"))?;
        variables.insert(name.clone(), templates(&format!("variable {name}"), value)?);
    }

    let mut dependencies = Vec::new();
    for (name, value) in &rc.dependencies {
        let dep = parse_dependency(name, value, rc.dependencies_inherit_configuration, all, dir)
            .with_context(|| format!("in dependency {name:?}"))?;
        dependencies.push(dep);
    }
    ids::distinct_dependency_packages(id, dependencies.iter().map(|d| d.name.as_str()))?;

    Ok(ComponentDecl {
        id: id.to_string(),
        source,
        sqlite_databases: rc.sqlite_databases.clone(),
        key_value_stores: rc.key_value_stores.clone(),
        allowed_outbound_hosts,
        variables,
        environment: rc.environment.clone(),
        dependencies,
    })
}

fn local_source(source: &toml::Value, dir: &Path) -> Result<PathBuf> {
    match source {
        toml::Value::String(path) => Ok(dir.join(path)),
        toml::Value::Table(t) if t.contains_key("url") => bail!(
            "a remote `source = {{ url = ... }}` is not supported by receta: download the file and use a path"
        ),
        other => bail!("`source` must be a path to a .wasm file, got {other}"),
    }
}

/// Spin 3 (`dependencies_inherit_configuration = true`, component level) and Spin 4 (that, or a
/// per-dependency `inherit_configuration = true`; the two are mutually exclusive) spellings.
fn parse_dependency(
    name: &str,
    value: &toml::Value,
    component_level: Option<bool>,
    all: &BTreeMap<String, RawComponent>,
    dir: &Path,
) -> Result<Dependency> {
    let table = match value {
        toml::Value::Table(table) => table,
        toml::Value::String(version) => bail!(
            "registry dependency {version:?} is not supported by receta: use {{ path = \"...\" }} or {{ component = \"<id>\" }}"
        ),
        other => bail!("expected a table, got {other}"),
    };
    for key in table.keys() {
        ensure!(
            matches!(
                key.as_str(),
                "path" | "component" | "export" | "inherit_configuration"
            ),
            "`{key}` is not supported in a dependency by receta (supported: path, component, export, inherit_configuration)"
        );
    }
    let source = match (table.get("path"), table.get("component")) {
        (Some(toml::Value::String(path)), None) => dir.join(path),
        (None, Some(toml::Value::String(id))) => {
            let target = all
                .get(id)
                .with_context(|| format!("{{ component = {id:?} }} names no [component.{id}]"))?;
            local_source(&target.source, dir)
                .with_context(|| format!("source of component {id:?}"))?
        }
        _ => bail!("a dependency needs exactly one of `path = \"...\"` or `component = \"<id>\"`"),
    };
    let export = match table.get("export") {
        None => None,
        Some(toml::Value::String(e)) => Some(e.clone()),
        Some(other) => bail!("`export` must be a string, got {other}"),
    };
    ensure!(
        export.is_none() || !name.contains(':') || name.contains('/'),
        "using an export to satisfy the package dependency {name:?} is not currently permitted"
    );
    let per_dependency = match table.get("inherit_configuration") {
        None => None,
        Some(toml::Value::Boolean(b)) => Some(*b),
        Some(toml::Value::Array(keys)) if keys.is_empty() => Some(false),
        Some(toml::Value::Array(_)) => bail!(
            "selective `inherit_configuration = [...]` is not supported by receta: use `true` \
             (or `dependencies_inherit_configuration = true` on the component)"
        ),
        Some(other) => bail!("`inherit_configuration` must be a boolean, got {other}"),
    };
    ensure!(
        !(component_level.is_some() && per_dependency.is_some()),
        "the component sets both `dependencies_inherit_configuration` and a per-dependency \
         `inherit_configuration`; Spin 4 rejects that: use one or the other"
    );
    Ok(Dependency {
        name: name.to_string(),
        source,
        export,
        inherit_configuration: per_dependency.or(component_level).unwrap_or(false),
    })
}

fn parse_http_trigger(
    table: &toml::Table,
    components: &BTreeMap<String, ComponentDecl>,
) -> Result<HttpTrigger> {
    let route = match table.get("route") {
        Some(toml::Value::String(route)) => RouteSpec::Route(route.clone()),
        Some(toml::Value::Table(t)) => match t.get("private") {
            Some(toml::Value::Boolean(true)) => RouteSpec::Private,
            _ => bail!("`route` must be a string pattern or `{{ private = true }}`"),
        },
        Some(other) => bail!("`route` must be a string, got {other}"),
        None => bail!("`route` is missing"),
    };
    if let Some(executor) = table.get("executor") {
        let kind = executor.get("type").and_then(|t| t.as_str()).unwrap_or("");
        ensure!(
            kind == "spin" || kind == "http",
            "executor {kind:?} is not supported by receta (only wasi:http components)"
        );
    }
    let component = trigger_component(table, components)?;
    Ok(HttpTrigger { route, component })
}

fn parse_cron_trigger(
    table: &toml::Table,
    components: &BTreeMap<String, ComponentDecl>,
) -> Result<CronTrigger> {
    let component = trigger_component(table, components)?;
    let cron_expression = match table.get("cron_expression") {
        Some(toml::Value::String(e)) => e.clone(),
        _ => bail!("`cron_expression` (a string) is missing"),
    };
    ensure!(
        cron_expression.split_whitespace().count() == 6,
        "cron_expression {cron_expression:?} must have 6 fields: sec min hour day-of-month month day-of-week"
    );
    Ok(CronTrigger {
        component,
        cron_expression,
    })
}

fn trigger_component(
    table: &toml::Table,
    components: &BTreeMap<String, ComponentDecl>,
) -> Result<String> {
    match table.get("component") {
        Some(toml::Value::String(id)) => {
            ensure!(
                components.contains_key(id),
                "component {id:?} is not defined: add [component.{id}]"
            );
            Ok(id.clone())
        }
        Some(toml::Value::Table(_)) => bail!(
            "inline `component = {{ ... }}` tables are not supported by receta: declare [component.<id>] and refer to its id"
        ),
        Some(other) => bail!("`component` must be a component id, got {other}"),
        None => bail!("`component` is missing"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest> {
        Manifest::parse(text, PathBuf::from("/app/spin.toml"), PathBuf::from("/app"))
    }

    const BASE: &str = r#"
spin_manifest_version = 2
[application]
name = "t"
[application.trigger.http]
base = "/"
[variables]
token = { required = true, secret = true }
origin = { default = "http://127.0.0.1:1" }
[[trigger.http]]
route = "/api/..."
component = "api"
[[trigger.http]]
route = { private = true }
component = "api"
[component.api]
source = "target/api.wasm"
sqlite_databases = ["default"]
allowed_outbound_hosts = ["{{ origin }}"]
dependencies_inherit_configuration = true
[component.api.variables]
token = "{{ token }}"
[component.api.dependencies]
"receta:patients/patients@0.1.0" = { path = "target/patients.wasm" }
"receta:rx/rx" = { component = "rx" }
[component.api.build]
command = "cargo build"
[component.rx]
source = "target/rx.wasm"
"#;

    #[test]
    fn parses_the_supported_subset() {
        let m = parse(BASE).unwrap();
        assert_eq!(m.http_triggers.len(), 2);
        assert_eq!(
            m.http_triggers[0].route,
            RouteSpec::Route("/api/...".into())
        );
        assert_eq!(m.http_triggers[1].route, RouteSpec::Private);
        let api = &m.components["api"];
        assert_eq!(api.source, PathBuf::from("/app/target/api.wasm"));
        assert_eq!(api.dependencies.len(), 2);
        assert!(api.dependencies.iter().all(|d| d.inherit_configuration));
        assert_eq!(
            api.dependencies[1].source,
            PathBuf::from("/app/target/rx.wasm")
        );
        assert!(m.variables["token"].required);
    }

    #[test]
    fn spin4_per_dependency_inheritance() {
        let text = BASE
            .replace("dependencies_inherit_configuration = true\n", "")
            .replace(
                "{ path = \"target/patients.wasm\" }",
                "{ path = \"target/patients.wasm\", inherit_configuration = true }",
            );
        let m = parse(&text).unwrap();
        let deps = &m.components["api"].dependencies;
        assert!(deps[0].inherit_configuration);
        assert!(!deps[1].inherit_configuration);
    }

    #[test]
    fn both_inheritance_spellings_are_rejected() {
        let text = BASE.replace(
            "{ path = \"target/patients.wasm\" }",
            "{ path = \"target/patients.wasm\", inherit_configuration = true }",
        );
        let err = format!("{:#}", parse(&text).unwrap_err());
        assert!(
            err.contains("mutually") || err.contains("one or the other"),
            "{err}"
        );
    }

    #[test]
    fn names_are_checked_as_spin_reads_them() {
        let err = format!(
            "{:#}",
            parse(&BASE.replace("origin", "origin_2")).unwrap_err()
        );
        assert!(
            err.contains("'_'-separated words must start with an ASCII letter; got '2'"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            parse(&format!("{BASE}[component.r_x]\nsource = \"x.wasm\"\n")).unwrap_err()
        );
        assert!(err.contains("invalid component id \"r_x\""), "{err}");
        let err = format!(
            "{:#}",
            parse(&BASE.replace("\"receta:rx/rx\"", "\"receta:patients/rx\"")).unwrap_err()
        );
        assert!(
            err.contains("package `receta:patients` has already been registered"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            parse(&BASE.replace(
                "\"receta:rx/rx\" = { component = \"rx\" }",
                "\"receta:rx\" = { component = \"rx\", export = \"x\" }"
            ))
            .unwrap_err()
        );
        assert!(err.contains("is not currently permitted"), "{err}");
    }

    #[test]
    fn unknown_template_variable_is_an_error() {
        let text = BASE.replace("{{ origin }}", "{{ nope }}");
        let err = format!("{:#}", parse(&text).unwrap_err());
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn unsupported_features_are_errors() {
        let text = BASE.replace(
            "sqlite_databases",
            "key_value_stores = [\"cache\"]\nsqlite_databases",
        );
        let err = format!("{:#}", parse(&text).unwrap_err());
        assert!(
            err.contains("unknown key_value_stores label \"cache\""),
            "{err}"
        );
        let text = BASE.replace(
            "sqlite_databases",
            "key_value_stores = [\"default\"]\nsqlite_databases",
        );
        assert!(parse(&text).is_ok());
        let err = format!("{:#}", parse(&BASE.replace("= 2\n", "= 1\n")).unwrap_err());
        assert!(err.contains("version"), "{err}");
    }
}
