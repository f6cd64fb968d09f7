//! `cargo xtask cluster [BASE_PORT]`: a local scale-out cluster in one command (docs/scale-out.md):
//! a libSQL primary and one replica (`sqld`), and two `receta` nodes, node A on the primary and
//! node B on the replica, both running the same `spin.toml`. Prints the URLs, runs until Ctrl-C
//! (or until any process stops), then stops them all. State lives in `.spin/cluster/`.
//!
//! Ports (BASE = 3000 unless given): nodes BASE and BASE+1, the primary's Hrana endpoint BASE+80
//! and gRPC (for replicas) BASE+50, the replica's Hrana endpoint BASE+81.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::project::{DEV_OUTBOUND, Result, host_binary, root};

/// The `sqld` binary: `RECETA_SQLD`, then `sqld` on `PATH`, then `../shared/tools/libsql-server/sqld`.
pub fn sqld_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("RECETA_SQLD").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    if let Some(path) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("sqld"))
        .find(|p| p.is_file())
    {
        return Ok(path);
    }
    let shared = root().join("../shared/tools/libsql-server/sqld");
    if shared.is_file() {
        return Ok(shared);
    }
    Err("no libSQL server (sqld): get `sqld` from Turso's libsql-server releases (github.com/tursodatabase/libsql/releases) or its container image (ghcr.io/tursodatabase/libsql-server), then set RECETA_SQLD=<path> or put it on PATH".into())
}

/// Started processes, killed when dropped.
#[derive(Default)]
pub struct Processes(Vec<(String, Child)>);

impl Processes {
    /// Starts an `sqld` keeping its data in `db_path` and serving Hrana on 127.0.0.1:`http`, with
    /// `extra` arguments (a primary's gRPC listener, a replica's primary), logging to `log`;
    /// returns its URL once it answers.
    pub fn sqld(
        &mut self,
        name: &str,
        db_path: &Path,
        http: u16,
        extra: &[&str],
        log: &Path,
    ) -> Result<String> {
        let mut cmd = Command::new(sqld_binary()?);
        cmd.arg("--db-path")
            .arg(db_path)
            .args(["--http-listen-addr", &format!("127.0.0.1:{http}")])
            .arg("--no-welcome")
            .args(extra);
        let child = spawn(&mut cmd, name, log)?;
        self.0.push((name.to_string(), child));
        let url = format!("http://127.0.0.1:{http}");
        wait_http(&format!("{url}/health"), name)?;
        Ok(url)
    }
}

/// A runtime config putting the app's `default` database on the libSQL server at `url`.
pub fn runtime_config(url: &str) -> String {
    format!("[sqlite_database.default]\ntype = \"libsql\"\nurl = \"{url}\"\ntoken = \"\"\n")
}

/// `runtime_config` with an embedded replica in `replica` (this host's extension): reads served
/// from that local copy, pulled from the server every `sync_ms`.
pub fn replica_runtime_config(url: &str, replica: &Path, sync_ms: u64) -> String {
    format!(
        "{}replica_path = \"{}\"\nsync_interval_ms = {sync_ms}\n",
        runtime_config(url),
        replica.display()
    )
}

/// How often the cluster's and the bench's replicas pull the primary's changes: the bound on how
/// stale one node's read of another node's write can be (docs/scale-out.md).
pub const SYNC_MS: u64 = 500;

impl Drop for Processes {
    fn drop(&mut self) {
        for (name, child) in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
            eprintln!("xtask: stopped {name}");
        }
    }
}

fn spawn(cmd: &mut Command, name: &str, log: &Path) -> Result<Child> {
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = file.try_clone().map_err(|e| e.to_string())?;
    cmd.stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .current_dir(root())
        .spawn()
        .map_err(|e| format!("cannot start {name}: {e}"))
}

fn wait_http(url: &str, name: &str) -> Result {
    let started = Instant::now();
    let (host, path) = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/').map(|(h, p)| (h, format!("/{p}"))))
        .ok_or_else(|| format!("bad url {url}"))?;
    while started.elapsed() < Duration::from_secs(120) {
        if let Ok(mut stream) = std::net::TcpStream::connect(host) {
            use std::io::{Read, Write};
            let request =
                format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            if stream.write_all(request.as_bytes()).is_ok()
                && stream.read_to_string(&mut answer).is_ok()
                && answer.starts_with("HTTP/1.1 2")
            {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("{name} did not answer at {url} within 120 s"))
}

/// Starts the cluster and waits.
pub fn cluster(base: u16) -> Result {
    let dir = root().join(".spin/cluster");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let port = |offset: u16| base + offset;
    let mut procs = Processes::default();

    let primary_url = procs.sqld(
        "libSQL primary",
        &dir.join("primary.sqld"),
        port(80),
        &[],
        &dir.join("primary.log"),
    )?;

    // Two nodes, each with its embedded replica of the primary in its state dir.
    let mut nodes = Vec::new();
    for (name, offset) in [("a", 0), ("b", 1)] {
        let state = dir.join(format!("node-{name}"));
        let config = dir.join(format!("node-{name}.toml"));
        let replica = state.join("replica/app.db");
        std::fs::write(
            &config,
            replica_runtime_config(&primary_url, &replica, SYNC_MS),
        )
        .map_err(|e| format!("{}: {e}", config.display()))?;
        let listen = format!("127.0.0.1:{}", port(offset));
        let mut node = Command::new(host_binary());
        node.arg("up")
            .args(["--listen", &listen])
            .arg("--state-dir")
            .arg(&state)
            .arg("--runtime-config-file")
            .arg(&config);
        for (var, value) in DEV_OUTBOUND {
            if std::env::var_os(var).is_none() {
                node.env(var, value);
            }
        }
        let child = spawn(
            &mut node,
            &format!("node {name}"),
            &dir.join(format!("node-{name}.log")),
        )?;
        procs.0.push((format!("node {name}"), child));
        nodes.push((name, format!("http://{listen}"), replica));
    }
    for (name, url, _) in &nodes {
        wait_http(
            &format!("{url}/.well-known/receta-keys.json"),
            &format!("node {name}"),
        )?;
    }
    println!("Cluster up (logs and data in {}):", dir.display());
    for (name, url, replica) in &nodes {
        println!(
            "  node {name}: {url}   (reads from its replica {}, writes to the primary)",
            replica.display()
        );
    }
    println!("  libSQL primary: {primary_url}; replicas pulled every {SYNC_MS} ms");
    println!(
        "Put any load balancer in front of the nodes (nothing sticky). Ctrl-C stops everything."
    );
    loop {
        std::thread::sleep(Duration::from_millis(500));
        for (name, child) in &mut procs.0 {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "{name} stopped ({status}); see its log in {}",
                    dir.display()
                ));
            }
        }
    }
}
