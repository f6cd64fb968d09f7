//! Page layout: rows of text flowing down the page, onto more pages as needed, each page with the
//! hospital header on top and the footer at the bottom.
//!
//! Everything is laid out as [`Row`]s: a band of the page's width with a height, some text spans,
//! background fills and rules. A row is never split; a block of rows that should stay together (a
//! medication, a heading with its first line) moves to the next page whole when it fits on one.
//!
//! The modules, bottom up: `paint` (the drawable vocabulary and its painters), `flow` (the page
//! engine and text blocks), then one module per part of the prescription: `letterhead`, `parties`,
//! `medications`, `signature`, `info_page`. This file puts the parts in order.

mod flow;
mod info_page;
mod letterhead;
mod medications;
mod paint;
mod parties;
mod signature;

use crate::document::{RxDocument, page_dimensions};
use crate::jpeg::{self, JpegInfo};

use flow::{Layout, PageKind};
pub use paint::{FONT_BOLD, FONT_MONO, FONT_REGULAR, IMAGE_NAMES, QR_NAME, qr_mask};
use paint::{Geometry, Logo};

/// The laid-out document: page size, one content stream per page, the usable logos.
pub struct LaidOut {
    pub size: (f32, f32),
    pub pages: Vec<Vec<u8>>,
    /// For each slot (0 = picture, 1 = university logo), the JPEG's header when it is usable.
    pub logos: [Option<JpegInfo>; 2],
    /// The QR code drawn, if any: its width in modules and its dark modules.
    pub qr: Option<(usize, Vec<bool>)>,
}

pub fn lay_out(doc: &RxDocument) -> LaidOut {
    let (width, height) = page_dimensions(doc.hospital.page_size);
    let half = doc.hospital.page_size == 1;
    let g = Geometry {
        width,
        height,
        margin: if half { 26.0 } else { 40.0 },
        k: if half { 0.8 } else { 1.0 },
    };
    let parsed = [
        doc.hospital.picture.as_deref().and_then(jpeg::parse),
        doc.hospital
            .university_logo
            .as_deref()
            .and_then(jpeg::parse),
    ];
    let logos = parsed
        .iter()
        .enumerate()
        .filter_map(|(slot, info)| info.map(|info| Logo { slot, info }))
        .collect();
    let mut l = Layout {
        doc,
        g,
        logos,
        pages: Vec::new(),
        y: 0.0,
        body_top: 0.0,
        bottom: 0.0,
        footer: Vec::new(),
        first_header: Vec::new(),
        continuation_header: Vec::new(),
        info_header: Vec::new(),
        qr: None,
    };
    l.footer = l.footer_rows();
    l.first_header = l.header_rows(PageKind::First);
    l.continuation_header = l.header_rows(PageKind::Continuation);
    if doc.hospital.info {
        l.info_header = l.header_rows(PageKind::Info);
    }
    l.bottom = g.margin + l.footer.iter().map(|r| r.height).sum::<f32>() + 8.0 * g.k;

    l.new_page(PageKind::First);
    l.parties();
    l.diagnosis();
    l.medications();
    l.observations();
    l.validity();
    if doc.hospital.info {
        l.new_page(PageKind::Info);
        l.info_page();
    }
    let qr = l.qr.take();
    let pages = l.finish();
    LaidOut {
        size: (width, height),
        pages,
        logos: parsed,
        qr,
    }
}

#[cfg(test)]
mod tests {
    use super::flow::shorten;
    use super::paint::{INK, Style, qr_modules};
    use super::*;
    use crate::metrics::Font;

    #[test]
    fn shorten_adds_an_ellipsis_that_fits() {
        let style = Style {
            font: Font::Regular,
            size: 10.0,
            color: INK,
        };
        let mut lines = vec![b"aaaa".to_vec(), b"bbbb".to_vec(), b"cccc".to_vec()];
        shorten(&mut lines, 2, style, style.width(b"bbbb"));
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].last(), Some(&0x85));
        assert!(style.width(&lines[1]) <= style.width(b"bbbb"));
    }

    #[test]
    fn pathological_input_renders_on_finite_pages() {
        let long = "palabra ".repeat(2000);
        let word = "x".repeat(20_000);
        let mut doc = RxDocument::default();
        doc.hospital.name = long.clone();
        doc.hospital.patron = word.clone();
        doc.hospital.headline = "\n\n\n".into();
        doc.hospital.location = long.clone();
        doc.hospital.contact = word.clone();
        doc.hospital.page_size = 1;
        doc.hospital.info = true;
        doc.hospital.picture = Some(vec![0xFF, 0xD8, 0xFF]);
        doc.hospital.university_logo = Some(vec![]);
        doc.medic.name = word.clone();
        doc.patient.name = long.clone();
        doc.patient.date_of_birth = "9999-99-99".into();
        doc.issued_on = word.clone();
        doc.diagnosis = "\u{0}\u{1F600}\r\n".repeat(500);
        doc.show_diagnosis = true;
        doc.extras = word.clone();
        doc.signature = word.clone();
        doc.cta_link = word.clone();
        doc.medications = (0..300)
            .map(|i| crate::document::MedicationLine {
                presentation: if i % 2 == 0 {
                    word.clone()
                } else {
                    String::new()
                },
                qty: if i % 2 == 0 { i64::MIN } else { i64::MAX },
                instructions: "\n".repeat(i),
                ..Default::default()
            })
            .collect();
        let laid = lay_out(&doc);
        assert!(
            laid.pages.len() > 10 && laid.pages.len() < 5000,
            "{}",
            laid.pages.len()
        );
        let pdf = crate::render(&doc);
        assert!(pdf.starts_with(b"%PDF-1.7") && pdf.ends_with(b"%%EOF"));
    }

    #[test]
    fn qr_for_links_only() {
        assert!(qr_modules("").is_none());
        let (n, modules) = qr_modules("https://receta.example/rx/abc").unwrap();
        assert_eq!(modules.len(), n * n);
        assert!(qr_modules(&"x".repeat(5000)).is_none());
        assert!(qr_modules("  ").is_none());
    }
}
