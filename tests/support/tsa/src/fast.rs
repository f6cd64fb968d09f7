//! Replies made in-process with the RustCrypto crates, by the same TSA certificate and key as
//! OpenSSL's (`authority.rs`): no process per reply, so the bench's authority costs its machine
//! about nothing (a remote PSC costs it nothing at all). The token is what `pkix` checks: a
//! `SignedData` over the `TSTInfo` with content-type and message-digest attributes and the TSA's
//! certificate; it has no ESS signing-certificate attribute, so `openssl ts -verify` refuses it:
//! the tests verify OpenSSL's own replies.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use cms::builder::{SignedDataBuilder, SignerInfoBuilder};
use cms::cert::{CertificateChoices, IssuerAndSerialNumber};
use cms::signed_data::{EncapsulatedContentInfo, SignerIdentifier};
use der::asn1::{GeneralizedTime, Int};
use der::oid::ObjectIdentifier;
use der::{Any, Decode, DecodePem, Encode, Tag};
use p256::ecdsa::{DerSignature, SigningKey};
use p256::pkcs8::DecodePrivateKey;
use x509_cert::Certificate;
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_tsp::{TimeStampReq, TimeStampResp, TspVersion, TstInfo};

const ID_SHA_256: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.101.3.4.2.1");
const ID_CT_TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");
const POLICY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.3.4.1");

/// The TSA's key and certificate, loaded once.
pub struct Fast {
    key: SigningKey,
    cert: Certificate,
    serial: AtomicU64,
}

impl Fast {
    /// The key (`tsa.key`, PKCS#8 PEM) and certificate (`tsa.pem`) in `dir`.
    pub fn load(dir: &Path) -> Fast {
        let key = std::fs::read_to_string(dir.join("tsa.key")).unwrap();
        let cert = std::fs::read(dir.join("tsa.pem")).unwrap();
        Fast {
            key: SigningKey::from_pkcs8_pem(&key).expect("the TSA's P-256 key"),
            cert: Certificate::from_pem(&cert).expect("the TSA's certificate"),
            serial: AtomicU64::new(1),
        }
    }

    /// A granted `TimeStampResp` (DER) to a `TimeStampReq`; `None` when it is not one.
    pub fn reply(&self, query: &[u8]) -> Option<Vec<u8>> {
        let req = TimeStampReq::from_der(query).ok()?;
        let serial = self.serial.fetch_add(1, Ordering::Relaxed).to_be_bytes();
        let info = TstInfo {
            version: TspVersion::V1,
            policy: POLICY,
            message_imprint: req.message_imprint,
            serial_number: Int::new(&serial[serial.iter().position(|b| *b != 0)?..]).ok()?,
            gen_time: GeneralizedTime::from_system_time(SystemTime::now()).ok()?,
            accuracy: None,
            ordering: false,
            nonce: req.nonce,
            tsa: None,
            extensions: None,
        };
        let content = info.to_der().ok()?;
        let encap = EncapsulatedContentInfo {
            econtent_type: ID_CT_TST_INFO,
            econtent: Some(Any::new(Tag::OctetString, content).ok()?),
        };
        let sha256 = AlgorithmIdentifierOwned {
            oid: ID_SHA_256,
            parameters: None,
        };
        let tbs = &self.cert.tbs_certificate;
        let sid = SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
            issuer: tbs.issuer.clone(),
            serial_number: tbs.serial_number.clone(),
        });
        let signer = SignerInfoBuilder::new(&self.key, sid, sha256.clone(), &encap, None).ok()?;
        let token = SignedDataBuilder::new(&encap)
            .add_digest_algorithm(sha256)
            .ok()?
            .add_certificate(CertificateChoices::Certificate(self.cert.clone()))
            .ok()?
            .add_signer_info::<SigningKey, DerSignature>(signer)
            .ok()?
            .build()
            .ok()?;
        let resp = TimeStampResp {
            status: cmpv2::status::PkiStatusInfo {
                status: cmpv2::status::PkiStatus::Accepted,
                status_string: None,
                fail_info: None,
            },
            time_stamp_token: Some(token),
        };
        resp.to_der().ok()
    }
}
