//! The runtime config file (`--runtime-config-file`, Spin's TOML): read once at start-up; each
//! capability parses its own section (`[sqlite_database.<label>]` in `capability::sqlite::config`).

use std::path::Path;

use anyhow::{Context, Result};

/// A parsed runtime config file (empty when none was given).
#[derive(Debug, Default)]
pub struct RuntimeConfig {
    table: toml::Table,
}

impl RuntimeConfig {
    /// Reads `path`, or an empty config when there is none.
    pub fn load(path: Option<&Path>) -> Result<Self> {
        let Some(path) = path else {
            return Ok(Self::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the runtime config {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid runtime config {}", path.display()))
    }

    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<Self> {
        Ok(Self {
            table: toml::from_str(text)?,
        })
    }

    /// The top-level section `name` (e.g. `sqlite_database`), if present.
    pub fn section(&self, name: &str) -> Option<&toml::Value> {
        self.table.get(name)
    }
}
