//! The prescription PDF, written with `pdf-writer`: pure Rust, no file system, no clock, so it
//! runs the same inside the prescriptions component (wasm32-wasip2) and in host tests.
//!
//! [`render`] takes everything printed as plain data ([`RxDocument`]) and returns the PDF bytes.
//! It never fails: a logo that is not a usable JPEG is left out, text a font cannot show is
//! replaced by a visible `?`. The same input always gives the same bytes (no timestamps, fixed
//! object numbers), because the stored PDF is hashed.
//!
//! What the document holds (issue 5): the hospital header (name, patron, headline, the `picture`
//! and `university_logo` JPEGs) repeated on every page; prescriber and patient data; the date of
//! issue; the diagnosis when `show_diagnosis`; each medication with its quantity and instructions;
//! the observations (`extras`); the full 64-hex signature (the digital folio) and the digital seal,
//! with a QR code of the patient link (the seal in its fragment); a
//! footer with the hospital's address, postal code and contact and "Página N de M". `page_size` 0
//! is US Letter, 1 Half Letter; `info` adds a page of instructions for the patient, in Spanish.
//!
//! Text uses the standard Type 1 fonts Helvetica, Helvetica-Bold and Courier with
//! WinAnsiEncoding, so it can be extracted (copied) and Spanish comes out right.

mod content;
mod document;
mod es;
mod jpeg;
mod layout;
mod metrics;
mod pdf;
mod qr;
mod winansi;

pub use document::{
    HALF_LETTER, HospitalInfo, LETTER, MedicInfo, MedicationLine, PatientInfo, RxDocument,
    page_dimensions,
};

/// Renders the prescription to PDF bytes. Infallible and deterministic.
pub fn render(doc: &RxDocument) -> Vec<u8> {
    let laid_out = layout::lay_out(doc);
    pdf::write(doc, laid_out)
}

/// Renders the prescription unless it takes more than `max_pages` pages: then `Err` with the
/// number of pages it would take (a real prescription never does; an attacker's always would).
pub fn render_at_most(doc: &RxDocument, max_pages: usize) -> Result<Vec<u8>, usize> {
    let laid_out = layout::lay_out(doc);
    if laid_out.pages.len() > max_pages {
        return Err(laid_out.pages.len());
    }
    Ok(pdf::write(doc, laid_out))
}
