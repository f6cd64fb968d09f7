//! RFC 3161 timestamps: the `TimeStampReq` the service sends a timestamp authority (TSA) for a
//! document's SHA-256, and the checks of its `TimeStampResp` before it is stored as the document's
//! NOM-151 constancia (docs/verification.md, "Constancias NOM-151").

use std::time::Duration;

use cms::content_info::ContentInfo;
use cms::signed_data::SignedData;
use const_oid::ObjectIdentifier;
use const_oid::db::rfc5280::{ID_CE_EXT_KEY_USAGE, ID_KP_TIME_STAMPING};
use const_oid::db::rfc5911::ID_SIGNED_DATA;
use const_oid::db::rfc5912::ID_SHA_256;
use der::asn1::{Int, OctetString, Uint};
use der::{Decode, Encode};
use x509_cert::Certificate;
use x509_cert::ext::pkix::ExtendedKeyUsage;
use x509_cert::spki::AlgorithmIdentifier;
use x509_tsp::{MessageImprint, TimeStampReq, TimeStampResp, TspVersion, TstInfo};

use crate::chain::{self, extension};

/// `id-ct-TSTInfo` (RFC 3161, section 2.4.2), which the OID database lacks.
const ID_CT_TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");

/// The request's media type (RFC 3161, section 3.4).
pub const QUERY_TYPE: &str = "application/timestamp-query";
/// The reply's media type.
pub const REPLY_TYPE: &str = "application/timestamp-reply";

/// A `TimeStampReq` (DER) for a SHA-256 `digest`, with `nonce` (big-endian bytes) and `certReq`
/// true, so the reply carries the TSA's certificate.
pub fn request(digest: &[u8; 32], nonce: &[u8]) -> Result<Vec<u8>, String> {
    let nonce = Uint::new(nonce).map_err(|e| format!("nonce: {e}"))?;
    let req = TimeStampReq {
        version: TspVersion::V1,
        message_imprint: MessageImprint {
            hash_algorithm: AlgorithmIdentifier {
                oid: ID_SHA_256,
                parameters: None,
            },
            hashed_message: OctetString::new(digest.as_slice()).map_err(|e| e.to_string())?,
        },
        req_policy: None,
        nonce: Some(Int::from(nonce)),
        cert_req: true,
        extensions: None,
    };
    req.to_der()
        .map_err(|e| format!("encoding the request: {e}"))
}

/// What a checked reply says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The TSA's time (`genTime`), ISO 8601 UTC (`2026-11-27T23:05:01Z`).
    pub gen_time: String,
    /// The same, as seconds since the Unix epoch.
    pub at: Duration,
    /// The TSA as its certificate names it (its common name).
    pub tsa: String,
    /// The token's serial number, lowercase hex.
    pub serial: String,
    /// The TSA's policy (dotted OID).
    pub policy: String,
}

/// Checks a `TimeStampResp` for `digest`: status granted, a `SignedData` token over a `TSTInfo`
/// whose imprint is SHA-256 of exactly `digest`, `nonce` echoed (when one was sent), the TSA's
/// signature verifying with the certificate it carries, that certificate's extended key usage
/// `timeStamping`, and, when `anchors` are given, the certificate chaining to one of them at the
/// stamp's time. The reason, a sentence, when any check fails.
pub fn check_reply(
    reply: &[u8],
    digest: &[u8; 32],
    nonce: Option<&[u8]>,
    anchors: Option<&[Certificate]>,
) -> Result<Stamp, String> {
    let resp = TimeStampResp::from_der(reply)
        .map_err(|e| format!("not an RFC 3161 timestamp reply: {e}"))?;
    use cmpv2::status::PkiStatus;
    if !matches!(
        resp.status.status,
        PkiStatus::Accepted | PkiStatus::GrantedWithMods
    ) {
        return Err(format!(
            "the authority did not grant the timestamp ({:?})",
            resp.status.status
        ));
    }
    let token = resp
        .time_stamp_token
        .ok_or("the reply carries no timestamp token")?;
    let (info, cert, pool) = token_parts(&token)?;
    let imprint = &info.message_imprint;
    if imprint.hash_algorithm.oid != ID_SHA_256 || imprint.hashed_message.as_bytes() != digest {
        return Err("the timestamp is over another digest than the document's".into());
    }
    if let Some(sent) = nonce {
        let echoed = info.nonce.as_ref().map(|n| strip_zeros(n.as_bytes()));
        if echoed != Some(strip_zeros(sent)) {
            return Err("the reply does not carry the request's nonce".into());
        }
    }
    let at = info.gen_time.to_unix_duration();
    if let Some(anchors) = anchors {
        chain::chains_to(&cert, &pool, anchors, at)?;
    }
    Ok(Stamp {
        gen_time: info.gen_time.to_date_time().to_string(),
        at,
        tsa: crate::display_name(&cert.tbs_certificate.subject),
        serial: hex(strip_zeros(info.serial_number.as_bytes())),
        policy: info.policy.to_string(),
    })
}

/// The token's `TSTInfo`, after its signature verified with the TSA certificate it carries (whose
/// extended key usage must be `timeStamping`), that certificate, and every certificate it carries.
fn token_parts(token: &ContentInfo) -> Result<(TstInfo, Certificate, Vec<Certificate>), String> {
    if token.content_type != ID_SIGNED_DATA {
        return Err("the timestamp token is not CMS signed data".into());
    }
    let der = token.content.to_der().map_err(|e| e.to_string())?;
    let data =
        SignedData::from_der(&der).map_err(|e| format!("unreadable timestamp token: {e}"))?;
    if data.encap_content_info.econtent_type != ID_CT_TST_INFO {
        return Err("the timestamp token does not hold a TSTInfo".into());
    }
    let content = data
        .encap_content_info
        .econtent
        .as_ref()
        .ok_or("the timestamp token is empty")?;
    let tst = content.value();
    let info = TstInfo::from_der(tst).map_err(|e| format!("unreadable TSTInfo: {e}"))?;
    let cert = crate::signed::verify(&data, tst)
        .map_err(|e| format!("the authority's signature is not valid: {e}"))?;
    let stamping = extension(&cert, ID_CE_EXT_KEY_USAGE)
        .and_then(|v| ExtendedKeyUsage::from_der(v).ok())
        .is_some_and(|eku| eku.0.contains(&ID_KP_TIME_STAMPING));
    if !stamping {
        return Err("the signing certificate is not a timestamping certificate".into());
    }
    Ok((info, cert, crate::signed::certificates(&data)))
}

fn strip_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
    &bytes[start..]
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use receta_test_tsa::{Authority, TSA_NAME};
    use sha2::{Digest, Sha256};

    fn digest(text: &str) -> [u8; 32] {
        Sha256::digest(text.as_bytes()).into()
    }

    fn hex_of(d: &[u8]) -> String {
        hex(d)
    }

    #[test]
    fn a_reply_from_openssl_passes_every_check_and_names_its_authority() {
        let tsa = Authority::new();
        let anchors = crate::pem_bundle(&tsa.ca_pem()).unwrap();
        let d = digest("{\"type\":\"receta.prescription\"}");
        let nonce = [0x81, 7, 0, 3, 9, 9, 2, 1];
        let reply = tsa.reply(&request(&d, &nonce).unwrap());

        let stamp = check_reply(&reply, &d, Some(&nonce), Some(&anchors)).unwrap();
        assert_eq!(stamp.tsa, TSA_NAME);
        assert_eq!(stamp.policy, "1.2.3.4.1");
        assert!(
            stamp.gen_time.ends_with('Z') && stamp.gen_time.len() == 20,
            "{stamp:?}"
        );
        // OpenSSL agrees, on its own.
        receta_test_tsa::verify(&reply, &hex_of(&d), &tsa.ca_path()).unwrap();
    }

    #[test]
    fn another_digest_another_nonce_another_authority_or_garbage_is_refused() {
        let tsa = Authority::new();
        let anchors = crate::pem_bundle(&tsa.ca_pem()).unwrap();
        let d = digest("document");
        let nonce = [1, 2, 3, 4, 5, 6, 7, 8];
        let reply = tsa.reply(&request(&d, &nonce).unwrap());

        let other = digest("documenT");
        let e = check_reply(&reply, &other, Some(&nonce), Some(&anchors)).unwrap_err();
        assert!(e.contains("another digest"), "{e}");
        let e = check_reply(&reply, &d, Some(&[9, 9]), Some(&anchors)).unwrap_err();
        assert!(e.contains("nonce"), "{e}");
        let own = tsa.reply_for_digest(&hex_of(&d));
        let e = check_reply(&own, &d, Some(&nonce), None).unwrap_err();
        assert!(e.contains("nonce"), "{e}");

        let stranger = Authority::new();
        let theirs = crate::pem_bundle(&stranger.ca_pem()).unwrap();
        let e = check_reply(&reply, &d, Some(&nonce), Some(&theirs)).unwrap_err();
        assert!(e.contains("does not chain"), "{e}");
        // Without configured authorities the signature is still checked, the chain is not.
        check_reply(&reply, &d, Some(&nonce), None).unwrap();

        let e = check_reply(b"not DER", &d, None, None).unwrap_err();
        assert!(e.contains("not an RFC 3161"), "{e}");
    }

    #[test]
    fn a_changed_byte_in_the_signed_token_breaks_the_signature() {
        let tsa = Authority::new();
        let d = digest("document");
        let reply = tsa.reply(&request(&d, &[5; 8]).unwrap());
        // The genTime's last digit of seconds sits inside the signed TSTInfo.
        let at = reply
            .windows(2)
            .rposition(|w| w[1] == b'Z' && w[0].is_ascii_digit())
            .expect("a GeneralizedTime");
        let mut bent = reply.clone();
        bent[at] = if bent[at] == b'1' { b'2' } else { b'1' };
        let e = check_reply(&bent, &d, None, None).unwrap_err();
        assert!(e.contains("signature"), "{e}");
    }

    #[test]
    fn the_test_authoritys_in_process_replies_pass_the_same_checks() {
        let tsa = Authority::new();
        let anchors = crate::pem_bundle(&tsa.ca_pem()).unwrap();
        let d = digest("bench");
        let nonce = [3; 16];
        let reply = tsa.fast().reply(&request(&d, &nonce).unwrap()).unwrap();
        let stamp = check_reply(&reply, &d, Some(&nonce), Some(&anchors)).unwrap();
        assert_eq!(stamp.tsa, TSA_NAME);
        assert!(check_reply(&reply, &digest("other"), Some(&nonce), None).is_err());
    }

    #[test]
    fn the_request_is_der_openssl_reads() {
        let d = digest("x");
        let q = request(&d, &[0, 0, 1, 2]).unwrap();
        let back = TimeStampReq::from_der(&q).unwrap();
        assert!(back.cert_req);
        assert_eq!(back.message_imprint.hashed_message.as_bytes(), d.as_slice());
        assert_eq!(back.nonce.unwrap().as_bytes(), [1, 2]);
    }
}
