//! `pdfbench`: the in-component half of `cargo xtask bench`'s PDF row. `GET /?renders=N` renders
//! rxpdf's sample prescription (five medications, both logos: `rxpdf/tests/support`) N times inside
//! the component, timed with the WASI monotonic clock, after N/10 unmeasured renders, and answers
//! `renders=N median_ns=… p99_ns=… bytes=…`. The native half (`receta-bench pdf-native`) renders the
//! same document with the same procedure.

#[path = "../../rxpdf/tests/support/mod.rs"]
mod support;

use spin_sdk::http::{Request, Response};
use spin_sdk::http_component;

/// Renders when the query does not say.
const DEFAULT_RENDERS: usize = 1000;
/// At most this many per request (a request has a time limit).
const MAX_RENDERS: usize = 10_000;

#[http_component]
fn handle(req: Request) -> Response {
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
    Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(format!(
            "renders={renders} median_ns={median} p99_ns={p99} bytes={bytes}"
        ))
        .build()
}
