//! `spawn_app()`: the real host, the real components, a fresh state dir, an ephemeral port.
//!
//! With `RECETA_TEST_CRONLESS=1` (the cron-less pass on Spin), the app runs on `spin.cloud.toml` (`spin.edge.toml` over HTTP)
//! (no cron trigger) and migrates its database itself (no `--sqlite` flags on Spin), Spin has no
//! plugin installed, and a loopback scheduler calls the jobs door every second (`scheduler.rs`).
//! With `RECETA_TEST_FROM=<ref>` too, Spin runs the app pulled from an OCI registry (`spin up -k
//! --from <ref>`, `xtask/src/oci.rs`) instead of the repository's manifest.
//! `AppConfig::self_migrating` has the app migrate itself on `receta` too (no migrations
//! directory).
//!
//! With `RECETA_TEST_DATABASE=libsql` (the suite's second pass in `cargo xtask test`), the app's
//! database is a fresh libSQL server (`sqld`) instead of the SQLite file in the state dir; with
//! `libsql-replica`, the node keeps an embedded replica of it in the state dir; with `hrana`, the
//! app itself speaks to that server over HTTP (the `database_url` variable, issue 87), its token
//! the server's JWT.
//!
//! The host binary and the component files are built by `cargo xtask test` before this binary runs
//! (it sets `RECETA_BIN`); run on its own, the binary is looked up next to this test executable.
//!
//! One file (over 500 lines): `spawn_app()` and the fixtures every test module uses; split it when a group of helpers is used by one module only.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use receta_test_host::{Host, Launch, Response};
use serde_json::Value;

use crate::scheduler::Scheduler;
use crate::sqld::Sqld;

/// The admin token every spawned app is configured with (`SPIN_VARIABLE_ADMIN_TOKEN`).
pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789abcdef";

/// The jobs token every spawned app is configured with (`SPIN_VARIABLE_JOBS_TOKEN`).
pub const JOBS_TOKEN: &str = "test-jobs-token-fedcba9876543210";

/// Whether this is a cron-less pass (`RECETA_TEST_CRONLESS=1`; see the module's text).
pub fn cronless() -> bool {
    std::env::var("RECETA_TEST_CRONLESS").is_ok_and(|v| v == "1")
}

/// The manifest the app runs on: `spin.toml`, or the cron-less one in a cron-less pass.
pub fn api_manifest() -> PathBuf {
    if cronless() {
        cronless_manifest()
    } else {
        repo_root().join("spin.toml")
    }
}

/// The cron-less manifest: `spin.cloud.toml`, or `spin.edge.toml` (no SQLite at all) when the app
/// reaches its database over HTTP.
pub fn cronless_manifest() -> PathBuf {
    repo_root().join(if over_http() {
        "spin.edge.toml"
    } else {
        "spin.cloud.toml"
    })
}

/// Whether `manifest` is the app's (any of its manifests), not a host fixture.
fn is_the_app(manifest: &Path) -> bool {
    ["spin.toml", "spin.cloud.toml", "spin.edge.toml"]
        .iter()
        .any(|name| manifest == repo_root().join(name))
}

/// A running host on an ephemeral port, killed when dropped.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`
    pub address: String,
    pub state_dir: tempfile::TempDir,
    host: Host,
    /// The libSQL server the app's database lives on, when it runs on libSQL.
    sqld: Option<Sqld>,
    /// Whether it runs the app (`spin.toml`): its answers are checked against the OpenAPI document
    /// (`contract`); the host's own fixtures are not the API.
    is_the_api: bool,
    /// The cron-less pass's scheduler, calling the jobs door every second.
    scheduler: Option<Scheduler>,
}

impl Drop for TestApp {
    /// A failing test shows what the server said (the test harness prints a failed test's captured
    /// output): the end of its log, read before the state dir that holds it is removed.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n");
            eprintln!("---- the last {LOG_TAIL} lines of the server's log ----\n{tail}");
        }
    }
}

/// Lines of the server's log a failing test prints.
const LOG_TAIL: usize = 80;

/// What to start: which manifest, and extra environment (e.g. `SPIN_VARIABLE_*`).
pub struct AppConfig {
    pub manifest: PathBuf,
    pub env: Vec<(String, String)>,
    /// `--runtime-config-file`, when the test brings its own (otherwise one is made in libSQL mode).
    pub runtime_config: Option<PathBuf>,
    /// More `up` flags, the same on `receta` and on Spin (`--max-instance-reuse-count …`).
    pub flags: Vec<String>,
    /// In a cron-less pass, whether the loopback scheduler calls the jobs door (false: the test
    /// calls it itself).
    pub scheduled: bool,
}

impl Default for AppConfig {
    /// The admin token, and the outbound permissions `cargo xtask up` gives local development (local
    /// email relays, webhook receivers and timestamp authorities allowed).
    fn default() -> Self {
        Self {
            manifest: api_manifest(),
            env: vec![
                ("SPIN_VARIABLE_ADMIN_TOKEN".into(), ADMIN_TOKEN.into()),
                ("SPIN_VARIABLE_JOBS_TOKEN".into(), JOBS_TOKEN.into()),
                (
                    "SPIN_VARIABLE_EMAIL_RELAY_HOST".into(),
                    "http://127.0.0.1:*".into(),
                ),
                (
                    "SPIN_VARIABLE_WEBHOOK_HOST_A".into(),
                    "http://127.0.0.1:*".into(),
                ),
                (
                    "SPIN_VARIABLE_WEBHOOK_HOST_B".into(),
                    "http://localhost:*".into(),
                ),
                (
                    "SPIN_VARIABLE_TIMESTAMP_HOST".into(),
                    "http://127.0.0.1:*".into(),
                ),
            ],
            runtime_config: None,
            flags: Vec::new(),
            scheduled: true,
        }
    }
}

impl AppConfig {
    /// The app on `spin.cloud.toml` migrating its database itself, on whichever runtime: no cron
    /// trigger, no `--sqlite` flags on Spin, no migrations directory on `receta`, and no
    /// scheduler (the test runs the jobs door itself).
    pub fn self_migrating() -> Self {
        let mut config = Self {
            manifest: cronless_manifest(),
            scheduled: false,
            ..Self::default()
        };
        if spin().is_none() {
            let none = std::env::temp_dir().join("receta-tests-no-migrations");
            std::fs::create_dir_all(&none).unwrap();
            config.flags = vec!["--migrations".into(), none.display().to_string()];
        }
        config
    }

    /// This configuration plus `up` flags (the same on `receta` and on Spin).
    pub fn with_flags(mut self, flags: &[&str]) -> Self {
        self.flags.extend(flags.iter().map(|f| f.to_string()));
        self
    }

    /// This configuration plus an environment variable of the host's (`RECETA_*`).
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// The default configuration plus `SPIN_VARIABLE_<NAME>=value` for each pair (`name` lowercase).
    pub fn with_variables(vars: &[(&str, &str)]) -> Self {
        Self::default().and_variables(vars)
    }

    /// This configuration plus `SPIN_VARIABLE_<NAME>=value` for each pair (`name` lowercase).
    pub fn and_variables(mut self, vars: &[(&str, &str)]) -> Self {
        for (name, value) in vars {
            self.env.push((
                format!("SPIN_VARIABLE_{}", name.to_ascii_uppercase()),
                value.to_string(),
            ));
        }
        self
    }
}

/// A response, fully read.
pub type TestResponse = Response;

pub use crate::paths::repo_root;

/// The `receta` binary under test: `RECETA_BIN`, or next to this test executable.
pub fn host_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("RECETA_BIN") {
        return PathBuf::from(bin);
    }
    // target/<profile>/deps/api-<hash> -> target/<profile>/receta
    let exe = std::env::current_exe().expect("current exe");
    exe.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("receta")
}

/// The `receta-verify` binary (`tools/verify`): `RECETA_VERIFY_BIN`, or beside the host binary.
pub fn verify_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("RECETA_VERIFY_BIN") {
        return PathBuf::from(bin);
    }
    host_binary().with_file_name("receta-verify")
}

/// Starts the app as `cargo xtask up` would, on `127.0.0.1:0` with a fresh temporary state dir.
pub fn spawn_app() -> TestApp {
    spawn_app_with(AppConfig::default())
}

pub fn spawn_app_with(config: AppConfig) -> TestApp {
    let state_dir = tempfile::tempdir().expect("temp state dir");
    start(config, state_dir)
}

/// Starts the app on a free port that is known before it starts, with `base_url` set to its own
/// address: for tests that follow the absolute links the app writes (`cta_link`), e.g. in a browser.
pub fn spawn_app_at_own_base_url() -> TestApp {
    let port = receta_test_host::free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut config = AppConfig::default();
    config
        .env
        .push(("SPIN_VARIABLE_BASE_URL".into(), format!("http://{listen}")));
    let state_dir = tempfile::tempdir().expect("temp state dir");
    start_listening(config, state_dir, &listen)
}

/// Starts a host on an existing state dir (used to restart after a crash).
pub fn start(config: AppConfig, state_dir: tempfile::TempDir) -> TestApp {
    start_listening(config, state_dir, "127.0.0.1:0")
}

/// Whether this run puts the app's database on libSQL (`RECETA_TEST_DATABASE=libsql`, or
/// `libsql-replica` for nodes with an embedded replica).
pub fn on_libsql() -> bool {
    std::env::var("RECETA_TEST_DATABASE")
        .is_ok_and(|v| v == "libsql" || v == "libsql-replica" || v == "hrana")
}

/// Whether the app reaches the libSQL server itself, over HTTP (`RECETA_TEST_DATABASE=hrana`),
/// instead of through the host's SQLite interface.
pub fn over_http() -> bool {
    std::env::var("RECETA_TEST_DATABASE").is_ok_and(|v| v == "hrana")
}

/// Whether this run's node keeps an embedded replica of the libSQL database
/// (`RECETA_TEST_DATABASE=libsql-replica`): reads from its local copy, transactions held back and
/// sent to the server in one request.
fn with_replica() -> bool {
    std::env::var("RECETA_TEST_DATABASE").is_ok_and(|v| v == "libsql-replica")
}

/// Real Spin, when the suite runs on it (`RECETA_TEST_RUNTIME=spin`, the pass `cargo xtask test`
/// makes on Spin): the `spin` binary (`RECETA_SPIN`) and the data directory its plugins are
/// installed in (`RECETA_SPIN_DATA`, given to Spin as `XDG_DATA_HOME`: the cron trigger).
pub struct Spin {
    bin: PathBuf,
    data: Option<PathBuf>,
}

/// `Some` when this run serves the app with real Spin instead of `receta`.
pub fn spin() -> Option<Spin> {
    if std::env::var("RECETA_TEST_RUNTIME").as_deref() != Ok("spin") {
        return None;
    }
    let bin = std::env::var_os("RECETA_SPIN").map_or_else(|| PathBuf::from("spin"), PathBuf::from);
    let data = std::env::var_os("RECETA_SPIN_DATA").map(PathBuf::from);
    Some(Spin { bin, data })
}

impl Spin {
    /// `spin up` as the README's "Running on real Spin" runs it: no `--sqlite` flags (the app
    /// migrates itself; migrations/README.md), variables from `SPIN_VARIABLE_*`. A cron-less pass's
    /// Spin has no plugins either (an empty data directory in `state_dir`).
    fn launch(
        &self,
        config: &AppConfig,
        state_dir: &Path,
    ) -> (PathBuf, Vec<String>, Vec<(String, String)>) {
        let mut args = Vec::new();
        if oci_reference().is_some() {
            // Each node its own cache: Spin 4.0.2's pull writes the image config to the cached
            // `spin.lock` before the locked app, so a second `spin up --from` pulling into the same
            // cache can read the config and fail ("expected single layer in OCI package").
            let cache = state_dir.join("spin-cache");
            args.extend(["-k".to_string(), "--cache-dir".to_string()]);
            args.push(cache.display().to_string());
        }
        let mut env = config.env.clone();
        if cronless() {
            let none = state_dir.join("spin-data-without-plugins");
            std::fs::create_dir_all(&none).unwrap();
            env.push(("XDG_DATA_HOME".into(), none.display().to_string()));
        } else if let Some(data) = &self.data {
            env.push(("XDG_DATA_HOME".into(), data.display().to_string()));
        }
        (self.bin.clone(), args, env)
    }
}

/// The OCI reference Spin pulls the app from (`RECETA_TEST_FROM`), in a pass on real Spin.
fn oci_reference() -> Option<String> {
    std::env::var("RECETA_TEST_FROM")
        .ok()
        .filter(|r| !r.is_empty() && spin().is_some())
}

/// libSQL servers of hosts that crashed, kept for their restart (by state dir).
static PARKED: Mutex<Vec<(PathBuf, Sqld)>> = Mutex::new(Vec::new());

/// Starts a host listening on `listen` (`127.0.0.1:0` for an ephemeral port).
pub fn start_listening(config: AppConfig, state_dir: tempfile::TempDir, listen: &str) -> TestApp {
    let is_the_api = is_the_app(&config.manifest);
    let mut runtime_config = config.runtime_config.clone();
    let mut sqld = None;
    let mut database_variables = Vec::new();
    // A test that brings its own database (a runtime config, or the variables of one over HTTP)
    // gets no server of its own.
    let own_database = runtime_config.is_some()
        || config
            .env
            .iter()
            .any(|(name, _)| name == "SPIN_VARIABLE_DATABASE_URL");
    if !own_database && on_libsql() && is_the_api {
        let mut parked = PARKED.lock().unwrap_or_else(|e| e.into_inner());
        let server = match parked.iter().position(|(dir, _)| dir == state_dir.path()) {
            Some(i) => parked.remove(i).1,
            None => Sqld::primary(&state_dir.path().join("sqld")),
        };
        let path = state_dir.path().join("runtime-config.toml");
        if over_http() {
            // The host's SQLite `default` stays a local file the app does not use.
            database_variables = server.database_variables();
        } else if with_replica() {
            let replica = state_dir.path().join("replica").join("default.db");
            runtime_config = Some(server.replica_runtime_config(&path, &replica, 200));
        } else {
            runtime_config = Some(server.runtime_config(&path));
        }
        sqld = Some(server);
    }
    let (bin, mut args, mut env) = match spin() {
        None => (host_binary(), Vec::new(), config.env.clone()),
        Some(spin) => spin.launch(&config, state_dir.path()),
    };
    env.extend(database_variables);
    args.extend(config.flags.iter().cloned());
    let from = match oci_reference() {
        Some(reference) if is_the_api => PathBuf::from(reference),
        _ => config.manifest.clone(),
    };
    let host = Host::start(Launch {
        bin: &bin,
        manifest: &from,
        state_dir: state_dir.path(),
        listen,
        runtime_config: runtime_config.as_deref(),
        args: &args.iter().map(String::as_str).collect::<Vec<_>>(),
        env: &env,
    });
    // Only where the jobs token is the one the scheduler holds (not an app configured without one).
    let has_jobs_token = config
        .env
        .iter()
        .any(|(name, value)| name == "SPIN_VARIABLE_JOBS_TOKEN" && value == JOBS_TOKEN);
    let scheduler =
        (cronless() && config.scheduled && has_jobs_token && config.manifest == api_manifest())
            .then(|| Scheduler::start(&host.address, JOBS_TOKEN));
    TestApp {
        address: host.address.clone(),
        state_dir,
        host,
        sqld,
        is_the_api,
        scheduler,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        self.host.url(path)
    }

    /// Sends a request with an optional `Authorization: Token <token>` and an optional JSON body.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> TestResponse {
        let body = body.map(|b| serde_json::to_vec(b).unwrap());
        self.raw(
            method,
            path,
            token,
            body.as_deref().map(|b| ("application/json", b)),
        )
    }

    /// Sends raw bytes with the given content type.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<(&str, &[u8])>,
    ) -> TestResponse {
        let authorization = token.map(|t| format!("Token {t}"));
        let mut headers = Vec::new();
        if let Some(value) = &authorization {
            headers.push(("Authorization", value.as_str()));
        }
        if let Some((content_type, _)) = body {
            headers.push(("Content-Type", content_type));
        }
        self.request_with_headers(method, path, &headers, body.map(|(_, b)| b))
    }

    /// Sends a request with exactly these headers.
    pub fn request_with_headers(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> TestResponse {
        let response = self.host.request(method, path, headers, body);
        if self.is_the_api {
            crate::contract::check(method, path, body, &response);
        }
        response
    }

    pub fn get(&self, path: &str, token: Option<&str>) -> TestResponse {
        self.request("GET", path, token, None)
    }

    pub fn post(&self, path: &str, token: Option<&str>, body: &Value) -> TestResponse {
        self.request("POST", path, token, Some(body))
    }

    pub fn patch(&self, path: &str, token: Option<&str>, body: &Value) -> TestResponse {
        self.request("PATCH", path, token, Some(body))
    }

    pub fn delete(&self, path: &str, token: Option<&str>) -> TestResponse {
        self.request("DELETE", path, token, None)
    }

    /// The host's stderr so far (one log line per request).
    pub fn log(&self) -> String {
        self.host.log()
    }

    /// The app's database file: the state dir's, or the libSQL server's (read it, never write it:
    /// the server keeps its own log of changes).
    pub fn database_file(&self) -> PathBuf {
        match &self.sqld {
            Some(sqld) => sqld.database_file(),
            None => self.state_dir.path().join("sqlite_db.db"),
        }
    }

    /// Kills the host with SIGKILL and hands back its state dir, for crash/restart tests (a
    /// libSQL server stays up for the restart).
    pub fn crash(mut self) -> tempfile::TempDir {
        if let Some(mut scheduler) = self.scheduler.take() {
            scheduler.stop();
        }
        self.host.kill();
        if let Some(sqld) = self.sqld.take() {
            let mut parked = PARKED.lock().unwrap_or_else(|e| e.into_inner());
            parked.push((self.state_dir.path().to_path_buf(), sqld));
        }
        let dir = tempfile::tempdir().unwrap();
        std::mem::replace(&mut self.state_dir, dir)
    }
}

// ---- Catalog fixtures: hospitals, medics and memberships created through the API ----

/// A medic created through `POST /api/v2/medics/`: its id, email and the token shown once.
#[derive(Debug, Clone)]
pub struct TestMedic {
    pub id: i64,
    pub email: String,
    pub token: String,
}

impl TestMedic {
    pub fn token(&self) -> Option<&str> {
        Some(&self.token)
    }
}

/// The four required fields of a hospital.
pub fn hospital_body(name: &str) -> Value {
    serde_json::json!({
        "name": name,
        "patron": "Dra. Ana María Pérez",
        "location": "Av. Insurgentes Sur 1234, Col. Del Valle, 03100 Ciudad de México, CDMX",
        "contact": "contacto@clinica.mx",
    })
}

/// Every required field of a medic (verified, so they may prescribe), no hospital.
pub fn medic_body(email: &str) -> Value {
    serde_json::json!({
        "name": "Dr. José Núñez",
        "password": "correct horse battery staple",
        "email": email,
        "date_of_birth": "1980-05-17",
        "cedula_prof": "12345678",
        "specialty_no": "987654",
        "specialty": "Medicina Interna",
        "alma_mater": "UNAM",
        "female": false,
        "specialty_verified": true,
    })
}

/// The smallest byte string the service accepts as a JPEG (SOI, APP0, padding, EOI), `len` bytes long.
pub fn jpeg(len: usize) -> Vec<u8> {
    assert!(len >= 6);
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0];
    bytes.resize(len - 2, 0x42);
    bytes.extend_from_slice(&[0xFF, 0xD9]);
    bytes
}

/// One part of a `multipart/form-data` body.
pub enum FormPart<'a> {
    Text(&'a str, &'a str),
    File {
        name: &'a str,
        filename: &'a str,
        bytes: &'a [u8],
    },
}

/// A `multipart/form-data` body: its content type (with the boundary) and bytes.
pub fn multipart(parts: &[FormPart]) -> (String, Vec<u8>) {
    let boundary = "----recetaTestBoundary7MA4YWxkTrZu0gW";
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
        match part {
            FormPart::Text(name, value) => {
                body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                );
                body.extend_from_slice(value.as_bytes());
            }
            FormPart::File {
                name,
                filename,
                bytes,
            } => {
                body.extend_from_slice(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\n\
                         Content-Type: application/octet-stream\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(bytes);
            }
        }
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

impl TestApp {
    /// Sends a `multipart/form-data` body.
    pub fn multipart(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        parts: &[FormPart],
    ) -> TestResponse {
        let (content_type, body) = multipart(parts);
        self.raw(method, path, token, Some((&content_type, &body)))
    }

    /// Creates a hospital with `token` (the API admin's or a medic's) and returns its id.
    pub fn create_hospital(&self, token: &str, name: &str) -> i64 {
        let resp = self.post("/api/v2/hospital/", Some(token), &hospital_body(name));
        assert_eq!(
            resp.status,
            201,
            "creating hospital {name}: {}",
            resp.text()
        );
        resp.json()["id"].as_i64().expect("hospital id")
    }

    /// Creates a medic from a full body (see `medic_body`) as the API admin.
    pub fn create_medic_from(&self, body: &Value) -> TestMedic {
        let resp = self.post("/api/v2/medics/", Some(ADMIN_TOKEN), body);
        assert_eq!(resp.status, 201, "creating medic: {}", resp.text());
        let json = resp.json();
        TestMedic {
            id: json["id"].as_i64().expect("medic id"),
            email: json["email"].as_str().expect("email").to_string(),
            token: json["token"].as_str().expect("token").to_string(),
        }
    }

    /// Creates a verified medic with no hospital.
    pub fn create_medic(&self, email: &str) -> TestMedic {
        self.create_medic_from(&medic_body(email))
    }

    /// Links a medic to a hospital as the API admin (`type_membership` `ADMIN` or `MEMBER`) and
    /// returns the membership id.
    pub fn add_membership(&self, medic: i64, hospital: i64, type_membership: &str) -> i64 {
        let body = serde_json::json!({"medic": medic, "hospital": hospital, "type_membership": type_membership});
        let resp = self.post("/api/v2/management/memberships/", Some(ADMIN_TOKEN), &body);
        assert_eq!(resp.status, 201, "creating membership: {}", resp.text());
        resp.json()["id"].as_i64().expect("membership id")
    }

    /// A medic holding an ADMIN membership on a new hospital: `(medic, hospital id)`.
    pub fn medic_admin_of_new_hospital(
        &self,
        email: &str,
        hospital_name: &str,
    ) -> (TestMedic, i64) {
        let medic = self.create_medic(email);
        let hospital = self.create_hospital(ADMIN_TOKEN, hospital_name);
        self.add_membership(medic.id, hospital, "ADMIN");
        (medic, hospital)
    }
}

/// Asserts a 400 in the field-error shape `{"field": ["message", ...]}` and returns the body.
pub fn field_errors(resp: &TestResponse) -> Value {
    assert_eq!(resp.status, 400, "{}", resp.text());
    let body = resp.json();
    for (field, messages) in body.as_object().expect("object") {
        let messages = messages
            .as_array()
            .unwrap_or_else(|| panic!("{field}: {messages}"));
        assert!(
            !messages.is_empty() && messages.iter().all(Value::is_string),
            "{field}: {messages:?}"
        );
    }
    body
}

/// Asserts `status` with exactly `{"message": "..."}` as the body.
pub fn assert_message(resp: &TestResponse, status: u16) {
    assert_eq!(resp.status, status, "{}", resp.text());
    let body = resp.json();
    assert!(body["message"].is_string(), "{body}");
    assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
}
