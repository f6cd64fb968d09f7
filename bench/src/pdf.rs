//! Native PDF render time: the same document and procedure as the `pdfbench` component
//! (`bench/components/pdfbench`): rxpdf's sample prescription, N/10 unmeasured renders, then N timed.

use rxpdf_sample as support;

use anyhow::Result;

use crate::args::{Flags, median_p99};

pub fn run(flags: &Flags) -> Result<()> {
    let renders: usize = flags.num("renders", 1000)?.max(1);
    let (bytes, mut times) = support::render_times(&support::sample(), renders);
    let (median, p99) = median_p99(&mut times);
    println!("renders={renders} median_ns={median} p99_ns={p99} bytes={bytes}");
    Ok(())
}
