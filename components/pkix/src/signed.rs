//! A CMS `SignedData` (RFC 5652) signer's signature over its content: the content's digest against
//! the signed `messageDigest` attribute, then the signature over the signed attributes, by the
//! signer's certificate found among the certificates the envelope carries.

use cms::cert::CertificateChoices;
use cms::signed_data::{SignedData, SignerIdentifier, SignerInfo};
use const_oid::db::rfc5280::ID_CE_SUBJECT_KEY_IDENTIFIER;
use const_oid::db::rfc5911::ID_MESSAGE_DIGEST;
use der::Encode;
use der::asn1::OctetString;
use x509_cert::Certificate;

use crate::chain::extension;
use crate::sig::{self, Hash};

/// The certificates a `SignedData` carries.
pub fn certificates(data: &SignedData) -> Vec<Certificate> {
    data.certificates
        .iter()
        .flat_map(|set| set.0.iter())
        .filter_map(|c| match c {
            CertificateChoices::Certificate(cert) => Some(cert.clone()),
            CertificateChoices::Other(_) => None,
        })
        .collect()
}

/// Checks the one signer's signature over `content` (the encapsulated content, or the detached
/// bytes) and answers the signer's certificate. The reason, a sentence, when it does not verify.
pub fn verify(data: &SignedData, content: &[u8]) -> Result<Certificate, String> {
    let signer = one_signer(data)?;
    let certs = certificates(data);
    let cert = certs
        .iter()
        .find(|c| identifies(&signer.sid, c))
        .cloned()
        .ok_or("the signer's certificate is not in the envelope")?;
    let hash = Hash::from_digest_oid(&signer.digest_alg.oid)
        .ok_or("an unsupported digest algorithm (SHA-256, SHA-384 or SHA-512 expected)")?;
    let digest = hash.digest(content);
    let message = match &signer.signed_attrs {
        Some(attrs) => {
            let signed_digest = attrs
                .iter()
                .find(|a| a.oid == ID_MESSAGE_DIGEST)
                .and_then(|a| a.values.iter().next())
                .and_then(|v| v.decode_as::<OctetString>().ok())
                .ok_or("the signed attributes carry no message digest")?;
            if signed_digest.as_bytes() != digest.as_slice() {
                return Err("the signature covers other content (message digest differs)".into());
            }
            attrs
                .to_der()
                .map_err(|e| format!("unreadable signed attributes: {e}"))?
        }
        None => content.to_vec(),
    };
    let signature = signer.signature.as_bytes();
    sig::verify(
        &cert.tbs_certificate.subject_public_key_info,
        hash,
        &message,
        signature,
    )?;
    Ok(cert)
}

fn one_signer(data: &SignedData) -> Result<&SignerInfo, String> {
    let mut signers = data.signer_infos.0.iter();
    match (signers.next(), signers.next()) {
        (Some(s), None) => Ok(s),
        (None, _) => Err("the envelope has no signer".into()),
        (Some(_), Some(_)) => Err("the envelope has more than one signer".into()),
    }
}

/// Whether `sid` names `cert` (issuer and serial, or subject key identifier).
fn identifies(sid: &SignerIdentifier, cert: &Certificate) -> bool {
    match sid {
        SignerIdentifier::IssuerAndSerialNumber(ias) => {
            ias.issuer == cert.tbs_certificate.issuer
                && ias.serial_number == cert.tbs_certificate.serial_number
        }
        SignerIdentifier::SubjectKeyIdentifier(ski) => {
            extension(cert, ID_CE_SUBJECT_KEY_IDENTIFIER).is_some_and(|v| {
                der::Decode::from_der(v)
                    .is_ok_and(|k: OctetString| k.as_bytes() == ski.0.as_bytes())
            })
        }
    }
}
