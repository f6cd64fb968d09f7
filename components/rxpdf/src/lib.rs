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
mod es;
mod jpeg;
mod layout;
mod metrics;
mod pdf;
mod qr;
mod winansi;

/// The JPEG check the renderer applies to the logos; an upload handler can use it to refuse a
/// `.jpg` that would not be printed.
pub use jpeg::{JpegInfo, parse as parse_jpeg};

/// Everything printed on a prescription.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RxDocument {
    pub hospital: HospitalInfo,
    pub medic: MedicInfo,
    pub patient: PatientInfo,
    /// Date of issue, `YYYY-MM-DD` (the caller's clock: the library has none).
    pub issued_on: String,
    pub diagnosis: String,
    /// The diagnosis is printed only when this is true.
    pub show_diagnosis: bool,
    pub medications: Vec<MedicationLine>,
    /// Extra instructions or observations for the patient.
    pub extras: String,
    /// The prescription's signature, 64 lowercase hex characters, printed in full: the SHA-256 of
    /// its document, printed as its digital folio.
    pub signature: String,
    /// Link to the patient landing view; printed, and encoded in the QR code unless `qr_text` is
    /// given (no QR code when both are empty).
    pub cta_link: String,
    /// What the QR code encodes instead of `cta_link`: the link with the seal in its fragment
    /// (`<link>#<kid>.<sig>`), so a verifier reads the seal from the QR code.
    pub qr_text: String,
    /// The digital seal, printed under the folio in a monospaced block (none when empty): the id
    /// of the service key that sealed it, and the Ed25519 signature (base64url).
    pub seal_kid: String,
    pub seal_sig: String,
}

/// The hospital (or office, or clinic) the prescription is issued from: header and footer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HospitalInfo {
    pub name: String,
    /// The name printed on the prescription under the hospital's.
    pub patron: String,
    /// Optional subtitle (slogan).
    pub headline: String,
    /// Full address with state.
    pub location: String,
    pub zip_code: String,
    /// An email or a phone.
    pub contact: String,
    /// 0 = US Letter (612×792 pt), 1 = Half Letter (396×612 pt); anything else is Letter.
    pub page_size: u8,
    /// Adds the information page for the patient.
    pub info: bool,
    /// Hospital picture, JPEG bytes, printed at the left of the header.
    pub picture: Option<Vec<u8>>,
    /// University logo, JPEG bytes, printed at the right of the header.
    pub university_logo: Option<Vec<u8>>,
}

/// The prescriber.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MedicInfo {
    pub name: String,
    /// Cédula profesional (professional licence number).
    pub cedula_prof: String,
    pub specialty: String,
    /// Cédula de especialidad (specialty licence number).
    pub specialty_no: String,
    pub alma_mater: String,
}

/// The patient.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PatientInfo {
    pub name: String,
    /// `YYYY-MM-DD`; the age on the date of issue is printed from it.
    pub date_of_birth: String,
    /// `M`/`H` (male), `F` (female), `O` (other); another value is printed as given.
    pub gender: String,
    /// Printed when not empty.
    pub curp: String,
}

/// One medication of the prescription.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MedicationLine {
    pub presentation: String,
    /// Catalog name of the drug; empty when unknown. Printed when it differs from `presentation`.
    pub drug: String,
    pub qty: i64,
    /// Descriptive label of the quantity (`cajas`, `frasco de 120 ml`).
    pub qty_label: String,
    pub instructions: String,
}

/// US Letter, in points.
pub const LETTER: (f32, f32) = (612.0, 792.0);
/// Half Letter, in points.
pub const HALF_LETTER: (f32, f32) = (396.0, 612.0);

/// The page size of `page_size`: 1 is Half Letter, anything else US Letter.
pub fn page_dimensions(page_size: u8) -> (f32, f32) {
    if page_size == 1 { HALF_LETTER } else { LETTER }
}

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
