//! One signature by a certificate's public key: RSA PKCS#1 v1.5 and ECDSA on P-256 and P-384, over
//! SHA-256, SHA-384 or SHA-512 (what timestamp authorities and the SAT's certificates use).

use const_oid::ObjectIdentifier;
use const_oid::db::rfc5912::{
    ECDSA_WITH_SHA_256, ECDSA_WITH_SHA_384, ECDSA_WITH_SHA_512, ID_EC_PUBLIC_KEY, ID_SHA_256,
    ID_SHA_384, ID_SHA_512, RSA_ENCRYPTION, SECP_256_R_1, SECP_384_R_1,
    SHA_256_WITH_RSA_ENCRYPTION, SHA_384_WITH_RSA_ENCRYPTION, SHA_512_WITH_RSA_ENCRYPTION,
};
use der::Encode;
use sha2::{Digest, Sha256, Sha384, Sha512};
use x509_cert::spki::SubjectPublicKeyInfoOwned;

/// A digest algorithm a signature may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hash {
    Sha256,
    Sha384,
    Sha512,
}

impl Hash {
    /// The digest algorithm of its OID (`id-sha256`…); `None` for anything else.
    pub fn from_digest_oid(oid: &ObjectIdentifier) -> Option<Hash> {
        match *oid {
            ID_SHA_256 => Some(Hash::Sha256),
            ID_SHA_384 => Some(Hash::Sha384),
            ID_SHA_512 => Some(Hash::Sha512),
            _ => None,
        }
    }

    /// The digest of a signature algorithm (`sha256WithRSAEncryption`, `ecdsa-with-SHA256`…);
    /// `None` for plain `rsaEncryption` (CMS then names the digest apart) or anything unknown.
    pub fn from_signature_oid(oid: &ObjectIdentifier) -> Option<Hash> {
        match *oid {
            SHA_256_WITH_RSA_ENCRYPTION | ECDSA_WITH_SHA_256 => Some(Hash::Sha256),
            SHA_384_WITH_RSA_ENCRYPTION | ECDSA_WITH_SHA_384 => Some(Hash::Sha384),
            SHA_512_WITH_RSA_ENCRYPTION | ECDSA_WITH_SHA_512 => Some(Hash::Sha512),
            _ => None,
        }
    }

    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            Hash::Sha256 => Sha256::digest(data).to_vec(),
            Hash::Sha384 => Sha384::digest(data).to_vec(),
            Hash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }
}

/// Whether `signature` is `key`'s over `message` hashed with `hash`.
pub fn verify(
    key: &SubjectPublicKeyInfoOwned,
    hash: Hash,
    message: &[u8],
    signature: &[u8],
) -> Result<(), String> {
    let digest = hash.digest(message);
    let bad = |e: &dyn std::fmt::Display| format!("the signature does not verify: {e}");
    let spki = key
        .to_der()
        .map_err(|e| format!("unreadable public key: {e}"))?;
    match key.algorithm.oid {
        RSA_ENCRYPTION => {
            use rsa::pkcs8::DecodePublicKey;
            let public = rsa::RsaPublicKey::from_public_key_der(&spki)
                .map_err(|e| format!("unreadable RSA key: {e}"))?;
            let scheme = match hash {
                Hash::Sha256 => rsa::Pkcs1v15Sign::new::<Sha256>(),
                Hash::Sha384 => rsa::Pkcs1v15Sign::new::<Sha384>(),
                Hash::Sha512 => rsa::Pkcs1v15Sign::new::<Sha512>(),
            };
            public
                .verify(scheme, &digest, signature)
                .map_err(|e| bad(&e))
        }
        ID_EC_PUBLIC_KEY => {
            use p256::ecdsa::signature::hazmat::PrehashVerifier;
            use p256::pkcs8::DecodePublicKey as _;
            let curve = key
                .algorithm
                .parameters
                .as_ref()
                .and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
            match curve {
                Some(SECP_256_R_1) => {
                    let public = p256::ecdsa::VerifyingKey::from_public_key_der(&spki)
                        .map_err(|e| format!("unreadable P-256 key: {e}"))?;
                    let sig = p256::ecdsa::Signature::from_der(signature).map_err(|e| bad(&e))?;
                    public.verify_prehash(&digest, &sig).map_err(|e| bad(&e))
                }
                Some(SECP_384_R_1) => {
                    let public = p384::ecdsa::VerifyingKey::from_public_key_der(&spki)
                        .map_err(|e| format!("unreadable P-384 key: {e}"))?;
                    let sig = p384::ecdsa::Signature::from_der(signature).map_err(|e| bad(&e))?;
                    public.verify_prehash(&digest, &sig).map_err(|e| bad(&e))
                }
                _ => Err("an elliptic curve other than P-256 or P-384".into()),
            }
        }
        other => Err(format!("an unsupported public key algorithm ({other})")),
    }
}
