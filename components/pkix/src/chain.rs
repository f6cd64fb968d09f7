//! Whether a certificate chains, through the certificates that came with it, to one of the
//! configured authorities, every link valid at a given time.

use std::time::Duration;

use const_oid::db::rfc5280::ID_CE_BASIC_CONSTRAINTS;
use der::{Decode, Encode};
use x509_cert::Certificate;
use x509_cert::ext::pkix::BasicConstraints;

use crate::sig::{self, Hash};

/// Links at most: leaf, intermediates, authority.
const MAX_DEPTH: usize = 6;

/// Whether `leaf` chains to one of `anchors`, through `pool` (the intermediates that came with
/// it), each certificate's signature verifying with its issuer's key and each valid at `at`
/// (seconds since the Unix epoch). The reason, a sentence, when it does not.
pub fn chains_to(
    leaf: &Certificate,
    pool: &[Certificate],
    anchors: &[Certificate],
    at: Duration,
) -> Result<(), String> {
    if anchors.is_empty() {
        return Err("no authority is configured".into());
    }
    let mut cert = leaf.clone();
    for _ in 0..MAX_DEPTH {
        valid_at(&cert, at)?;
        if anchors.iter().any(|a| a == &cert) {
            return Ok(());
        }
        if let Some(anchor) = anchors.iter().find(|a| issued(a, &cert)) {
            return valid_at(anchor, at);
        }
        match pool
            .iter()
            .find(|c| *c != &cert && issued(c, &cert) && is_ca(c))
        {
            Some(issuer) => cert = issuer.clone(),
            None => {
                return Err(format!(
                    "the certificate of {} does not chain to the configured authorities",
                    crate::display_name(&leaf.tbs_certificate.subject)
                ));
            }
        }
    }
    Err("the certificate chain is too long".into())
}

/// Whether `cert` is valid (not before, not after) at `at`.
pub fn valid_at(cert: &Certificate, at: Duration) -> Result<(), String> {
    let v = &cert.tbs_certificate.validity;
    if at < v.not_before.to_unix_duration() || at > v.not_after.to_unix_duration() {
        return Err(format!(
            "the certificate of {} was not valid at that time (valid {} to {})",
            crate::display_name(&cert.tbs_certificate.subject),
            v.not_before,
            v.not_after
        ));
    }
    Ok(())
}

/// Whether `issuer` names and signed `cert`.
fn issued(issuer: &Certificate, cert: &Certificate) -> bool {
    issuer.tbs_certificate.subject == cert.tbs_certificate.issuer && signed_by(cert, issuer).is_ok()
}

/// Whether `cert`'s signature verifies with `issuer`'s key.
pub fn signed_by(cert: &Certificate, issuer: &Certificate) -> Result<(), String> {
    let hash = Hash::from_signature_oid(&cert.signature_algorithm.oid)
        .ok_or("an unsupported certificate signature algorithm")?;
    let tbs = cert
        .tbs_certificate
        .to_der()
        .map_err(|e| format!("unreadable certificate: {e}"))?;
    let signature = cert
        .signature
        .as_bytes()
        .ok_or("a certificate signature of partial bytes")?;
    sig::verify(
        &issuer.tbs_certificate.subject_public_key_info,
        hash,
        &tbs,
        signature,
    )
}

/// Whether `cert` says it is an authority (basic constraints, cA).
fn is_ca(cert: &Certificate) -> bool {
    extension(cert, ID_CE_BASIC_CONSTRAINTS)
        .and_then(|v| BasicConstraints::from_der(v).ok())
        .is_some_and(|b| b.ca)
}

/// An extension's value (the DER inside its OCTET STRING) and nothing else.
pub fn extension(cert: &Certificate, oid: const_oid::ObjectIdentifier) -> Option<&[u8]> {
    cert.tbs_certificate
        .extensions
        .as_ref()?
        .iter()
        .find(|e| e.extn_id == oid)
        .map(|e| e.extn_value.as_bytes())
}
