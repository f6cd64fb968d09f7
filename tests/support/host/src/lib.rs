//! A `receta` host started for a test: `Host::start` runs `receta up` on a manifest with a state
//! dir, waits for its `Serving http://…` line, and sends requests; the host's stderr goes to
//! `host.log` in the state dir. The process is killed when the `Host` is dropped.
//!
//! Shared by the black-box API suite (`tests/api`, which adds the app's fixtures and the contract
//! check) and the host's own behaviour tests (`host/tests`, on the probe fixture).

pub mod sqld;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

mod incoming;

pub use incoming::{Incoming, read_request};

/// What to start.
pub struct Launch<'a> {
    /// The `receta` binary.
    pub bin: &'a Path,
    /// `--from`: the manifest.
    pub manifest: &'a Path,
    /// `--state-dir`; `host.log` is written there.
    pub state_dir: &'a Path,
    /// `--listen` (`127.0.0.1:0` for an ephemeral port).
    pub listen: &'a str,
    /// `--runtime-config-file`, if any.
    pub runtime_config: Option<&'a Path>,
    /// More `receta up` arguments (`--sqlite …`).
    pub args: &'a [&'a str],
    /// Extra environment (`SPIN_VARIABLE_*`, `RECETA_*`).
    pub env: &'a [(String, String)],
}

/// A running host.
pub struct Host {
    /// `http://127.0.0.1:<port>`
    pub address: String,
    child: Child,
    log: PathBuf,
    agent: ureq::Agent,
}

/// A response, fully read.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Host {
    /// Starts the host and waits (up to 60 s) until it serves; panics with its log otherwise.
    pub fn start(launch: Launch) -> Host {
        assert!(
            launch.bin.exists(),
            "host binary {} not built: run `cargo xtask build` (or `cargo xtask test`)",
            launch.bin.display()
        );
        let log = launch.state_dir.join("host.log");
        let log_file = std::fs::File::create(&log).expect("log file");
        let mut child = Command::new(launch.bin)
            .arg("up")
            .arg("--listen")
            .arg(launch.listen)
            .arg("--state-dir")
            .arg(launch.state_dir)
            .arg("--from")
            .arg(launch.manifest)
            .args(
                launch
                    .runtime_config
                    .iter()
                    .flat_map(|path| [Path::new("--runtime-config-file"), path]),
            )
            .args(launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log_file)
            // Its own process group, so `kill` reaches every process it started (real Spin runs each
            // trigger as a child process).
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", launch.bin.display()));

        // The host prints `Serving http://127.0.0.1:<port>` once it accepts requests.
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if !sent && let Some(url) = line.trim().strip_prefix("Serving ") {
                    let _ = tx.send(url.trim().to_string());
                    sent = true;
                }
            }
        });
        let address = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(address) => address,
            Err(_) => {
                let _ = child.kill();
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("host did not start within 60 s; its log:\n{text}");
            }
        };
        // A redirect is an answer to check, not to follow (the patient's page's forms answer 303).
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .new_agent();
        Host {
            address,
            child,
            log,
            agent,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// Sends a request with exactly these headers.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(self.url(path));
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .body(body.map(<[u8]>::to_vec).unwrap_or_default())
            .unwrap();
        let resp = self
            .agent
            .run(req)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
            .collect();
        let body = resp
            .into_body()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
            .expect("read body");
        Response {
            status,
            headers,
            body,
        }
    }

    /// A GET without headers.
    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], None)
    }

    /// The host's stderr so far (one log line per request), then the components' own output where
    /// the runtime writes it to files (real Spin: `<state dir>/logs/<component>_std{out,err}.txt`).
    pub fn log(&self) -> String {
        let mut text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let logs = self.log.with_file_name("logs");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&logs)
            .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort();
        for file in files {
            text.push_str(&std::fs::read_to_string(file).unwrap_or_default());
        }
        text
    }

    /// The process id (to send it a signal).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status, once it has exited.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills the process and every process it started (its process group) with SIGKILL, and waits
    /// for it.
    pub fn kill(&mut self) {
        let group = format!("-{}", self.child.id());
        let killed = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        if !killed.is_ok_and(|s| s.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Response {
    /// The body as JSON; panics with the raw body when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): status {} body {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Runs `request(i)` for `i` in `0..per_worker` on each of `workers` threads at once, and returns
/// every result (worker by worker): the load of the concurrency tests.
pub fn concurrently<T: Send>(
    workers: usize,
    per_worker: usize,
    request: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    std::thread::scope(|scope| {
        let running: Vec<_> = (0..workers)
            .map(|_| scope.spawn(|| (0..per_worker).map(&request).collect::<Vec<_>>()))
            .collect();
        running
            .into_iter()
            .flat_map(|worker| worker.join().expect("a worker panicked"))
            .collect()
    })
}

/// A TCP port on loopback that was free a moment ago (bound, then released): for a server started
/// next, or for a receiver that is down and comes up later on the same port.
///
/// Taken below Linux's ephemeral range (32768-60999) and never handed out twice by one process:
/// a port the kernel picks for `bind(0)` or for an outgoing connection's source could be taken by
/// another test between the release and the rebind (a CI run failed on exactly that).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Processes started together (two test binaries, two clones) start apart.
    let start = std::process::id().wrapping_mul(7_919) % SPAN;
    for _ in 0..SPAN {
        let port = (FIRST + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {FIRST}..{}", FIRST + SPAN)
}
