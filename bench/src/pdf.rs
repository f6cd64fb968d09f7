//! Native PDF render time: the same document and procedure as the `pdfbench` component
//! (`components/pdfbench`): rxpdf's sample prescription, N/10 unmeasured renders, then N timed.

#[path = "../../components/rxpdf/tests/support/mod.rs"]
mod support;

use std::hint::black_box;
use std::time::Instant;

use anyhow::Result;

use crate::{Flags, median_p99};

pub fn run(flags: &Flags) -> Result<()> {
    let renders: usize = flags.num("renders", 1000)?.max(1);
    let doc = support::sample();
    let bytes = rxpdf::render(&doc).len();
    for _ in 0..renders / 10 {
        black_box(rxpdf::render(black_box(&doc)));
    }
    let mut times: Vec<u128> = (0..renders)
        .map(|_| {
            let start = Instant::now();
            black_box(rxpdf::render(black_box(&doc)));
            start.elapsed().as_nanos()
        })
        .collect();
    let (median, p99) = median_p99(&mut times);
    println!("renders={renders} median_ns={median} p99_ns={p99} bytes={bytes}");
    Ok(())
}
