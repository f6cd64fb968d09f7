//! The prescriber's e.firma signature over a prescription's document (docs/verification.md, "The
//! prescriber's e.firma"): a CMS `SignedData` (RFC 5652), detached, over exactly the document's
//! bytes. Shared by the catalog component (at activation, with the medic's registered certificate)
//! and `receta-verify` (offline, with a CA file).

use std::time::Duration;

use cms::content_info::ContentInfo;
use cms::signed_data::SignedData;
use const_oid::db::rfc5911::{ID_SIGNED_DATA, ID_SIGNING_TIME};
use der::{Decode, Encode};
use x509_cert::Certificate;
use x509_cert::time::Time;

use crate::identity::{self, Holder};

/// How far a signing time may lie outside its window: clocks disagree.
pub const SKEW: Duration = Duration::from_secs(300);

/// A signature that checked out: who signed, with which certificate, and when.
#[derive(Debug, Clone)]
pub struct Signer {
    pub holder: Holder,
    pub certificate: Certificate,
    /// The signed `signingTime` attribute, else the time of the check.
    pub signed_at: Duration,
}

/// Checks `cms` (DER `ContentInfo` holding `SignedData`) as a signature over exactly `content`:
/// the one signer's signature verifies (detached, or attached and equal to `content`), its
/// signing time (the `signingTime` attribute; `now` without one) lies between `earliest` and `now`
/// (give or take `SKEW`), its certificate was valid then and chains to one of `anchors` through
/// the certificates the envelope carries and `intermediates` (those registered with it), and its
/// key usage allows signing. The reason, a sentence, when anything fails.
pub fn check(
    cms: &[u8],
    content: &[u8],
    anchors: &[Certificate],
    intermediates: &[Certificate],
    earliest: Duration,
    now: Duration,
) -> Result<Signer, String> {
    let data = signed_data(cms)?;
    if let Some(attached) = &data.encap_content_info.econtent
        && attached.value() != content
    {
        return Err("The signature covers other bytes than the document.".into());
    }
    let certificate = crate::signed::verify(&data, content)
        .map_err(|e| format!("The signature does not verify: {e}."))?;
    let signed_at = signing_time(&data).unwrap_or(now);
    if signed_at + SKEW < earliest || signed_at > now + SKEW {
        return Err(format!(
            "The signing time ({}) lies outside the document's life.",
            iso(signed_at)
        ));
    }
    let mut pool = crate::signed::certificates(&data);
    pool.extend_from_slice(intermediates);
    crate::chain::chains_to(&certificate, &pool, anchors, signed_at)
        .map_err(|e| format!("The signer's certificate is not acceptable: {e}."))?;
    if !identity::signs(&certificate) {
        return Err("The signer's certificate's key usage does not allow signing.".into());
    }
    Ok(Signer {
        holder: identity::holder(&certificate),
        certificate,
        signed_at,
    })
}

/// ISO 8601 UTC of seconds since the Unix epoch (`2026-11-28T02:30:00Z`).
pub fn iso(at: Duration) -> String {
    der::DateTime::from_unix_duration(Duration::from_secs(at.as_secs()))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn signed_data(cms: &[u8]) -> Result<SignedData, String> {
    let info = ContentInfo::from_der(cms)
        .map_err(|e| format!("This is not a DER CMS ContentInfo ({e})."))?;
    if info.content_type != ID_SIGNED_DATA {
        return Err("This CMS is not SignedData.".into());
    }
    let der = info.content.to_der().map_err(|e| e.to_string())?;
    SignedData::from_der(&der).map_err(|e| format!("Unreadable CMS SignedData ({e})."))
}

/// The one signer's signed `signingTime`, if it has one.
fn signing_time(data: &SignedData) -> Option<Duration> {
    let signer = data.signer_infos.0.iter().next()?;
    signer
        .signed_attrs
        .as_ref()?
        .iter()
        .find(|a| a.oid == ID_SIGNING_TIME)?
        .values
        .iter()
        .next()?
        .to_der()
        .ok()
        .and_then(|der| Time::from_der(&der).ok())
        .map(|t| t.to_unix_duration())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::SystemTime;

    use receta_test_tsa::{make_ca, openssl};

    use super::*;

    const DOC: &[u8] = br#"{"format":"receta/prescription","nonce":"00"}"#;

    fn now() -> Duration {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
    }

    /// A CA in `dir` and a holder's certificate with an RFC and a CURP, issued by it.
    fn holder(dir: &Path) {
        make_ca(dir, "AC de pruebas");
        let subject =
            "/CN=DR ANA/x500UniqueIdentifier=HEGT7610034S2/serialNumber=SABC560626MDFLRN01";
        receta_test_tsa::issue_signer(dir, "holder", subject);
    }

    /// `openssl cms -sign` over `content`: detached DER, SHA-256, with `signingTime`.
    fn sign(dir: &Path, content: &[u8]) -> Vec<u8> {
        std::fs::write(dir.join("doc"), content).unwrap();
        openssl(
            dir,
            &[
                "cms",
                "-sign",
                "-binary",
                "-md",
                "sha256",
                "-outform",
                "DER",
                "-in",
                "doc",
                "-signer",
                "holder.pem",
                "-inkey",
                "holder.key",
                "-out",
                "doc.p7s",
            ],
        );
        std::fs::read(dir.join("doc.p7s")).unwrap()
    }

    #[test]
    fn a_detached_openssl_signature_checks_and_anything_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        holder(dir.path());
        let ca = crate::pem_bundle(&std::fs::read_to_string(dir.path().join("ca.pem")).unwrap())
            .unwrap();
        let cms = sign(dir.path(), DOC);
        let hour = Duration::from_secs(3600);

        let signer = check(&cms, DOC, &ca, &[], now() - hour, now()).unwrap();
        assert_eq!(signer.holder.rfc.as_deref(), Some("HEGT7610034S2"));
        assert_eq!(signer.holder.curp.as_deref(), Some("SABC560626MDFLRN01"));
        let late = now().as_secs().abs_diff(signer.signed_at.as_secs());
        assert!(late < 60, "signingTime read: {late} s off");

        let e = check(&cms, b"other bytes", &ca, &[], now() - hour, now()).unwrap_err();
        assert!(e.contains("does not verify"), "{e}");
        let e = check(&cms, DOC, &ca, &[], now() + hour, now() + 2 * hour).unwrap_err();
        assert!(e.contains("signing time"), "{e}");
        let other = tempfile::tempdir().unwrap();
        make_ca(other.path(), "AC ajena");
        let foreign =
            crate::pem_bundle(&std::fs::read_to_string(other.path().join("ca.pem")).unwrap())
                .unwrap();
        let e = check(&cms, DOC, &foreign, &[], now() - hour, now()).unwrap_err();
        assert!(e.contains("not acceptable"), "{e}");
        let e = check(b"garbage", DOC, &ca, &[], now() - hour, now()).unwrap_err();
        assert!(e.contains("not a DER CMS"), "{e}");
    }
}
