//! Command line: `receta up [options]`, mirroring `spin up` and its defaults.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::trigger::http::reuse::{Range, ReuseConfig};

/// Usage text.
pub const USAGE: &str = "\
receta: runs a Spin application (spin.toml, manifest v2) on a built-in Wasmtime host

USAGE:
    receta up [OPTIONS]

OPTIONS:
    --listen <ADDR>               address to listen on [default: 127.0.0.1:3000]
    --from, -f <MANIFEST>         the application manifest (file, or directory holding spin.toml)
                                  [default: spin.toml]
    --state-dir <DIR>             state directory (holds sqlite_db.db) [default: <manifest dir>/.spin]
    --runtime-config-file <FILE>  Spin runtime config ([sqlite_database.<label>] type = \"spin\", path = ...)
    --sqlite <SQL | @FILE>        run a statement (or a file) on the `default` database at every start;
                                  repeatable
    --migrations <DIR>            migrations to apply once each [default: <manifest dir>/migrations]
    --max-instance-reuse-count <N | A..B>
                                  requests one instance of a WASIp3 component serves [default: 128]
    --max-instance-concurrent-reuse-count <N | A..B>
                                  requests one such instance serves at once [default: 16]
    --idle-instance-timeout <DURATION | A..B>
                                  how long an idle instance is kept for reuse [default: 1s]
    --request-timeout <DURATION | A..B>
                                  time limit of a WASIp3 request [default: RECETA_REQUEST_TIMEOUT_MS]
    --help, -h                    this text

ENVIRONMENT:
    SPIN_VARIABLE_<NAME>          value of application variable <name>
    RECETA_REQUEST_TIMEOUT_MS     time limit of one request [default: 30000]
    RECETA_MEMORY_LIMIT_MB        linear memory limit per instance [default: 128]
    RECETA_MAX_INSTANCES          concurrent instances for requests [default: 64]
    RECETA_MAX_BACKGROUND         instances for work after a response [default: 16]
    RECETA_MAX_BODY_BYTES         largest request body read [default: 5242880]
    RECETA_BODY_TIMEOUT_MS        time a request body may take to arrive [default: 10000]
    RECETA_CACHE_DIR              compiled-code cache [default: $XDG_CACHE_HOME/receta or ~/.cache/receta]
    RECETA_PERF_MAP               1: write /tmp/perf-<pid>.map so `perf` names guest functions
";

/// Options of `receta up`.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// `--listen`
    pub listen: SocketAddr,
    /// `--from`
    pub manifest: PathBuf,
    /// `--state-dir`
    pub state_dir: Option<PathBuf>,
    /// `--runtime-config-file`
    pub runtime_config: Option<PathBuf>,
    /// `--sqlite`, in order.
    pub sqlite: Vec<String>,
    /// `--migrations`
    pub migrations: Option<PathBuf>,
    /// `--max-instance-reuse-count` and the other reuse flags of `spin up`.
    pub reuse: ReuseConfig,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// `receta up`
    Up(Box<UpOptions>),
    /// `--help`
    Help,
}

/// Parses `args` (without the program name).
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command> {
    let mut args = args.into_iter();
    match args.next().as_deref() {
        Some("up") => {}
        Some("--help" | "-h" | "help") | None => return Ok(Command::Help),
        Some(other) => bail!("unknown command {other:?} (try `receta up --help`)"),
    }
    let mut options = UpOptions {
        listen: "127.0.0.1:3000".parse().expect("valid default"),
        manifest: PathBuf::from("spin.toml"),
        state_dir: None,
        runtime_config: None,
        sqlite: Vec::new(),
        migrations: None,
        reuse: ReuseConfig::default(),
    };
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args.next().with_context(|| format!("{name} needs a value")),
            }
        };
        match flag.as_str() {
            "--listen" => {
                let v = value("--listen")?;
                options.listen = v.parse().with_context(|| {
                    format!("--listen {v:?} is not an address like 127.0.0.1:3000")
                })?;
            }
            "--from" | "-f" | "--file" => {
                let v = PathBuf::from(value("--from")?);
                options.manifest = if v.is_dir() { v.join("spin.toml") } else { v };
            }
            "--state-dir" => options.state_dir = Some(PathBuf::from(value("--state-dir")?)),
            "--runtime-config-file" => {
                options.runtime_config = Some(PathBuf::from(value("--runtime-config-file")?));
            }
            "--sqlite" => options.sqlite.push(value("--sqlite")?),
            "--migrations" => options.migrations = Some(PathBuf::from(value("--migrations")?)),
            flag @ "--max-instance-reuse-count" => {
                options.reuse.max_reuse = Range::parse_count(flag, &value(flag)?)?;
            }
            flag @ "--max-instance-concurrent-reuse-count" => {
                options.reuse.max_concurrent = Range::parse_count(flag, &value(flag)?)?;
            }
            flag @ "--idle-instance-timeout" => {
                options.reuse.idle_timeout = Range::parse_duration(flag, &value(flag)?)?;
            }
            flag @ "--request-timeout" => {
                options.reuse.request_timeout = Some(Range::parse_duration(flag, &value(flag)?)?);
            }
            "--help" | "-h" => return Ok(Command::Help),
            other => bail!("unknown option {other:?} (try `receta up --help`)"),
        }
    }
    Ok(Command::Up(Box::new(options)))
}

/// An environment variable parsed as a number, or `default`.
pub fn env_number(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .with_context(|| format!("{name}={v:?} is not a number")),
        _ => Ok(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn up(args: &[&str]) -> UpOptions {
        match parse(args.iter().map(|s| s.to_string())).unwrap() {
            Command::Up(o) => *o,
            other => panic!("not up: {other:?}"),
        }
    }

    #[test]
    fn defaults_and_flags() {
        let o = up(&["up"]);
        assert_eq!(o.listen.to_string(), "127.0.0.1:3000");
        assert_eq!(o.manifest, PathBuf::from("spin.toml"));
        let o = up(&[
            "up",
            "--listen",
            "127.0.0.1:0",
            "--state-dir=/tmp/s",
            "--sqlite",
            "SELECT 1",
            "--sqlite",
            "@x.sql",
        ]);
        assert_eq!(o.listen.port(), 0);
        assert_eq!(o.state_dir, Some(PathBuf::from("/tmp/s")));
        assert_eq!(o.sqlite, ["SELECT 1", "@x.sql"]);
        assert!(parse(["up".to_string(), "--bogus".to_string()]).is_err());
    }

    #[test]
    fn spin_up_s_reuse_flags_and_defaults() {
        let o = up(&["up"]);
        assert_eq!(o.reuse, ReuseConfig::default());
        assert_eq!(o.reuse.max_reuse, Range::Value(128));
        assert_eq!(o.reuse.max_concurrent, Range::Value(16));
        let o = up(&[
            "up",
            "--max-instance-reuse-count",
            "1",
            "--max-instance-concurrent-reuse-count=2..4",
            "--idle-instance-timeout",
            "250ms",
            "--request-timeout",
            "5s",
        ]);
        assert_eq!(o.reuse.max_reuse, Range::Value(1));
        assert_eq!(o.reuse.max_concurrent, Range::Bounds(2, 4));
        assert_eq!(
            o.reuse.idle_timeout,
            Range::Value(std::time::Duration::from_millis(250))
        );
        assert_eq!(
            o.reuse.request_timeout,
            Some(Range::Value(std::time::Duration::from_secs(5)))
        );
        for bad in [
            ["up", "--max-instance-reuse-count", "0"],
            ["up", "--idle-instance-timeout", "soon"],
        ] {
            assert!(parse(bad.map(String::from)).is_err(), "{bad:?}");
        }
    }
}
