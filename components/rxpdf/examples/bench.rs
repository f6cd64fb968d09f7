//! Render time of the sample prescription (five medications, both logos):
//! `cargo run --release -p rxpdf --example bench [-- RENDERS]`. Prints a markdown table.

#[path = "../tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

fn measure(doc: &rxpdf::RxDocument, renders: usize) -> (Duration, Duration, usize) {
    let size = rxpdf::render(doc).len();
    for _ in 0..renders / 10 {
        black_box(rxpdf::render(black_box(doc)));
    }
    let mut times: Vec<Duration> = (0..renders)
        .map(|_| {
            let start = Instant::now();
            black_box(rxpdf::render(black_box(doc)));
            start.elapsed()
        })
        .collect();
    times.sort();
    let p99 = times[(renders * 99 / 100).min(renders - 1)];
    (times[renders / 2], p99, size)
}

fn main() {
    let renders: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let letter = support::sample();
    let mut half = support::sample();
    half.hospital.page_size = 1;
    let mut info = support::sample();
    info.hospital.info = true;
    println!("| document | renders | median | p99 | PDF size (bytes) |");
    println!("|---|---:|---:|---:|---:|");
    for (name, doc) in [
        ("Letter, 5 medications, both logos", &letter),
        ("Half Letter, 5 medications, both logos", &half),
        ("Letter, 5 medications, both logos, info page", &info),
    ] {
        let (median, p99, size) = measure(doc, renders);
        println!(
            "| {name} | {renders} | {:.3} ms | {:.3} ms | {size} |",
            median.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        );
    }
}
