//! Render time of the sample prescription (five medications, both logos):
//! `cargo run --release -p rxpdf --example bench [-- RENDERS]`. Prints a markdown table.

use rxpdf_sample as support;

/// Median and p99 render time in milliseconds, and the PDF's size.
fn measure(doc: &rxpdf::RxDocument, renders: usize) -> (f64, f64, usize) {
    let renders = renders.max(1);
    let (size, times) = support::render_times(doc, renders);
    let ms = |ns: u128| ns as f64 / 1e6;
    let p99 = times[(renders * 99 / 100).min(renders - 1)];
    (ms(times[renders / 2]), ms(p99), size)
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
            median, p99
        );
    }
}
