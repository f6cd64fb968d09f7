//! Spin application variables: `[variables]` resolved once at start-up.
//!
//! Resolution order for an application variable `x` (Spin's environment provider, then the
//! manifest): the process environment `SPIN_VARIABLE_X`, then a `SPIN_VARIABLE_X=...` line in a
//! `.env` file (Spin reads `.env` in the current directory; `receta` also reads the one beside the
//! manifest, the current directory's winning), then the manifest `default`. A `required` variable
//! with no value stops start-up.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::config::manifest::Manifest;

/// Prefix of the environment variables Spin reads application variables from.
pub const ENV_PREFIX: &str = "SPIN_VARIABLE_";

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

#[cfg(test)]
impl AppVariables {
    /// Fixed values, for tests.
    pub fn from_pairs(pairs: &[(&str, &str)]) -> Self {
        let values = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Self { values }
    }
}
