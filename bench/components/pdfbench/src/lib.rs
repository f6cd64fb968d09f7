//! `pdfbench`: the in-component half of `cargo xtask bench`'s PDF row. `GET /?renders=N` renders
//! rxpdf's sample prescription (five medications, both logos: `tests/support/rxpdf-sample`) N times inside
//! the component, timed with the WASI monotonic clock, after N/10 unmeasured renders, and answers
//! `renders=N median_ns=… p99_ns=… bytes=…`. The native half (`receta-bench pdf-native`) renders the
//! same document with the same procedure.
//!
//! `GET /?seals=N` times what sealing adds to an issue in the prescriptions component (the key from
//! its 32-byte seed, then an Ed25519 signature of `receta:rx:v1:<signature>`, the same crate and
//! version) N times after N/10 unmeasured ones: `seals=N median_ns=… p99_ns=…`.

use rxpdf_sample as support;

use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;

/// Renders when the query does not say.
const DEFAULT_RENDERS: usize = 1000;
/// At most this many per request (a request has a time limit).
const MAX_RENDERS: usize = 10_000;

#[http_component]
fn handle(req: Request) -> Response {
    if let Some(seals) = req
        .query()
        .split('&')
        .find_map(|pair| pair.strip_prefix("seals="))
        .and_then(|n| n.parse::<usize>().ok())
    {
        let seals = seals.clamp(1, MAX_RENDERS);
        let times = seal_times(seals);
        let (median, p99) = (times[seals / 2], times[(seals * 99 / 100).min(seals - 1)]);
        return text(format!("seals={seals} median_ns={median} p99_ns={p99}"));
    }
    let renders = req
        .query()
        .split('&')
        .find_map(|pair| pair.strip_prefix("renders="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_RENDERS)
        .clamp(1, MAX_RENDERS);
    let (bytes, times) = support::render_times(&support::sample(), renders);
    let median = times[renders / 2];
    let p99 = times[(renders * 99 / 100).min(renders - 1)];
    text(format!(
        "renders={renders} median_ns={median} p99_ns={p99} bytes={bytes}"
    ))
}

fn text(body: String) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(body)
        .build()
}

/// Sorted nanoseconds of `n` seals, after `n / 10` unmeasured ones.
fn seal_times(n: usize) -> Vec<u128> {
    use ed25519_dalek::{Signer, SigningKey};
    let message = format!("receta:rx:v1:{}", "5b08a4d000d9203e".repeat(4));
    let seal = |i: usize| {
        let key = SigningKey::from_bytes(&[(i % 251) as u8; 32]);
        std::hint::black_box(key.sign(message.as_bytes()));
    };
    (0..n / 10).for_each(seal);
    let mut times: Vec<u128> = (0..n)
        .map(|i| {
            let start = std::time::Instant::now();
            seal(i);
            start.elapsed().as_nanos()
        })
        .collect();
    times.sort_unstable();
    times
}
