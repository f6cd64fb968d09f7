//! A real libSQL server (`sqld`) for the tests that run the app on libSQL: a primary, optionally
//! with a replica following it. Located as `RECETA_SQLD` (`cargo xtask test` sets it); its absence
//! fails the test (never a silent skip). A server dies with the test thread that started it (`PR_SET_PDEATHSIG`), so a
//! failed test leaves no server behind.
//!
//! Every server authenticates its clients as Turso does and as Spin requires (Spin's libSQL
//! backend always sends a token): `--auth-jwt-key-file` with an Ed25519 public key, and the
//! runtime configs carry a JWT signed by its key ([`Sqld::token`]).

use receta_test_host::free_port;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `sqld` binary: `RECETA_SQLD`, which `cargo xtask test` sets to the one it finds
/// (`xtask/src/cluster.rs`, `sqld_binary`); its absence fails the test.
pub fn binary() -> PathBuf {
    match std::env::var_os("RECETA_SQLD").filter(|p| !p.is_empty()) {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "RECETA_SQLD is not set: run the suite with `cargo xtask test`, which finds sqld \
             (RECETA_SQLD, PATH, or ../shared/tools/libsql-server/sqld), or set it yourself"
        ),
    }
}

/// One running `sqld`, killed when dropped.
pub struct Sqld {
    /// `http://127.0.0.1:<port>`: the Hrana endpoint the host's `url` points at.
    pub url: String,
    /// Where it keeps its files.
    pub dir: PathBuf,
    /// `http://127.0.0.1:<port>` of its gRPC endpoint (a primary's, for replicas).
    pub grpc: Option<String>,
    child: Child,
    /// How it was started, to start it again.
    command: Vec<std::ffi::OsString>,
    /// The JWT its clients send (`token` in a runtime config).
    pub token: String,
}

/// The key the servers' JWTs are signed with (a test key: any fixed seed serves).
const JWT_SEED: [u8; 32] = [7; 32];

/// `--auth-jwt-key-file`'s content: the public key as URL-safe base64 (one of the two forms sqld
/// reads), and a JWT it accepts: `EdDSA`, full access (`"a": "rw"`), expiring in a day.
fn jwt_key_and_token() -> (String, String) {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
    let keys = ed25519_compact::KeyPair::from_seed(ed25519_compact::Seed::new(JWT_SEED));
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 86_400;
    let header = B64.encode(br#"{"alg":"EdDSA","typ":"JWT"}"#);
    let claims = B64.encode(format!(r#"{{"a":"rw","exp":{exp}}}"#));
    let signed = format!("{header}.{claims}");
    let signature = B64.encode(keys.sk.sign(signed.as_bytes(), None).as_ref());
    (
        B64.encode(keys.pk.as_ref()),
        format!("{signed}.{signature}"),
    )
}

impl Sqld {
    /// A primary in `dir` that replicas can follow.
    pub fn primary(dir: &Path) -> Self {
        Self::start(dir, None)
    }

    /// A replica of `primary` in `dir`: reads are served locally, writes forwarded.
    pub fn replica(dir: &Path, primary: &Sqld) -> Self {
        Self::start(dir, primary.grpc.as_deref())
    }

    /// Starts one on fresh ports. A port picked by [`free_port`] is released before `sqld` binds
    /// it, so another process may take it first (a test client's outgoing connection, another
    /// test's server): `sqld` then exits with "Address already in use", and it is started again
    /// on other ports.
    fn start(dir: &Path, primary_grpc: Option<&str>) -> Self {
        std::fs::create_dir_all(dir).expect("sqld dir");
        const ATTEMPTS: u32 = 5;
        for attempt in 1..=ATTEMPTS {
            let mut sqld = Self::spawn_on_fresh_ports(dir, primary_grpc);
            match sqld.ready(&dir.join("sqld.log")) {
                Ok(()) => return sqld,
                Err(why) if attempt < ATTEMPTS && why.contains("Address already in use") => {
                    sqld.stop();
                }
                Err(why) => panic!("{why}"),
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    fn spawn_on_fresh_ports(dir: &Path, primary_grpc: Option<&str>) -> Self {
        let http = free_port();
        let (key, token) = jwt_key_and_token();
        let key_file = dir.join("jwt-key.txt");
        std::fs::write(&key_file, key).expect("sqld's JWT key");
        let mut cmd = Command::new(binary());
        cmd.arg("--db-path")
            .arg(dir.join("data.sqld"))
            .arg("--http-listen-addr")
            .arg(format!("127.0.0.1:{http}"))
            .arg("--auth-jwt-key-file")
            .arg(&key_file)
            .arg("--no-welcome");
        let grpc = match primary_grpc {
            Some(primary) => {
                cmd.arg("--primary-grpc-url").arg(primary);
                None
            }
            None => {
                let port = free_port();
                cmd.arg("--grpc-listen-addr")
                    .arg(format!("127.0.0.1:{port}"));
                Some(format!("http://127.0.0.1:{port}"))
            }
        };
        let command = cmd.get_args().map(|a| a.to_os_string()).collect();
        Self {
            url: format!("http://127.0.0.1:{http}"),
            dir: dir.to_path_buf(),
            grpc,
            child: spawn(&dir.join("sqld.log"), cmd),
            command,
            token,
        }
    }

    /// Kills the server (its data stays in its directory).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again, same address and data.
    pub fn start_again(&mut self) {
        let mut cmd = Command::new(binary());
        cmd.args(&self.command);
        let log = self.dir.join("sqld-again.log");
        self.child = spawn(&log, cmd);
        if let Err(why) = self.ready(&log) {
            panic!("{why}");
        }
    }

    /// Waits until it answers `/health`; the reason, with its log, if it exits or takes over 20 s.
    fn ready(&mut self, log: &Path) -> Result<(), String> {
        let started = Instant::now();
        let log = || std::fs::read_to_string(log).unwrap_or_default();
        while started.elapsed() < Duration::from_secs(20) {
            if ureq::get(format!("{}/health", self.url)).call().is_ok() {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("sqld exited ({status}); its log:\n{}", log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "sqld did not become ready within 20 s; its log:\n{}",
            log()
        ))
    }

    /// The database file the server keeps (`default` namespace), for read-only checks.
    pub fn database_file(&self) -> PathBuf {
        self.dir.join("data.sqld/dbs/default/data")
    }

    /// The variables that have the app reach this server over HTTP itself (`database_url`, issue
    /// 87), as `SPIN_VARIABLE_…` pairs.
    pub fn database_variables(&self) -> Vec<(String, String)> {
        [
            ("SPIN_VARIABLE_DATABASE_URL", &self.url),
            ("SPIN_VARIABLE_DATABASE_TOKEN", &self.token),
            ("SPIN_VARIABLE_DATABASE_HOST", &self.url),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value.clone()))
        .collect()
    }

    /// A runtime config pointing the app's `default` database at this server.
    pub fn runtime_config(&self, path: &Path) -> PathBuf {
        std::fs::write(
            path,
            format!(
                "[sqlite_database.default]\ntype = \"libsql\"\nurl = \"{}\"\ntoken = \"{}\"\n",
                self.url, self.token
            ),
        )
        .expect("runtime config");
        path.to_path_buf()
    }

    /// A runtime config pointing `default` at this server through an embedded replica in
    /// `replica`, pulled every `sync_ms` (this host's extension).
    pub fn replica_runtime_config(&self, path: &Path, replica: &Path, sync_ms: u64) -> PathBuf {
        std::fs::write(
            path,
            format!(
                "[sqlite_database.default]\ntype = \"libsql\"\nurl = \"{}\"\ntoken = \"{}\"\n\
                 replica_path = \"{}\"\nsync_interval_ms = {sync_ms}\n",
                self.url,
                self.token,
                replica.display()
            ),
        )
        .expect("runtime config");
        path.to_path_buf()
    }
}

/// Starts `cmd` (an sqld) logging to `log`, dying with the calling thread.
fn spawn(log: &Path, mut cmd: Command) -> Child {
    let log = std::fs::File::create(log).expect("sqld log");
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().expect("sqld log"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary().display()))
}

impl Drop for Sqld {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
