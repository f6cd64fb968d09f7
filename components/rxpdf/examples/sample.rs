//! Writes the sample prescription (both logos, five medications) to a PDF file:
//! `cargo run --release -p rxpdf --example sample -- OUT.pdf [half] [info]`.
//! `docs/prescription-sample.png` is page 1 of it, from `pdftoppm -r 100 -png -singlefile`.

use rxpdf_sample as support;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .unwrap_or_else(|| "prescription-sample.pdf".into());
    let mut doc = support::sample();
    for flag in args {
        match flag.as_str() {
            "half" => doc.hospital.page_size = 1,
            "info" => doc.hospital.info = true,
            "thirty" => {
                let meds = doc.medications.clone();
                doc.medications = meds.iter().cycle().take(30).cloned().collect();
            }
            other => panic!("unknown flag {other:?} (half, info, thirty)"),
        }
    }
    let pdf = rxpdf::render(&doc);
    std::fs::write(&out, &pdf).expect("write the PDF");
    println!("{out}: {} bytes", pdf.len());
}
