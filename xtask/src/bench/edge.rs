//! The database 20 ms away (issue 87): real Spin with its `default` database on `sqld` behind a
//! loopback proxy that delays every byte by half of [`RTT`] each way and every new connection by
//! one `RTT` (its handshake), as a network does; one client sends one request at a time. Each row
//! is a request's p50 and its HTTP round trips to the database (counted at the proxy), through
//! Spin's libSQL backend and through the app's own client (`spin.edge.toml`), beside the floor:
//! the same request's p50 on a local file plus the round trips the issue allows.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::harness::Seed;
use super::procs::{Server, sent_ok};
use super::report::{Row, ms, target};
use super::scripts::Req;
use super::settings::Settings;
use crate::project::Result;

/// The round trip to the database the proxy adds.
pub const RTT: Duration = Duration::from_millis(20);
/// Requests of each kind sent, one at a time, for a row.
const SENT: usize = 40;
/// Round trips the issue allows a create and a detail at the floor.
pub const CREATE_TRIPS: f64 = 2.0;
pub const DETAIL_TRIPS: f64 = 1.0;

/// A running delaying proxy: its address, and the HTTP requests it has forwarded.
pub struct DelayProxy {
    pub url: String,
    requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl DelayProxy {
    /// A proxy on a free loopback port to `target` (`127.0.0.1:port`).
    pub fn start(target: &str) -> Result<DelayProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counted, stopped, target) = (requests.clone(), stop.clone(), target.to_string());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let (counted, target) = (counted.clone(), target.clone());
                std::thread::spawn(move || {
                    // The connection's handshake: one round trip before its first byte.
                    std::thread::sleep(RTT);
                    if let Ok(server) = TcpStream::connect(&target) {
                        relay(client, server, counted);
                    }
                });
            }
        });
        Ok(DelayProxy {
            url,
            requests,
            stop,
        })
    }

    /// HTTP requests forwarded so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
    }
}

/// Both directions of one connection, each byte delayed by half a round trip.
fn relay(client: TcpStream, server: TcpStream, requests: Arc<AtomicU64>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || pump(client, server, Some(requests)));
    pump(server2, client2, None);
    let _ = up.join();
}

/// Copies `from` to `to`, each chunk sent half a round trip after it arrived; counts requests
/// (`POST /` or `GET /` at a chunk's start, HTTP/1.1 as both Spin and the app send them).
fn pump(mut from: TcpStream, to: TcpStream, requests: Option<Arc<AtomicU64>>) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        let mut to = to;
        for (due, data) in rx {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if data.is_empty() {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            if to.write_all(&data).is_err() {
                return;
            }
        }
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).unwrap_or(0);
        if let Some(count) = &requests {
            let chunk = &buf[..n];
            if chunk.starts_with(b"POST /") || chunk.starts_with(b"GET /") {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
        if tx
            .send((Instant::now() + RTT / 2, buf[..n].to_vec()))
            .is_err()
            || n == 0
        {
            break;
        }
    }
    drop(tx);
    let _ = writer.join();
}

/// One client's requests `reqs` (cycled, [`SENT`] of them) to `server`, one at a time: the p50 in
/// milliseconds, and the proxy's requests per request when `proxy` counts them.
pub fn one_client(server: &Server, reqs: &[Req], proxy: Option<&DelayProxy>) -> Result<(f64, f64)> {
    // Two first, unmeasured: an instance's first request also reads what it keeps.
    for req in reqs.iter().cycle().skip(SENT).take(2) {
        sent_ok(server, req)?;
    }
    let before = proxy.map(DelayProxy::requests).unwrap_or(0);
    let mut times = Vec::with_capacity(SENT);
    for req in reqs.iter().cycle().take(SENT) {
        let started = Instant::now();
        sent_ok(server, req)?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let trips = proxy.map_or(0.0, |p| (p.requests() - before) as f64 / SENT as f64);
    times.sort_by(f64::total_cmp);
    Ok((times[SENT / 2], trips))
}

/// The requests of a row: creates and details of `seed`.
pub fn requests(seed: &Seed) -> [(&'static str, &'static str, Vec<Req>, f64); 2] {
    [
        (
            "rx-create",
            "POST /api/v2/rx-endpoint/ (5 medications)",
            seed.rx_creates(),
            CREATE_TRIPS,
        ),
        (
            "rx-detail",
            "GET /api/v2/rx-endpoint/&lt;signature&gt;/",
            seed.per_signature(SENT, |s| format!("/api/v2/rx-endpoint/{s}/")),
            DETAIL_TRIPS,
        ),
    ]
}

/// One setup measured behind the proxy.
pub struct Proxied<'a> {
    pub server: &'a Server,
    pub proxy: &'a DelayProxy,
    /// The rows' key prefix and label.
    pub key: &'a str,
    pub label: &'a str,
    /// Whether its rows are held to the floor (the app's own client is; Spin's backend, one
    /// statement per round trip, is the comparison).
    pub held: bool,
}

/// The rows of one setup: each request's p50 and round trips, against the floor (`floors`: the
/// same request's p50 on a local file, by kind) when held to it.
pub fn rows(
    settings: &Settings,
    setup: &Proxied,
    seed: &Seed,
    floors: &[(&'static str, f64)],
    rows: &mut Vec<Row>,
) -> Result {
    let Proxied {
        server,
        proxy,
        key,
        label,
        held,
    } = *setup;
    for (kind, what, reqs, allowed) in requests(seed) {
        let row_key = format!("edge-{key}-{kind}");
        if !settings.measures(&row_key) {
            continue;
        }
        let (p50, trips) = one_client(server, &reqs, Some(proxy))?;
        let mut row = Row {
            name: format!("{label}, database {} ms away: {what}", RTT.as_millis()),
            conns: Some(1),
            result: format!("p50 {}", ms(p50)),
            p50_ms: Some(p50),
            round_trips: Some(trips),
            ..Row::default()
        };
        if let (true, Some((_, local))) = (held, floors.iter().find(|(k, _)| *k == kind)) {
            let floor = allowed * RTT.as_secs_f64() * 1000.0 + local;
            row.targets.push(target(
                format!(
                    "≤ {allowed:.0} round trip(s) + the local file's {} = {}",
                    ms(*local),
                    ms(floor)
                ),
                p50 <= floor,
            ));
            row.targets.push(target(
                format!("≤ {allowed:.0} round trip(s) to the database"),
                trips <= allowed + 0.05,
            ));
        }
        rows.push(row);
    }
    Ok(())
}

/// The floor's local part: each request's p50 on `server` (a local file), one client.
pub fn floors(server: &Server, seed: &Seed) -> Result<Vec<(&'static str, f64)>> {
    requests(seed)
        .into_iter()
        .map(|(kind, _, reqs, _)| Ok((kind, one_client(server, &reqs, None)?.0)))
        .collect()
}

/// Whether any of the stage's rows is measured.
pub fn measured(settings: &Settings) -> bool {
    settings.only.is_empty() || settings.only.iter().any(|k| k.starts_with("edge-"))
}

/// The note under the table.
pub fn note() -> String {
    format!(
        "Database {} ms away: a loopback proxy in front of `sqld` delays every byte by half the \
         round trip each way and every new TCP connection by one round trip (its handshake); one \
         client sends {SENT} requests one at a time after two unmeasured ones; round trips are the \
         HTTP requests the proxy forwarded per request. The floor: the request's p50 on Spin with \
         a local file (`spin.cloud.toml`, no runtime config) plus the round trips issue 87 allows \
         (a create {CREATE_TRIPS:.0}, a detail {DETAIL_TRIPS:.0}).",
        RTT.as_millis()
    )
}
