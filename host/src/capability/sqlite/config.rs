//! `[sqlite_database.<label>]` in the runtime config, with Spin's schema:
//!
//! - `type = "spin"`, optional `path`: a local SQLite file (relative to the current directory, as
//!   in Spin); no `path` is a process-wide in-memory database.
//! - `type = "libsql"`, `url`, `token`: a remote libSQL database (Turso, or a self-hosted `sqld`),
//!   spoken to over HTTP (Hrana). `url` is `http://`, `https://` or `libsql://` (TLS).
//!   This host's extension (Spin refuses both keys): `replica_path`, a local file kept in sync with
//!   that server as an embedded replica (reads served from it, writes sent to the server), and
//!   `sync_interval_ms`, how often it pulls the server's changes ([`DEFAULT_SYNC_INTERVAL`]).
//!
//! `default` is always configured: `<state dir>/sqlite_db.db` unless the runtime config says
//! otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};

use crate::config::runtime::RuntimeConfig;

/// File name of the `default` database in the state directory (Spin's).
pub const DEFAULT_DB_FILE: &str = "sqlite_db.db";

/// How often an embedded replica pulls the primary's changes unless `sync_interval_ms` says: the
/// bound on how stale a node's read of another node's write can be (plus one pull's time).
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_millis(500);

/// Where one database label lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local database file.
    File(PathBuf),
    /// A process-wide in-memory database (`type = "spin"` without `path`).
    Memory(String),
    /// A libSQL server.
    Remote {
        /// `http(s)://` or `libsql://` address.
        url: String,
        /// Bearer token (a JWT for Turso or an `sqld` with `--auth-jwt-key-file`; may be empty).
        token: String,
        /// A local copy kept in sync with the server, when configured.
        replica: Option<Replica>,
    },
}

/// An embedded replica of a libSQL database (`replica_path`, `sync_interval_ms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    /// The local file (relative paths from the current directory, as `type = "spin"`'s `path`).
    pub path: PathBuf,
    /// How often it pulls the server's changes.
    pub sync_interval: Duration,
}

/// Every configured label's location.
pub fn locations(
    state_dir: &Path,
    runtime_config: &RuntimeConfig,
    cwd: &Path,
) -> Result<BTreeMap<String, Location>> {
    let mut locations = BTreeMap::new();
    locations.insert(
        "default".to_string(),
        Location::File(state_dir.join(DEFAULT_DB_FILE)),
    );
    if let Some(tables) = runtime_config.section("sqlite_database") {
        let tables = tables
            .as_table()
            .context("[sqlite_database] in the runtime config must be a table of labels")?;
        for (label, config) in tables {
            let location = parse(label, config, cwd)
                .with_context(|| format!("runtime config [sqlite_database.{label}]"))?;
            locations.insert(label.clone(), location);
        }
    }
    Ok(locations)
}

fn parse(label: &str, config: &toml::Value, cwd: &Path) -> Result<Location> {
    let table = config.as_table().context("expected a table")?;
    let string = |key: &str| -> Result<Option<String>> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => bail!("`{key}` must be a string, got {other}"),
        }
    };
    let allow_only = |keys: &[&str]| -> Result<()> {
        for key in table.keys() {
            ensure!(
                key == "type" || keys.contains(&key.as_str()),
                "unknown key `{key}` (this type takes {})",
                keys.join(", ")
            );
        }
        Ok(())
    };
    match string("type")?.as_deref() {
        Some("spin") => {
            allow_only(&["path"])?;
            Ok(match string("path")? {
                Some(path) => Location::File(cwd.join(path)),
                None => Location::Memory(format!("receta-{label}-{}", std::process::id())),
            })
        }
        Some("libsql") => {
            allow_only(&["url", "token", "replica_path", "sync_interval_ms"])?;
            let url = string("url")?.context("`url` is missing")?;
            ensure!(
                ["http://", "https://", "libsql://"]
                    .iter()
                    .any(|scheme| url.starts_with(scheme)),
                "`url` must start with http://, https:// or libsql://, got {url:?}"
            );
            // Spin requires the key (an empty string for a server without authentication).
            let token = string("token")?.context("missing field `token`")?;
            let sync_interval = match table.get("sync_interval_ms") {
                None => DEFAULT_SYNC_INTERVAL,
                Some(toml::Value::Integer(ms)) if (1..=3_600_000).contains(ms) => {
                    Duration::from_millis(*ms as u64)
                }
                Some(other) => {
                    bail!(
                        "`sync_interval_ms` must be a whole number of ms, 1 to 3600000, got {other}"
                    )
                }
            };
            let replica = match string("replica_path")? {
                Some(path) => Some(Replica {
                    path: cwd.join(path),
                    sync_interval,
                }),
                None => {
                    ensure!(
                        !table.contains_key("sync_interval_ms"),
                        "`sync_interval_ms` needs `replica_path` (the local copy it keeps in sync)"
                    );
                    None
                }
            };
            Ok(Location::Remote {
                url,
                token,
                replica,
            })
        }
        Some(other) => bail!("unknown database type {other:?} (use \"spin\" or \"libsql\")"),
        None => bail!("`type` is missing (use type = \"spin\" or type = \"libsql\")"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_config(text: &str) -> Result<BTreeMap<String, Location>> {
        let config = RuntimeConfig::parse(text)?;
        locations(Path::new("/state"), &config, Path::new("/cwd"))
    }

    #[test]
    fn spin_and_libsql_labels() {
        let found = parse_config(
            r#"
            [sqlite_database.default]
            type = "libsql"
            url = "http://127.0.0.1:8080"
            token = "t"
            [sqlite_database.files]
            type = "spin"
            path = "x/files.db"
            "#,
        )
        .unwrap();
        assert_eq!(
            found["default"],
            Location::Remote {
                url: "http://127.0.0.1:8080".into(),
                token: "t".into(),
                replica: None,
            }
        );
        assert_eq!(found["files"], Location::File("/cwd/x/files.db".into()));
        // As in Spin, `token` is required (empty for a server without authentication).
        let untokened = "[sqlite_database.default]\ntype = \"libsql\"\nurl = \"http://h:1\"\n";
        let err = format!("{:#}", parse_config(untokened).unwrap_err());
        assert!(err.contains("missing field `token`"), "{err}");
        let plain = parse_config("").unwrap();
        assert_eq!(
            plain["default"],
            Location::File("/state/sqlite_db.db".into())
        );
    }

    #[test]
    fn a_libsql_database_may_keep_an_embedded_replica() {
        let found = parse_config(
            r#"
            [sqlite_database.default]
            type = "libsql"
            url = "http://127.0.0.1:8080"
            token = ""
            replica_path = "replica/app.db"
            sync_interval_ms = 250
            [sqlite_database.other]
            type = "libsql"
            url = "http://127.0.0.1:8080"
            token = ""
            replica_path = "/abs/other.db"
            "#,
        )
        .unwrap();
        let replica = |l: &str| match &found[l] {
            Location::Remote { replica, .. } => replica.clone().unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            replica("default"),
            Replica {
                path: "/cwd/replica/app.db".into(),
                sync_interval: Duration::from_millis(250)
            }
        );
        assert_eq!(replica("other").path, PathBuf::from("/abs/other.db"));
        assert_eq!(replica("other").sync_interval, DEFAULT_SYNC_INTERVAL);
    }

    #[test]
    fn mistakes_are_named() {
        for (text, needle) in [
            ("[sqlite_database.a]\ntype = \"libsql\"", "`url` is missing"),
            (
                "[sqlite_database.a]\ntype = \"libsql\"\nurl = \"ftp://x\"",
                "must start",
            ),
            (
                "[sqlite_database.a]\ntype = \"spin\"\nurl = \"http://x\"",
                "unknown key `url`",
            ),
            (
                "[sqlite_database.a]\ntype = \"redis\"",
                "unknown database type",
            ),
            ("[sqlite_database.a]\npath = \"x\"", "`type` is missing"),
            (
                "[sqlite_database.a]\ntype = \"libsql\"\nurl = \"http://x\"\ntoken = \"\"\nsync_interval_ms = 5",
                "needs `replica_path`",
            ),
            (
                "[sqlite_database.a]\ntype = \"libsql\"\nurl = \"http://x\"\ntoken = \"\"\nreplica_path = \"r\"\nsync_interval_ms = 0",
                "`sync_interval_ms` must be",
            ),
        ] {
            let err = format!("{:#}", parse_config(text).unwrap_err());
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
