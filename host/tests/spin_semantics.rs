//! The host's Spin semantics, one test per rule, driven over HTTP through the `probe` fixture
//! component (`tests/components/probe`, manifests in `tests/fixtures/probe/`): the real `receta`
//! binary of this package (`CARGO_BIN_EXE_receta`) on an ephemeral port with a fresh state dir.
//! The probe must be built first (`cargo xtask build`; `cargo xtask test` does).
//!
//! One file (over 500 lines): the host's behaviour tests share the probe's helpers below.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use receta_test_host::{Host, Launch, Response, concurrently};

/// The repository (this package is `host/`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the repository")
        .to_path_buf()
}

/// The `receta` binary cargo built for these tests.
fn host_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_receta"))
}

/// What to start: a manifest, its environment, a runtime config.
struct AppConfig {
    manifest: PathBuf,
    env: Vec<(String, String)>,
    runtime_config: Option<PathBuf>,
}

/// A host running a fixture, with its state dir; killed when dropped.
struct TestApp {
    address: String,
    host: Host,
    state_dir: tempfile::TempDir,
}

impl TestApp {
    fn get(&self, path: &str, token: Option<&str>) -> Response {
        let authorization = token.map(|t| format!("Token {t}"));
        let headers: Vec<(&str, &str)> = authorization
            .iter()
            .map(|a| ("Authorization", a.as_str()))
            .collect();
        self.host.request("GET", path, &headers, None)
    }

    fn log(&self) -> String {
        self.host.log()
    }

    /// Kills the host with SIGKILL and hands back its state dir, for restart tests.
    fn crash(mut self) -> tempfile::TempDir {
        self.host.kill();
        std::mem::replace(&mut self.state_dir, tempfile::tempdir().unwrap())
    }
}

fn spawn_app_with(config: AppConfig) -> TestApp {
    start(config, tempfile::tempdir().expect("temp state dir"))
}

/// Starts a host on an existing state dir.
fn start(config: AppConfig, state_dir: tempfile::TempDir) -> TestApp {
    let host = Host::start(Launch {
        bin: &host_binary(),
        manifest: &config.manifest,
        state_dir: state_dir.path(),
        listen: "127.0.0.1:0",
        runtime_config: config.runtime_config.as_deref(),
        args: &[],
        env: &config.env,
    });
    TestApp {
        address: host.address.clone(),
        host,
        state_dir,
    }
}

fn fixture(name: &str) -> PathBuf {
    repo_root()
        .join("tests")
        .join("fixtures")
        .join("probe")
        .join(name)
}

fn probe_config(env: &[(&str, &str)]) -> AppConfig {
    AppConfig {
        runtime_config: None,
        manifest: fixture("spin.toml"),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn probe(env: &[(&str, &str)]) -> TestApp {
    spawn_app_with(probe_config(env))
}

/// GET `path`, expecting 200; the body as text.
fn text(app: &TestApp, path: &str) -> String {
    let response = app.get(path, None);
    assert_eq!(response.status, 200, "GET {path}: {}", response.text());
    response.text()
}

/// A one-shot HTTP server on 127.0.0.1:0 answering `pong` to each of `requests` connections.
fn pong_server(requests: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            // Read the request head.
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                line.clear();
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\npong",
            );
        }
    });
    port
}

#[test]
fn component_without_the_database_label_gets_access_denied() {
    let app = probe(&[]);
    assert_eq!(text(&app, "/nodb/sqlite"), "error: access-denied");
    // A label the component does not list is denied before anything else, configured or not.
    assert_eq!(
        text(&app, "/probe/sqlite?label=other"),
        "error: access-denied"
    );
    // The same code with the label works.
    assert!(text(&app, "/probe/sqlite").starts_with("ok "));
}

#[test]
fn unconfigured_database_label_is_no_such_database() {
    let app = probe(&[]);
    assert_eq!(
        text(&app, "/probe/sqlite?label=unconfigured"),
        "error: no-such-database"
    );
}

#[test]
fn sqlite_round_trip_rowid_changes_and_error_text() {
    let app = probe(&[]);
    assert_eq!(text(&app, "/probe/sqlite"), "ok rowid=1 changes=1 count=1");
    assert_eq!(text(&app, "/probe/sqlite"), "ok rowid=2 changes=1 count=2");
    // Constraint violations reach the guest as io(text), recognisable by SQLite's message.
    let dup = text(
        &app,
        "/probe/sqlite?q=INSERT%20INTO%20probe_items%20(id,%20label)%20VALUES%20(1,%20'x')",
    );
    assert!(
        dup.starts_with("error: io: ") && dup.contains("UNIQUE constraint failed"),
        "{dup}"
    );
    let attach = text(
        &app,
        "/probe/sqlite?q=ATTACH%20DATABASE%20'other.db'%20AS%20other",
    );
    assert!(
        attach.starts_with("error: io: "),
        "ATTACH must be denied: {attach}"
    );
    // One statement per execute, as in Spin.
    let two = text(&app, "/probe/sqlite?q=SELECT%201;%20SELECT%202");
    assert!(two.starts_with("error: io: "), "{two}");
}

#[test]
fn a_guests_lock_wait_is_answered_and_not_applied() {
    let app = probe(&[]);
    // Spin would set it and answer the new value; this host's writer turns order the writers.
    assert_eq!(
        text(&app, "/probe/sqlite?q=PRAGMA%20busy_timeout%20%3D%200"),
        ""
    );
    assert_eq!(text(&app, "/probe/sqlite?q=PRAGMA%20busy_timeout(1)"), "");
    assert_eq!(
        text(&app, "/probe/sqlite?q=PRAGMA%20busy_timeout"),
        "5000\n"
    );
}

/// On a libSQL server a connection's settings are refused as the server refuses them (Spin's
/// libSQL backend passes them on): a guest written for Spin meets the same error here. Needs a
/// real `sqld` (`RECETA_SQLD`, which `cargo xtask test` sets); without one it says so and checks
/// nothing.
#[test]
fn on_libsql_a_connection_setting_is_refused_as_the_server_refuses_it() {
    let Some(binary) = std::env::var_os("RECETA_SQLD") else {
        eprintln!("RECETA_SQLD is not set: no libSQL server to test against");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqld = receta_test_host::sqld::Sqld::start(Path::new(&binary), dir.path());
    let config = dir.path().join("runtime-config.toml");
    std::fs::write(
        &config,
        format!(
            "[sqlite_database.default]\ntype = \"libsql\"\nurl = \"{}\"\ntoken = \"\"\n",
            sqld.url
        ),
    )
    .unwrap();
    let app = spawn_app_with(AppConfig {
        runtime_config: Some(config),
        ..probe_config(&[])
    });
    for setting in ["PRAGMA busy_timeout = 0", "PRAGMA synchronous = NORMAL"] {
        let q = setting.replace(' ', "%20").replace('=', "%3D");
        let resp = app.get(&format!("/probe/sqlite?q={q}"), None);
        assert!(
            resp.text().contains("unsupported statement"),
            "{setting}: {} {}",
            resp.status,
            resp.text()
        );
    }
    // Reading a setting, or one the server allows, runs there.
    assert_eq!(
        text(&app, "/probe/sqlite?q=PRAGMA%20foreign_keys%20%3D%20ON"),
        ""
    );
    drop(app);
    drop(sqld);
}

#[test]
fn transaction_through_execute_on_one_connection() {
    let app = probe(&[]);
    assert_eq!(text(&app, "/probe/tx"), "ok\ncommitted\n");
    assert_eq!(text(&app, "/probe/tx"), "ok\ncommitted\ncommitted\n");
}

#[test]
fn concurrent_writers_never_see_database_is_locked() {
    let app = probe(&[]);
    let errors: Vec<String> = concurrently(8, 15, |i| {
        if i % 3 == 0 {
            text(&app, "/probe/tx")
        } else {
            text(&app, "/probe/sqlite")
        }
    })
    .into_iter()
    .filter(|body| !body.starts_with("ok"))
    .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        text(&app, "/probe/sqlite"),
        "ok rowid=81 changes=1 count=81"
    );
}

#[test]
fn outbound_http_only_to_allowed_hosts() {
    let port = pong_server(1);
    let origin = format!("http://127.0.0.1:{port}");
    let app = probe(&[("SPIN_VARIABLE_OUTBOUND_ORIGIN", &origin)]);

    // Denied requests never reach the network (the listener answers exactly one connection).
    for url in [
        format!("http://localhost:{port}/ping"), // same socket, other host name
        format!("http://127.0.0.1:{}/ping", port + 1), // other port
        format!("https://127.0.0.1:{port}/ping"), // other scheme
    ] {
        let body = text(&app, &format!("/probe/outbound?url={url}"));
        assert!(body.contains("HttpRequestDenied"), "{url}: {body}");
    }
    // A component without allowed_outbound_hosts may not reach even the allowed origin.
    let body = text(&app, &format!("/nodb/outbound?url={origin}/ping"));
    assert!(body.contains("HttpRequestDenied"), "{body}");

    assert_eq!(
        text(&app, &format!("/probe/outbound?url={origin}/ping")),
        "status 200 pong"
    );
}

#[test]
fn variables_come_from_env_then_manifest_default() {
    let defaults = probe(&[]);
    assert_eq!(
        text(&defaults, "/probe/var?name=greeting"),
        "hello from the manifest"
    );
    drop(defaults);

    let app = probe(&[("SPIN_VARIABLE_GREETING", "from the environment")]);
    assert_eq!(
        text(&app, "/probe/var?name=greeting"),
        "from the environment"
    );
    assert_eq!(
        text(&app, "/probe/var?name=combined"),
        "from the environment and more"
    );
    assert_eq!(text(&app, "/probe/var?name=literal"), "plain literal");
    // Application variables the component does not list are undefined for it.
    let hidden = text(&app, "/probe/var?name=hidden");
    assert!(hidden.starts_with("error: undefined"), "{hidden}");
    let bad = text(&app, "/probe/var?name=Not-Valid");
    assert!(bad.starts_with("error: invalid-name"), "{bad}");
    let none = text(&app, "/nodb/var?name=greeting");
    assert!(none.starts_with("error: undefined"), "{none}");
}

#[test]
fn missing_required_variable_stops_startup_with_a_clear_message() {
    let state = tempfile::tempdir().unwrap();
    let output = Command::new(host_binary())
        .args(["up", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state.path())
        .arg("--from")
        .arg(fixture("required.toml"))
        .env_remove("SPIN_VARIABLE_MUST_HAVE")
        .stdin(Stdio::null())
        .output()
        .expect("run receta");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "must fail; stderr: {stderr}");
    assert!(
        stderr.contains("must_have") && stderr.contains("SPIN_VARIABLE_MUST_HAVE"),
        "the message names the variable and its env var: {stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("Serving"));

    // With the value, it starts and the component sees it.
    let app = spawn_app_with(AppConfig {
        runtime_config: None,
        manifest: fixture("required.toml"),
        env: vec![("SPIN_VARIABLE_MUST_HAVE".into(), "given".into())],
    });
    assert_eq!(text(&app, "/probe/var?name=must_have"), "given");
}

#[test]
fn runaway_guest_gets_500_within_the_time_limit_and_the_next_request_works() {
    let app = probe(&[("RECETA_REQUEST_TIMEOUT_MS", "1000")]);
    let started = Instant::now();
    let response = app.get("/probe/loop", None);
    let took = started.elapsed();
    assert_eq!(response.status, 500, "{}", response.text());
    // The host's own errors have the API's shape.
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json(),
        serde_json::json!({"message": "Internal server error."})
    );
    assert!(
        took >= Duration::from_millis(900),
        "answered before the limit: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(text(&app, "/probe/hello"), "hello");
    assert!(app.log().contains("time limit"), "{}", app.log());
}

#[test]
fn guest_over_the_memory_limit_fails_only_its_own_request() {
    let app = probe(&[]);
    let response = app.get("/probe/alloc", None);
    assert_eq!(response.status, 500);
    assert!(
        response.body.len() < 100,
        "a short body: {}",
        response.text()
    );
    assert_eq!(text(&app, "/probe/hello"), "hello");
    assert!(text(&app, "/probe/sqlite").starts_with("ok "));
}

#[test]
fn unknown_route_is_404_and_requests_are_logged() {
    let app = probe(&[]);
    assert_eq!(app.get("/nothing/here", None).status, 404);
    assert_eq!(app.get("/probex", None).status, 404);
    // A route the component itself does not know: the guest's own 404.
    assert_eq!(app.get("/probe/unknown", None).status, 404);
    assert_eq!(text(&app, "/probe/hello"), "hello");
    let log = app.log();
    assert!(log.contains("GET /nothing/here 404"), "{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("GET /probe/hello 200") && l.ends_with(" probe")),
        "{log}"
    );
}

/// The host links a dependency whose WIT package (`fixture:echo`, tests/components/echo/wit) it was
/// never built with: lazily, from the components' own types (forwarded dynamically), and composed
/// ahead of time as Spin does. A record, bytes, an option, an enum and both sides of a result cross.
#[test]
fn a_dependency_whose_wit_the_host_never_saw_is_linked() {
    for composition in ["lazy", "static"] {
        let app = spawn_app_with(AppConfig {
            runtime_config: None,
            manifest: fixture("dependency.toml"),
            env: vec![("RECETA_COMPOSITION".into(), composition.into())],
        });
        assert_eq!(text(&app, "/echo/hola"), "HOLA|cba|4", "{composition}");
        let refused = app.get("/echo/", None);
        assert_eq!(refused.status, 400, "{composition}");
        assert_eq!(refused.text(), "nothing to echo");
        if composition == "lazy" {
            let log = app.log();
            assert!(
                log.contains("1 dependency functions linked lazily: 0 typed, 1 dynamically"),
                "{log}"
            );
        }
    }
}

#[test]
fn spin_request_headers() {
    let app = probe(&[]);
    let headers = text(&app, "/probe/headers?x=1");
    for expected in [
        "spin-path-info: /headers\n",
        "spin-matched-route: /probe/...\n",
        "spin-raw-component-route: /probe/...\n",
        "spin-component-route: /probe\n",
        "spin-base-path: /\n",
    ] {
        assert!(
            headers.contains(expected),
            "missing {expected:?} in {headers}"
        );
    }
    assert!(
        headers.contains(&format!(
            "spin-full-url: {}/probe/headers?x=1\n",
            app.address
        )),
        "{headers}"
    );
}

#[test]
fn compiled_code_cache_is_used_on_restart() {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_str().unwrap();
    let first = probe(&[("RECETA_CACHE_DIR", cache_dir)]);
    assert_eq!(text(&first, "/probe/hello"), "hello");
    assert!(
        first.log().contains("component probe: compiled in"),
        "{}",
        first.log()
    );
    let state = first.crash();

    let second = start(probe_config(&[("RECETA_CACHE_DIR", cache_dir)]), state);
    let log = second.log();
    assert!(
        log.contains("component probe: loaded compiled code from the cache"),
        "{log}"
    );
    assert!(!log.contains("compiled in"), "{log}");
    assert_eq!(text(&second, "/probe/hello"), "hello");
}

#[test]
fn migrations_are_applied_once() {
    let notes = "/probe/sqlite?q=SELECT%20body%20FROM%20probe_notes%20ORDER%20BY%20id";
    let first = probe(&[]);
    assert_eq!(text(&first, notes), "seeded once\nsecond migration\n");
    assert!(
        first.log().contains("applied 2 migration(s)"),
        "{}",
        first.log()
    );
    let state = first.crash();

    // 0001 would fail if re-run (CREATE TABLE without IF NOT EXISTS).
    let second = start(probe_config(&[]), state);
    assert_eq!(text(&second, notes), "seeded once\nsecond migration\n");
    assert!(!second.log().contains("applied"), "{}", second.log());
    let recorded = text(
        &second,
        "/probe/sqlite?q=SELECT%20name%20FROM%20_receta_migrations%20ORDER%20BY%20name",
    );
    assert_eq!(recorded, "0001_notes.sql\n0002_more.sql\n");
}

#[test]
fn committed_writes_survive_kill_9() {
    let app = probe(&[]);
    assert_eq!(text(&app, "/probe/sqlite"), "ok rowid=1 changes=1 count=1");
    assert_eq!(text(&app, "/probe/tx"), "ok\ncommitted\n");
    let state = app.crash();
    let again = start(probe_config(&[]), state);
    assert_eq!(
        text(&again, "/probe/sqlite"),
        "ok rowid=2 changes=1 count=2"
    );
    assert_eq!(text(&again, "/probe/tx"), "ok\ncommitted\ncommitted\n");
}

/// Starts the probe with extra `receta up` arguments and a 3 s request limit (the host's log goes
/// to `<state>/host.log`).
fn spawn_raw(state: &Path, extra: &[&str]) -> Host {
    Host::start(Launch {
        bin: &host_binary(),
        manifest: &fixture("spin.toml"),
        state_dir: state,
        listen: "127.0.0.1:0",
        runtime_config: None,
        args: extra,
        env: &[("RECETA_REQUEST_TIMEOUT_MS".into(), "3000".into())],
    })
}

/// A GET expected to answer 200; the body.
fn raw_get(host: &Host, path: &str) -> String {
    let response = host.get(path);
    assert_eq!(response.status, 200, "GET {path}: {}", response.text());
    response.text()
}

#[test]
fn sqlite_option_and_runtime_config_databases() {
    let state = tempfile::tempdir().unwrap();
    let config = state.path().join("runtime-config.toml");
    let other = state.path().join("elsewhere").join("other.db");
    std::fs::write(
        &config,
        format!(
            "[sqlite_database.unconfigured]\ntype = \"spin\"\npath = {:?}\n",
            other.to_str().unwrap()
        ),
    )
    .unwrap();
    let statement = "CREATE TABLE IF NOT EXISTS opt (x); INSERT INTO opt VALUES (1)";
    let args = [
        "--runtime-config-file",
        config.to_str().unwrap(),
        "--sqlite",
        statement,
    ];
    let mut host = spawn_raw(state.path(), &args);
    // The label the runtime config defines now opens, at the configured path.
    assert_eq!(
        raw_get(&host, "/probe/sqlite?label=unconfigured"),
        "ok rowid=1 changes=1 count=1"
    );
    assert!(other.is_file());
    assert_eq!(
        raw_get(&host, "/probe/sqlite?q=SELECT%20count(*)%20FROM%20opt"),
        "1\n"
    );
    host.kill();

    // --sqlite runs at every start, like `spin up --sqlite`.
    let host = spawn_raw(state.path(), &args);
    assert_eq!(
        raw_get(&host, "/probe/sqlite?q=SELECT%20count(*)%20FROM%20opt"),
        "2\n"
    );
}

#[test]
fn an_unreachable_or_misconfigured_libsql_database_is_a_clear_startup_error() {
    let run = |config_text: &str| {
        let state = tempfile::tempdir().unwrap();
        let config = state.path().join("runtime-config.toml");
        std::fs::write(&config, config_text).unwrap();
        let output = Command::new(host_binary())
            .args(["up", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(state.path())
            .arg("--from")
            .arg(fixture("spin.toml"))
            .arg("--runtime-config-file")
            .arg(&config)
            // Start-up touches the database: a server that is not there stops it.
            .args(["--sqlite", "SELECT 1"])
            .stdin(Stdio::null())
            .output()
            .expect("run receta");
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let down = run(
        "[sqlite_database.default]\ntype = \"libsql\"\nurl = \"http://127.0.0.1:1\"\ntoken = \"\"\n",
    );
    assert!(
        down.contains("libSQL") && down.contains("127.0.0.1:1"),
        "{down}"
    );
    let bad =
        run("[sqlite_database.default]\ntype = \"libsql\"\nurl = \"ftp://x\"\ntoken = \"\"\n");
    assert!(
        bad.contains("[sqlite_database.default]") && bad.contains("http://"),
        "{bad}"
    );
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_cleanly() {
    let state = tempfile::tempdir().unwrap();
    let mut host = spawn_raw(state.path(), &[]);
    let port: u16 = host.address.rsplit(':').next().unwrap().parse().unwrap();

    // A request that runs until its 3 s limit, in flight while the signal arrives.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .write_all(b"GET /probe/loop HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let pid = host.pid().to_string();
    // Make sure the request reached the host before signalling.
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());

    let mut answer = String::new();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.read_to_string(&mut answer);
    assert!(
        answer.starts_with("HTTP/1.1 500"),
        "the in-flight request was answered: {answer:?}"
    );

    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = host.try_wait() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "receta did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    // No new connections after shutdown.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn cron_trigger_runs_the_component_on_schedule_with_its_permissions() {
    let app = spawn_app_with(AppConfig {
        runtime_config: None,
        manifest: fixture("cron.toml"),
        env: vec![],
    });
    // The schedule fires every second; wait (bounded) for two firings.
    let count =
        "/probe/sqlite?q=SELECT%20count(*),%20count(DISTINCT%20fired_at)%20FROM%20probe_cron";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let body = text(&app, count);
        if let Some((all, distinct)) = body.trim().split_once('|')
            && all.parse::<u32>().unwrap() >= 2
        {
            assert_eq!(all, distinct, "one run per firing second");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "cron did not fire twice in 10 s: {body:?}\n{}",
            app.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Timestamps are the scheduled seconds, in Unix time.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let latest: u64 = text(
        &app,
        "/probe/sqlite?q=SELECT%20max(fired_at)%20FROM%20probe_cron",
    )
    .trim()
    .parse()
    .unwrap();
    assert!(latest <= now && now - latest < 10, "{latest} vs {now}");
    assert!(
        app.log().contains("receta: cron probe-cron ok"),
        "{}",
        app.log()
    );
}

#[test]
fn requests_beyond_the_instance_limit_wait_for_a_free_instance() {
    let app = probe(&[("RECETA_MAX_INSTANCES", "2")]);
    let statuses = concurrently(8, 10, |_| app.get("/probe/sqlite", None).status);
    assert_eq!(statuses.len(), 80);
    assert!(
        statuses.iter().all(|s| *s == 200),
        "{statuses:?}\n{}",
        app.log()
    );
}

#[test]
fn a_request_that_waits_too_long_for_an_instance_is_503_with_retry_after() {
    let app = std::sync::Arc::new(probe(&[
        ("RECETA_MAX_INSTANCES", "1"),
        ("RECETA_REQUEST_TIMEOUT_MS", "8000"),
    ]));
    let busy = {
        let app = app.clone();
        std::thread::spawn(move || app.get("/probe/loop", None).status)
    };
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let resp = app.get("/probe/hello", None);
    assert_eq!(resp.status, 503, "{}", resp.text());
    assert_eq!(resp.header("retry-after"), Some("1"));
    assert_eq!(
        resp.json(),
        serde_json::json!({"message": "The service is busy; retry in a moment."})
    );
    assert!(
        started.elapsed() < Duration::from_secs(7),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(busy.join().unwrap(), 500);
    assert_eq!(text(&app, "/probe/hello"), "hello");
}

#[test]
fn dotenv_beside_the_manifest_supplies_variables_and_the_environment_wins() {
    let dir = tempfile::tempdir().unwrap();
    let wasm = repo_root().join("target/wasm32-wasip2/release/probe.wasm");
    std::fs::write(
        dir.path().join("spin.toml"),
        format!(
            r#"spin_manifest_version = 2
[application]
name = "dotenv"
[variables]
greeting = {{ default = "from the manifest" }}
token = {{ required = true }}
[[trigger.http]]
route = "/probe/..."
component = "probe"
[component.probe]
source = {wasm:?}
[component.probe.variables]
greeting = "{{{{ greeting }}}}"
token = "{{{{ token }}}}"
"#
        ),
    )
    .unwrap();
    // Spin's dotenv keys are the prefixed ones; a plain `GREETING=` line is not a variable.
    std::fs::write(
        dir.path().join(".env"),
        "# comment\nGREETING=plain key, ignored\nSPIN_VARIABLE_GREETING=\"from .env\"\nSPIN_VARIABLE_TOKEN=dotenv-token\n",
    )
    .unwrap();
    let config = |env: &[(&str, &str)]| AppConfig {
        runtime_config: None,
        manifest: dir.path().join("spin.toml"),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    };
    let app = spawn_app_with(config(&[]));
    assert_eq!(text(&app, "/probe/var?name=greeting"), "from .env");
    // A required variable may come from .env.
    assert_eq!(text(&app, "/probe/var?name=token"), "dotenv-token");
    drop(app);
    let app = spawn_app_with(config(&[(
        "SPIN_VARIABLE_GREETING",
        "from the environment",
    )]));
    assert_eq!(
        text(&app, "/probe/var?name=greeting"),
        "from the environment"
    );
}
