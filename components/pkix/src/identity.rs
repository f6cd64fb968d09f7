//! What a signer's certificate says of its holder, read the way SAT's e.firma (FIEL) certificates
//! lay it out (docs/verification.md, "The prescriber's e.firma"): the RFC in
//! `x500UniqueIdentifier` (OID 2.5.4.45) and the CURP in `serialNumber` (OID 2.5.4.5), each
//! possibly followed by ` / ` and a legal representative's; the certificate number, SAT's decimal
//! digits, as the serial's ASCII bytes.

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5280::ID_CE_KEY_USAGE;
use der::{Decode, DecodePem};
use x509_cert::Certificate;
use x509_cert::ext::pkix::{KeyUsage, KeyUsages};
use x509_cert::name::Name;

/// `x500UniqueIdentifier`: SAT puts the holder's RFC there.
const UNIQUE_IDENTIFIER: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.45");
/// `serialNumber` (of the subject, not the certificate): SAT puts the holder's CURP there.
const SUBJECT_SERIAL: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.5");

/// The holder and the certificate, as the API shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// SAT's certificate number (the serial's ASCII digits), else the serial in hex.
    pub serial: String,
    /// The issuing authority (its common name).
    pub issuer: String,
    pub rfc: Option<String>,
    pub curp: Option<String>,
    /// ISO 8601 UTC.
    pub not_before: String,
    pub not_after: String,
}

/// The certificates of an upload: a PEM bundle (the holder's first, then the authorities it came
/// with), else one certificate as [`certificate`] reads it.
pub fn certificates(input: &[u8]) -> Result<Vec<Certificate>, String> {
    let text = std::str::from_utf8(input).map(str::trim);
    if let Ok(pem) = text
        && pem.starts_with("-----BEGIN")
        && pem.matches("-----BEGIN").count() > 1
    {
        return Certificate::load_pem_chain(pem.as_bytes()).map_err(|e| not_a_certificate(&e));
    }
    certificate(input).map(|c| vec![c])
}

/// A certificate from PEM, from base64 of its DER (a SAT `.cer` file's content), or from DER.
pub fn certificate(input: &[u8]) -> Result<Certificate, String> {
    let text = std::str::from_utf8(input).map(str::trim);
    if let Ok(pem) = text
        && pem.starts_with("-----BEGIN")
    {
        return Certificate::from_pem(pem.as_bytes()).map_err(|e| not_a_certificate(&e));
    }
    if let Ok(b64) = text
        && let Some(der) = base64_decode(b64)
    {
        return Certificate::from_der(&der).map_err(|e| not_a_certificate(&e));
    }
    Certificate::from_der(input).map_err(|e| not_a_certificate(&e))
}

fn not_a_certificate(e: &dyn std::fmt::Display) -> String {
    format!("This is not an X.509 certificate ({e}).")
}

/// Who the certificate names, and its dates.
pub fn holder(cert: &Certificate) -> Holder {
    let tbs = &cert.tbs_certificate;
    let serial = tbs.serial_number.as_bytes();
    let serial = if !serial.is_empty() && serial.iter().all(u8::is_ascii_digit) {
        String::from_utf8_lossy(serial).into_owned()
    } else {
        serial.iter().map(|b| format!("{b:02x}")).collect()
    };
    Holder {
        serial,
        issuer: crate::display_name(&tbs.issuer),
        rfc: first_of(&tbs.subject, UNIQUE_IDENTIFIER),
        curp: first_of(&tbs.subject, SUBJECT_SERIAL),
        not_before: tbs.validity.not_before.to_date_time().to_string(),
        not_after: tbs.validity.not_after.to_date_time().to_string(),
    }
}

/// Whether its key usage allows signing documents: `digitalSignature` or `nonRepudiation`. A
/// certificate without the extension may do anything (RFC 5280), so it signs.
pub fn signs(cert: &Certificate) -> bool {
    match crate::chain::extension(cert, ID_CE_KEY_USAGE) {
        None => true,
        Some(value) => KeyUsage::from_der(value).is_ok_and(|ku| {
            ku.0.contains(KeyUsages::DigitalSignature) || ku.0.contains(KeyUsages::NonRepudiation)
        }),
    }
}

/// The first non-empty ` / `-separated part of the attribute `oid` of `name`, upper-case.
fn first_of(name: &Name, oid: ObjectIdentifier) -> Option<String> {
    let value = name
        .0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .find(|atv| atv.oid == oid)
        .and_then(|atv| crate::text_value(&atv.value))?;
    value
        .split('/')
        .map(str::trim)
        .find(|part| !part.is_empty())
        .map(str::to_uppercase)
}

/// Standard base64 (with or without padding, line breaks ignored); `None` when it is not.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    let compact: String = text.split_whitespace().collect();
    STANDARD
        .decode(&compact)
        .or_else(|_| STANDARD_NO_PAD.decode(compact.trim_end_matches('=')))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SAT's public test e.firma (phpcfdi/credentials' copy of SAT's test credentials; a company's,
    /// with its legal representative's RFC and CURP after ` / `).
    const SAT_TEST: &str = include_str!("../tests/fixtures/sat-test-fiel-AAA010101AAA.pem");

    #[test]
    fn a_sat_certificate_names_its_holders_rfc_curp_and_number() {
        let cert = certificate(SAT_TEST.as_bytes()).unwrap();
        let h = holder(&cert);
        assert_eq!(h.rfc.as_deref(), Some("AAA010101AAA"));
        assert_eq!(h.curp.as_deref(), Some("HEGT761003MDFRNN09"));
        assert_eq!(h.serial, "30001000000300023685");
        assert_eq!(h.issuer, "A.C. 2 de pruebas(4096)");
        assert_eq!(
            (h.not_before.as_str(), h.not_after.as_str()),
            ("2017-05-16T23:29:17Z", "2021-05-15T23:29:17Z")
        );
        assert!(signs(&cert), "digitalSignature and nonRepudiation");
    }

    #[test]
    fn pem_base64_of_the_der_and_der_all_read() {
        use der::Encode;
        let der = certificate(SAT_TEST.as_bytes()).unwrap().to_der().unwrap();
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&der);
        assert_eq!(certificate(b64.as_bytes()).unwrap().to_der().unwrap(), der);
        assert_eq!(certificate(&der).unwrap().to_der().unwrap(), der);
        let e = certificate(b"not a certificate").unwrap_err();
        assert!(e.starts_with("This is not an X.509 certificate"), "{e}");
    }
}
