//! The prescription document: what is prescribed, by whom, for whom, where and when, plus 128 random
//! bits. Its canonical JSON (`crate::canonical`: sorted keys, no whitespace) is stored at issue, and
//! the signature is the SHA-256 of that text in lowercase hex. Because of the nonce the signature
//! cannot be guessed from the prescription's content, and anyone holding the stored text can check it
//! against the signature.

use common::hex::encode as hex;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::bindings::exports::receta::prescriptions::prescriptions::IssueRequest;
use crate::medications::Resolved;
use crate::rules::Terms;

/// The document format; bump it when the document's fields change.
/// 2 added `valid_until`, `fills`, `fill_interval_days`, `antibiotic_repeat_reason` and each
/// medication's `fraccion` and `antibiotic` (docs/verification.md). 3 added each medication's
/// `substitution_allowed`.
pub const VERSION: u32 = 3;
/// Random bytes in the nonce: 128 bits.
pub const NONCE_BYTES: usize = 16;

/// A signed document: the canonical text and its signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Signed {
    pub canonical: String,
    pub signature: String,
}

/// A fresh nonce, 32 lowercase hex characters.
pub fn new_nonce() -> String {
    common::hex::random::<NONCE_BYTES>()
}

/// The document of a prescription about to be issued. `clinic` is the JSON value sent, if any.
pub fn build(
    req: &IssueRequest,
    meds: &[Resolved],
    terms: &Terms,
    clinic: &Value,
    issued_at: &str,
    nonce: &str,
) -> Value {
    let (m, h, p) = (&req.medic, &req.hospital, &req.patient);
    json!({
        "format": "receta/prescription",
        "version": VERSION,
        "nonce": nonce,
        "issued_at": issued_at,
        "medic": {
            "id": m.id,
            "name": m.name,
            "email": m.email,
            "cedula_prof": m.cedula_prof,
            "specialty": m.specialty,
            "specialty_no": m.specialty_no,
            "alma_mater": m.alma_mater,
        },
        "hospital": {
            "id": h.id,
            "name": h.name,
            "patron": h.patron,
            "location": h.location,
            "zip_code": h.zip_code,
            "contact": h.contact,
            "headline": h.headline,
        },
        "clinic": clinic,
        "patient": {
            "uid": p.uid,
            "name": p.name,
            "email": p.email,
            "phone": p.phone,
            "date_of_birth": p.date_of_birth,
            "gender": p.gender,
            "curp": p.curp,
        },
        "diagnosis": req.diagnosis,
        "show_diagnosis": req.show_diagnosis,
        "extras": req.extras,
        "valid_until": terms.valid_until,
        "fills": terms.fills,
        "fill_interval_days": terms.fill_interval_days,
        "antibiotic_repeat_reason": terms.antibiotic_repeat_reason,
        "medications": meds.iter().map(|r| json!({
            "presentation": r.presentation,
            "instructions": r.instructions,
            "qty": r.qty,
            "qty_label": r.qty_label,
            "drug_upc": r.drug_upc,
            "category": r.category,
            "drug": r.drug,
            "fraccion": r.fraccion,
            "antibiotic": r.antibiotic,
            "substitution_allowed": r.substitution_allowed,
        })).collect::<Vec<_>>(),
    })
}

/// The canonical text of a document and its signature.
pub fn sign(document: &Value) -> Signed {
    let canonical = crate::canonical::to_string(document);
    let signature = signature_of(&canonical);
    Signed {
        canonical,
        signature,
    }
}

/// SHA-256 of a stored canonical text, lowercase hex: equal to the signature if nothing changed.
pub fn signature_of(canonical: &str) -> String {
    hex(&Sha256::digest(canonical.as_bytes()))
}

/// A reader of the text fields of a stored canonical document by JSON pointer (`/medic/name`): a
/// missing field, or a document altered so that it no longer parses, reads as `""` (it names
/// nobody, and is never a 500).
pub fn text_fields(canonical: &str) -> impl Fn(&str) -> String {
    let parsed: Value = serde_json::from_str(canonical).unwrap_or(Value::Null);
    move |path| {
        parsed
            .pointer(path)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    }
}

/// Whether `s` has the shape of a signature (64 lowercase hex characters).
pub fn is_signature(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::bindings::exports::receta::prescriptions::prescriptions::{
        HospitalSnapshot, MedicSnapshot, NewMedication, PatientSnapshot,
    };
    use crate::medications::resolve;

    pub fn request() -> IssueRequest {
        IssueRequest {
            medic: MedicSnapshot {
                id: 3,
                name: "Dra. Ana María Pérez".into(),
                email: "ana@clinica.mx".into(),
                cedula_prof: "12345678".into(),
                specialty: "Pediatría".into(),
                specialty_no: "87654321".into(),
                alma_mater: "UNAM".into(),
            },
            hospital: HospitalSnapshot {
                id: 1,
                name: "Clínica Roma".into(),
                patron: "Dra. Ana María Pérez".into(),
                location: "Orizaba 10, Roma Nte., 06700 CDMX".into(),
                contact: "55 5555 5555".into(),
                headline: String::new(),
                zip_code: "06700".into(),
                page_size: common::codes::PageSize::Letter,
                info: false,
                send_emails: true,
                picture: None,
                university_logo: None,
            },
            patient: PatientSnapshot {
                id: 9,
                uid: "0f1e2d3c4b5a69788796a5b4c3d2e1f0".into(),
                name: "Juan Pérez".into(),
                email: "juan@example.mx".into(),
                phone: "5512345678".into(),
                date_of_birth: "1990-06-15".into(),
                gender: common::codes::Gender::H,
                curp: String::new(),
                channels: vec![common::codes::Channel::Email],
            },
            clinic: None,
            diagnosis: "Faringitis aguda".into(),
            extras: "Tomar abundantes líquidos".into(),
            show_diagnosis: false,
            send_rx: true,
            medications: vec![NewMedication {
                presentation: "Amoxicilina 500 mg".into(),
                instructions: "1 cápsula cada 8 horas por 7 días".into(),
                qty: 1,
                drug_upc: String::new(),
                category: None,
                fraccion: None,
                antibiotic: None,
                substitution_allowed: true,
            }],
            valid_days: None,
            fills: 1,
            fill_interval_days: 0,
            antibiotic_repeat_reason: String::new(),
            base_url: "http://127.0.0.1:3000".into(),
            webhooks: Vec::new(),
            efirma: None,
            formulary: None,
        }
    }

    fn meds(req: &IssueRequest) -> Vec<Resolved> {
        req.medications
            .iter()
            .map(|m| resolve(m, None).unwrap())
            .collect()
    }

    fn terms() -> Terms {
        crate::rules::terms(AT, 30, 1, 0, "").unwrap()
    }

    const AT: &str = "2026-11-22T03:30:00.000000Z";
    const NONCE: &str = "00112233445566778899aabbccddeeff";

    #[test]
    fn signature_is_sha256_of_the_canonical_text() {
        let req = request();
        let signed = sign(&build(&req, &meds(&req), &terms(), &Value::Null, AT, NONCE));
        assert!(is_signature(&signed.signature), "{}", signed.signature);
        assert_eq!(signature_of(&signed.canonical), signed.signature);
        // The stored text parses back to the same document, so it can be re-checked later.
        let reparsed: Value = serde_json::from_str(&signed.canonical).unwrap();
        assert_eq!(sign(&reparsed), signed);
        assert!(signed.canonical.contains(NONCE));
        assert!(
            signed
                .canonical
                .starts_with("{\"antibiotic_repeat_reason\":\"\",\"clinic\":null,\"diagnosis\":"),
            "keys sorted"
        );
    }

    #[test]
    fn same_content_different_nonce_different_signature() {
        let req = request();
        let a = sign(&build(&req, &meds(&req), &terms(), &Value::Null, AT, NONCE));
        let b = sign(&build(
            &req,
            &meds(&req),
            &terms(),
            &Value::Null,
            AT,
            &new_nonce(),
        ));
        assert_ne!(a.signature, b.signature);
        let again = sign(&build(&req, &meds(&req), &terms(), &Value::Null, AT, NONCE));
        assert_eq!(a, again, "deterministic for the same input");
    }

    #[test]
    fn any_change_of_content_changes_the_signature() {
        let signature_of = |req: &IssueRequest, clinic: &Value| {
            sign(&build(req, &meds(req), &terms(), clinic, AT, NONCE)).signature
        };
        let req = request();
        let base = signature_of(&req, &Value::Null);
        let mut other = request();
        other.medications[0].qty = 2;
        assert_ne!(signature_of(&other, &Value::Null), base);
        let mut other = request();
        other.patient.name = "Juan Peres".into();
        assert_ne!(signature_of(&other, &Value::Null), base);
        assert_ne!(signature_of(&req, &json!(5)), base);
    }

    #[test]
    fn nonces_are_128_random_bits() {
        let a = new_nonce();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, new_nonce());
    }

    #[test]
    fn signature_shape() {
        assert!(is_signature(&"a".repeat(64)));
        assert!(!is_signature(&"A".repeat(64)));
        assert!(!is_signature(&"a".repeat(63)));
        assert!(!is_signature(&"g".repeat(64)));
        assert!(!is_signature("12"));
    }
}
