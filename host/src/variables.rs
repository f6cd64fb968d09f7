//! Spin application variables: `[variables]` resolved at start-up, `{{ name }}` templates, and the
//! `fermyon:spin/variables@2.0.0` host interface.
//!
//! Resolution order for an application variable `x` (Spin's environment provider, then the
//! manifest): the process environment `SPIN_VARIABLE_X`, then a `SPIN_VARIABLE_X=...` line in a
//! `.env` file (Spin reads `.env` in the current directory; `receta` also reads the one beside the
//! manifest, the current directory's winning), then the manifest `default`. A `required` variable
//! with no value stops start-up.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::bindings::fermyon::spin::variables;
use crate::manifest::Manifest;
use crate::state::HostState;

/// Prefix of the environment variables Spin reads application variables from.
pub const ENV_PREFIX: &str = "SPIN_VARIABLE_";

/// A string with `{{ variable }}` expressions, as in Spin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Var(String),
}

impl Template {
    /// Parses `text`; `{{` must be closed by `}}`, and the names inside are trimmed.
    pub fn parse(text: &str) -> Result<Self> {
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            if let Some(expr) = rest.strip_prefix("{{") {
                let Some((name, after)) = expr.split_once("}}") else {
                    bail!("unmatched '{{{{' in template");
                };
                let name = name.trim();
                validate_variable_name(name)?;
                parts.push(Part::Var(name.to_string()));
                rest = after;
            } else {
                let end = rest.find("{{").unwrap_or(rest.len());
                parts.push(Part::Lit(rest[..end].to_string()));
                rest = &rest[end..];
            }
        }
        Ok(Self { parts })
    }

    /// The variable names the template refers to.
    pub fn references(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(name) => Some(name.as_str()),
            Part::Lit(_) => None,
        })
    }

    /// Substitutes resolved application variables.
    pub fn render(&self, values: &AppVariables) -> Result<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Lit(lit) => out.push_str(lit),
                Part::Var(name) => out.push_str(
                    values
                        .get(name)
                        .with_context(|| format!("unknown variable {name:?}"))?,
                ),
            }
        }
        Ok(out)
    }
}

/// Spin's rule for variable names: lower-case ASCII letters, digits and single underscores,
/// starting with a letter and ending with a letter or digit.
pub fn validate_variable_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "must not be empty"
    } else if name
        .chars()
        .any(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
    {
        "may contain only lower-case letters, numbers, and underscores"
    } else if !name.as_bytes()[0].is_ascii_lowercase() {
        "must start with a lowercase ASCII letter"
    } else if !name.as_bytes()[name.len() - 1].is_ascii_alphanumeric() {
        "must end with a lowercase ASCII letter or digit"
    } else if name.contains("__") {
        "must not contain multiple consecutive underscores"
    } else {
        return Ok(());
    };
    bail!("{name:?}: {reason}")
}

/// The resolved values of every `[variables]` entry.
#[derive(Debug, Default, Clone)]
pub struct AppVariables {
    values: HashMap<String, String>,
}

impl AppVariables {
    /// Resolves every application variable; `env` looks up process environment variables.
    pub fn resolve(manifest: &Manifest, env: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut dotenv = BTreeMap::new();
        // The manifest directory's `.env` first, so that the current directory's (Spin's) wins.
        for dir in [Some(manifest.dir.clone()), std::env::current_dir().ok()]
            .into_iter()
            .flatten()
        {
            let path = dir.join(".env");
            if path.is_file() {
                dotenv.extend(read_dotenv(&path)?);
            }
        }
        let mut values = HashMap::new();
        let mut missing = Vec::new();
        for (name, decl) in &manifest.variables {
            let key = env_key(name);
            let value = env(&key)
                .or_else(|| dotenv.get(&key).cloned())
                .or_else(|| decl.default.clone());
            match value {
                Some(value) => {
                    values.insert(name.clone(), value);
                }
                None => missing.push(format!("{name} (set {key})")),
            }
        }
        if !missing.is_empty() {
            bail!(
                "required application variable(s) have no value: {}",
                missing.join(", ")
            );
        }
        Ok(Self { values })
    }

    /// The value of an application variable.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// `admin_token` → `SPIN_VARIABLE_ADMIN_TOKEN`.
pub fn env_key(name: &str) -> String {
    format!("{ENV_PREFIX}{}", name.to_ascii_uppercase())
}

/// Reads `KEY=value` lines (`#` comments, optional `export `, optional single or double quotes).
fn read_dotenv(path: &Path) -> Result<BTreeMap<String, String>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            bail!("{}:{}: expected KEY=value", path.display(), n + 1);
        };
        let value = value.trim();
        let value = [('"', '"'), ('\'', '\'')]
            .iter()
            .find_map(|(open, close)| value.strip_prefix(*open)?.strip_suffix(*close))
            .unwrap_or(value);
        out.insert(key.trim().to_string(), value.to_string());
    }
    Ok(out)
}

/// The variables one component may read: its `[component.x.variables]`, rendered.
#[derive(Debug, Default)]
pub struct ComponentVariables {
    /// The component id, for error messages.
    pub component_id: String,
    values: HashMap<String, String>,
}

impl ComponentVariables {
    /// Renders a component's variable templates with the application variables.
    pub fn new(
        component_id: &str,
        templates: &BTreeMap<String, crate::variables::Template>,
        app: &AppVariables,
    ) -> Result<Self> {
        let mut values = HashMap::new();
        for (name, template) in templates {
            values.insert(
                name.clone(),
                template
                    .render(app)
                    .with_context(|| format!("component {component_id:?} variable {name:?}"))?,
            );
        }
        Ok(Self {
            component_id: component_id.to_string(),
            values,
        })
    }

    /// Spin's `get`: an invalid name is `invalid-name`, one the component lacks is `undefined`.
    pub fn get(&self, name: &str) -> Result<String, variables::Error> {
        validate_variable_name(name).map_err(|e| variables::Error::InvalidName(e.to_string()))?;
        self.values.get(name).cloned().ok_or_else(|| {
            variables::Error::Undefined(format!("no variable for {:?}.{name:?}", self.component_id))
        })
    }
}

impl variables::Host for HostState {
    async fn get(&mut self, name: String) -> wasmtime::Result<Result<String, variables::Error>> {
        Ok(self.component.variables.get(&name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let t = Template::parse("{{ origin }}/x{{b}}").unwrap();
        assert_eq!(t.references().collect::<Vec<_>>(), ["origin", "b"]);
        let app = AppVariables {
            values: [
                ("origin".into(), "http://h".into()),
                ("b".into(), "!".into()),
            ]
            .into(),
        };
        assert_eq!(t.render(&app).unwrap(), "http://h/x!");
        assert!(Template::parse("{{ open").is_err());
        assert!(Template::parse("{{ Bad }}").is_err());
        assert_eq!(
            Template::parse("plain").unwrap().render(&app).unwrap(),
            "plain"
        );
    }

    #[test]
    fn names() {
        assert!(validate_variable_name("admin_token").is_ok());
        for bad in ["", "Admin", "_a", "a_", "a__b", "a-b", "1a"] {
            assert!(validate_variable_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn component_get() {
        let app = AppVariables {
            values: [("a".into(), "1".into())].into(),
        };
        let templates = [("x".to_string(), Template::parse("{{ a }}!").unwrap())].into();
        let vars = ComponentVariables::new("c", &templates, &app).unwrap();
        assert_eq!(vars.get("x").unwrap(), "1!");
        assert!(matches!(vars.get("a"), Err(variables::Error::Undefined(_))));
        assert!(matches!(
            vars.get("A"),
            Err(variables::Error::InvalidName(_))
        ));
    }
}
