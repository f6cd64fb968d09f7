//! X.509 chains, CMS `SignedData` signatures and RFC 3161 timestamps, over the RustCrypto crates
//! (`der`, `x509-cert`, `cms`, `x509-tsp`, `rsa`, `p256`, `p384`): no hand-written ASN.1.
//!
//! - [`sig`]: one signature by a certificate's public key (RSA PKCS#1 v1.5, ECDSA P-256/P-384).
//! - [`signed`]: a CMS `SignedData` signer's signature over its content (attached or detached).
//! - [`chain`]: a certificate chaining to configured authorities at a given time.
//! - [`identity`]: what a SAT e.firma certificate says of its holder (RFC, CURP, number).
//! - [`prescriber`]: the prescriber's e.firma signature (CMS, detached) over a prescription.
//! - [`tsp`]: a `TimeStampReq`, and the checks of a `TimeStampResp` before it is stored (NOM-151
//!   constancias: docs/verification.md).
//!
//! Pure Rust and no Spin code: the notifications component stamps with it, `receta-verify` checks
//! offline with it.

pub mod chain;
pub mod identity;
pub mod prescriber;
pub mod sig;
pub mod signed;
pub mod tsp;

pub use x509_cert::Certificate;

/// The certificates of a PEM bundle (`-----BEGIN CERTIFICATE-----` blocks); an empty text is none.
pub fn pem_bundle(pem: &str) -> Result<Vec<Certificate>, String> {
    if pem.trim().is_empty() {
        return Ok(Vec::new());
    }
    Certificate::load_pem_chain(pem.as_bytes())
        .map_err(|e| format!("not a PEM bundle of X.509 certificates: {e}"))
}

/// A certificate's subject as a person reads it: its common name, else the whole name (RFC 4514).
pub fn display_name(name: &x509_cert::name::Name) -> String {
    use const_oid::db::rfc4519::CN;
    name.0
        .iter()
        .flat_map(|rdn| rdn.0.iter())
        .find(|atv| atv.oid == CN)
        .and_then(|atv| text_value(&atv.value))
        .unwrap_or_else(|| name.to_string())
}

/// The text of a directory string (UTF8String, PrintableString, IA5String…), if it is one.
pub fn text_value(value: &der::Any) -> Option<String> {
    use der::{Tag, Tagged};
    match value.tag() {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::TeletexString => {
            std::str::from_utf8(value.value()).ok().map(str::to_string)
        }
        _ => None,
    }
}
