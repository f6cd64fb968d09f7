//! What a prescription prints, as plain data: the input of `render`, and the page sizes.

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
    /// The last day it may be filled, `YYYY-MM-DD` (printed "Válida hasta"); none when empty.
    pub valid_until: String,
    /// Times it may be filled (printed when more than 1).
    pub fills: u32,
    /// Days between fills (printed when not 0).
    pub fill_interval_days: u32,
    /// Why an antibiotic is repeated (printed when not empty).
    pub antibiotic_repeat_reason: String,
    /// The NOM-151 constancia, printed "Constancia NOM-151: <this>" on the verification block
    /// (none when empty): who stamped it and when, or where to fetch it (the PDF is rendered at
    /// issue, before the timestamp authority answers).
    pub constancia: String,
    /// The prescriber's e.firma, printed as is in the signature block ("Firmado con e.firma de
    /// <name>, RFC <rfc>, certificado <serial>"); none when empty.
    pub efirma: String,
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
    /// Printed "ANTIBIÓTICO" beside the medication.
    pub antibiotic: bool,
    /// The prescriber did not allow substitution (RIS art. 31): printed "No sustituible" beside it.
    pub not_substitutable: bool,
}

/// US Letter, in points.
pub const LETTER: (f32, f32) = (612.0, 792.0);
/// Half Letter, in points.
pub const HALF_LETTER: (f32, f32) = (396.0, 612.0);

/// The page size of `page_size`: 1 is Half Letter, anything else US Letter.
pub fn page_dimensions(page_size: u8) -> (f32, f32) {
    if page_size == 1 { HALF_LETTER } else { LETTER }
}
