//! The PDF rendered once at issue and stored with the prescription, in the same transaction (decisions:
//! the PDF endpoint, the email and `raw_size` always use those same bytes). It is rendered by
//! `rxpdf` from the same data the signed document holds, plus the hospital's images and the patient
//! link (`<base-url>/rx/<signature>`) for the QR code.

use common::codes::Coded;

use crate::bindings::exports::receta::prescriptions::prescriptions::{IssueRequest, Seal};
use crate::medications::Resolved;
use crate::rules::Terms;

/// The data printed on the prescription.
pub fn document(
    req: &IssueRequest,
    meds: &[Resolved],
    terms: &Terms,
    signature: &str,
    seal: &Seal,
    issued_on: &str,
) -> rxpdf::RxDocument {
    let cta_link = cta_link(&req.base_url, signature);
    let (h, m, p) = (&req.hospital, &req.medic, &req.patient);
    rxpdf::RxDocument {
        hospital: rxpdf::HospitalInfo {
            name: h.name.clone(),
            patron: h.patron.clone(),
            headline: h.headline.clone(),
            location: h.location.clone(),
            zip_code: h.zip_code.clone(),
            contact: h.contact.clone(),
            page_size: h.page_size.number(),
            info: h.info,
            picture: h.picture.clone(),
            university_logo: h.university_logo.clone(),
        },
        medic: rxpdf::MedicInfo {
            name: m.name.clone(),
            cedula_prof: m.cedula_prof.clone(),
            specialty: m.specialty.clone(),
            specialty_no: m.specialty_no.clone(),
            alma_mater: m.alma_mater.clone(),
        },
        patient: rxpdf::PatientInfo {
            name: p.name.clone(),
            date_of_birth: p.date_of_birth.clone(),
            gender: p.gender.code().to_string(),
            curp: p.curp.clone(),
        },
        issued_on: issued_on.to_string(),
        diagnosis: req.diagnosis.clone(),
        show_diagnosis: req.show_diagnosis,
        medications: meds
            .iter()
            .map(|r| rxpdf::MedicationLine {
                presentation: r.presentation.clone(),
                drug: r.drug.clone(),
                qty: r.qty.into(),
                qty_label: r.qty_label.clone(),
                instructions: r.instructions.clone(),
                antibiotic: r.antibiotic == Some(true),
                not_substitutable: !r.substitution_allowed,
            })
            .collect(),
        extras: req.extras.clone(),
        signature: signature.to_string(),
        qr_text: sealed_link(&cta_link, seal),
        cta_link,
        seal_kid: seal.kid.clone(),
        seal_sig: seal.sig.clone(),
        valid_until: terms.valid_until.clone(),
        fills: terms.fills,
        fill_interval_days: terms.fill_interval_days,
        antibiotic_repeat_reason: terms.antibiotic_repeat_reason.clone(),
        constancia: String::new(),
        efirma: efirma_line(req),
    }
}

/// The e.firma line of a draft's PDF: the certificate the draft pins, which the activation's
/// signer must hold (`efirma::activate`); nothing for a prescription created without.
fn efirma_line(req: &IssueRequest) -> String {
    match &req.efirma {
        Some(cert) => format!(
            "Firmado con e.firma de {}, RFC {}, certificado {}",
            req.medic.name.trim(),
            cert.rfc,
            cert.serial
        ),
        None => String::new(),
    }
}

/// Where the PDF says the constancia is: it is stamped after issue, so the PDF (rendered at issue)
/// names the public check that shows it; nothing when no timestamp authority is configured.
fn constancia_note(base_url: &str, stamping: bool) -> String {
    if !stamping {
        return String::new();
    }
    format!(
        "sello de tiempo RFC 3161 de una autoridad acreditada, solicitado al emitir; consulte el \
         emisor y la hora con el folio en {}/api/v2/verify/",
        base_url.trim_end_matches('/')
    )
}

/// Pages a prescription may print on (docs/patients-and-prescriptions.md, "Limits"): a real one
/// takes one or two; fifty medications of long instructions take a dozen.
pub const MAX_PAGES: usize = 20;

/// The PDF bytes of a prescription about to be issued, or `invalid` on `medications` when it
/// would print on more than `MAX_PAGES` pages. `stamping`: a timestamp authority is configured
/// (the PDF then says where its constancia is).
pub fn render(
    req: &IssueRequest,
    meds: &[Resolved],
    terms: &Terms,
    signature: &str,
    seal: &Seal,
    issued_on: &str,
    stamping: bool,
) -> Result<Vec<u8>, common::types::Error> {
    let mut doc = document(req, meds, terms, signature, seal, issued_on);
    doc.constancia = constancia_note(&req.base_url, stamping);
    rxpdf::render_at_most(&doc, MAX_PAGES).map_err(
        |pages| {
            common::types::Error::field(
                "medications",
                format!(
                    "The prescription would print on {pages} pages; at most {MAX_PAGES} are allowed. \
                     Shorten the instructions or the observations, or split it in two prescriptions."
                ),
            )
        },
    )
}

/// What the patient carries (the QR code, the email's link): the page link with the seal in its
/// fragment, `<link>#<kid>.<sig>` (browsers never send the fragment).
pub fn sealed_link(link: &str, seal: &Seal) -> String {
    format!("{link}#{}.{}", seal.kid, seal.sig)
}

/// The patient landing link, `<base-url>/rx/<signature>`.
pub fn cta_link(base_url: &str, signature: &str) -> String {
    format!("{}/rx/{signature}", base_url.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::tests::request;
    use crate::medications::resolve;

    #[test]
    fn the_pdf_says_where_the_constancia_is_when_there_is_an_authority() {
        let note = constancia_note("https://receta.example.mx/", true);
        assert!(
            note.ends_with("https://receta.example.mx/api/v2/verify/"),
            "{note}"
        );
        assert_eq!(constancia_note("https://receta.example.mx", false), "");
    }

    #[test]
    fn renders_a_pdf_with_the_link_and_signature() {
        let req = request();
        let meds: Vec<Resolved> = req
            .medications
            .iter()
            .map(|m| resolve(m, None).unwrap())
            .collect();
        let signature = "ab".repeat(32);
        let seal = Seal {
            kid: "0123456789abcdef".into(),
            alg: "EdDSA".into(),
            sig: "s".repeat(86),
        };
        let terms = crate::rules::terms("2026-11-22T10:00:00.000000Z", 30, 2, 7, "").unwrap();
        let doc = document(&req, &meds, &terms, &signature, &seal, "2026-11-22");
        assert_eq!((doc.valid_until.as_str(), doc.fills), ("2026-12-22", 2));
        assert_eq!(
            doc.cta_link,
            format!("http://127.0.0.1:3000/rx/{signature}")
        );
        assert_eq!(
            doc.qr_text,
            format!(
                "http://127.0.0.1:3000/rx/{signature}#0123456789abcdef.{}",
                seal.sig
            )
        );
        assert_eq!(doc.medications[0].qty_label, "1 caja");
        assert_eq!(doc.efirma, "", "created without e.firma");
        let mut signed = request();
        signed.efirma = Some(
            crate::bindings::exports::receta::prescriptions::prescriptions::PrescriberCertificate {
                rfc: "HEGT7610034S2".into(),
                serial: "30001000000500000001".into(),
            },
        );
        assert_eq!(
            efirma_line(&signed),
            format!(
                "Firmado con e.firma de {}, RFC HEGT7610034S2, certificado 30001000000500000001",
                signed.medic.name
            )
        );
        let pdf = render(&req, &meds, &terms, &signature, &seal, "2026-11-22", true).unwrap();
        assert!(pdf.starts_with(b"%PDF-"));
        assert_eq!(
            pdf,
            render(&req, &meds, &terms, &signature, &seal, "2026-11-22", true).unwrap(),
            "deterministic"
        );
    }

    #[test]
    fn links_never_double_the_slash() {
        assert_eq!(cta_link("https://x.mx/", "s"), "https://x.mx/rx/s");
        assert_eq!(cta_link("https://x.mx", "s"), "https://x.mx/rx/s");
    }
}
