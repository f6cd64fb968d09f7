//! The background jobs' rows (issue 69): the app stage's database served twice, each time with an
//! email relay on loopback so every create's email is delivered while the rows run. First with the
//! cron trigger (`spin.toml`, the outbox worker every second), then cron-less (`spin.cloud.toml`)
//! with this process calling the jobs door, `POST /api/v2/jobs/run/`, every second with the jobs
//! token, as a platform's scheduler would. The create and the detail are measured both ways (the
//! door's rows compared with the cron's), then what the door's own calls took meanwhile.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::app::details;
use super::constancias::start_on;
use super::harness::Seed;
use super::procs::{Server, send};
use super::report::Row;
use super::scenarios::{Baselines, Load, Measured, Scenario, measure};
use super::settings::Settings;
use crate::project::Result;

const JOBS_TOKEN: &str = "bench-jobs-token-0123456789abcdef";

/// Measures the rows on `dir`'s seeded app state (the app stage's) and appends them.
pub fn rows(
    settings: &Settings,
    dir: &Path,
    rows: &mut Vec<Row>,
    notes: &mut Vec<String>,
) -> Result {
    let seed = Seed::read(&dir.join("seed"))?;
    let scripts_dir = dir.join("scripts");
    let baselines = Baselines {
        hello: &[],
        sqlite_tps: 0.0,
        peer: &Default::default(),
        peer_rss_mib: None,
    };
    let relay = Relay::start()?;
    let mut measured = Measured::default();
    rows.push(Row::section(
        "Background jobs: the create and the detail with every create's email delivered by the cron trigger, then by the jobs door called every second (a loopback email relay answering 200)",
    ));

    let server = start(dir, "spin.toml", &relay, "jobs-cron")?;
    let cron = vec![
        Scenario::new(
            "jobs-cron-create",
            "POST /api/v2/rx-endpoint/ (5 medications), emails delivered by the cron trigger",
            Load::Rotated(seed.rx_creates()),
        ),
        Scenario::new(
            "jobs-cron-detail",
            "GET /api/v2/rx-endpoint/&lt;signature&gt;/, the cron trigger delivering",
            details(&seed),
        ),
    ];
    measure(
        settings,
        &server,
        &scripts_dir,
        &baselines,
        cron,
        &mut measured,
        rows,
    )?;
    server.stop();
    let by_cron = relay.count();

    let server = start(dir, "spin.cloud.toml", &relay, "jobs-door")?;
    let scheduler = Scheduler::start(&server.url);
    let door = vec![
        Scenario::new(
            "jobs-door-create",
            "POST /api/v2/rx-endpoint/ (5 medications), emails delivered by the jobs door called every second",
            Load::Rotated(seed.rx_creates()),
        )
        .vs_row("jobs-cron-create", "of the same with the cron trigger", None),
        Scenario::new(
            "jobs-door-detail",
            "GET /api/v2/rx-endpoint/&lt;signature&gt;/, the jobs door called every second",
            details(&seed),
        )
        .vs_row("jobs-cron-detail", "of the same with the cron trigger", None),
    ];
    measure(
        settings,
        &server,
        &scripts_dir,
        &baselines,
        door,
        &mut measured,
        rows,
    )?;
    let calls = scheduler.stop();
    server.stop();
    let by_door = relay.count() - by_cron;

    let mut ms: Vec<f64> = calls.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| {
        ms.get(((ms.len() as f64 - 1.0) * q).round() as usize)
            .copied()
    };
    rows.push(Row {
        name: format!(
            "One call of the jobs door while the door's rows ran ({} calls, each a second after \
             the last one answered; a call delivers until no full batch is left or its 10 s \
             budget is spent)",
            ms.len()
        ),
        result: at(0.5).map_or("no calls".into(), |m| format!("{m:.1} ms")),
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        ..Row::default()
    });
    notes.push(format!(
        "Background jobs rows: the relay received {by_cron} emails while the cron rows ran and \
         {by_door} while the door's did (each create queues one; the rows run for the same time)."
    ));
    relay.stop();
    Ok(())
}

/// The app on the app stage's state from `manifest`, its emails going to `relay`.
fn start(dir: &Path, manifest: &str, relay: &Relay, log: &str) -> Result<Server> {
    let relay_url = relay.url();
    let vars = [
        ("SPIN_VARIABLE_JOBS_TOKEN", JOBS_TOKEN),
        ("SPIN_VARIABLE_EMAIL_RELAY_URL", relay_url.as_str()),
        ("SPIN_VARIABLE_EMAIL_RELAY_HOST", "http://127.0.0.1:*"),
    ];
    start_on(dir, manifest, &vars, log)
}

/// Calls the jobs door every second on its own thread; [`Scheduler::stop`] gives each call's time.
struct Scheduler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<Duration>>,
}

impl Scheduler {
    fn start(base: &str) -> Scheduler {
        let stop = Arc::new(AtomicBool::new(false));
        let base = base.to_string();
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let auth = format!("Token {JOBS_TOKEN}");
                let mut took = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    let answer = send(
                        &base,
                        "POST",
                        "/api/v2/jobs/run/",
                        &[("Authorization", auth.as_str())],
                        None,
                    );
                    if matches!(answer, Ok((200, _))) {
                        took.push(began.elapsed());
                    }
                    std::thread::sleep(Duration::from_secs(1).saturating_sub(began.elapsed()));
                }
                took
            })
        };
        Scheduler { stop, thread }
    }

    fn stop(self) -> Vec<Duration> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// An email relay on loopback that answers every POST 200 and counts them.
struct Relay {
    port: u16,
    received: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn start() -> Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let received = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = (received.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if done.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(mut stream) = stream else { continue };
                let count = count.clone();
                std::thread::spawn(move || {
                    if read_request(&mut stream).is_some() {
                        count.fetch_add(1, Ordering::Relaxed);
                        let _ = stream.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                        );
                    }
                });
            }
        });
        Ok(Relay {
            port,
            received,
            stop,
        })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/send", self.port)
    }

    fn count(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads one request (its head, then `Content-Length` bytes of body).
fn read_request(stream: &mut std::net::TcpStream) -> Option<()> {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(p) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    Some(())
}
