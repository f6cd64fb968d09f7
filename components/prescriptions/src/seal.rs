//! The digital seal (docs/verification.md): at issue the service signs the ASCII bytes
//! `receta:rx:v1:<signature>` with its Ed25519 key. The signature is the SHA-256 of the canonical
//! document, so the seal binds the whole document, and a verifier holding only the signature (the
//! QR code) and the published keys can check it offline.
//!
//! The key: the `signing_key` variable (base64 of the 32-byte seed). While it is empty (local
//! development), a key is generated at first use and kept in `signing_keys` (one row; the log says
//! so). Published keys: the active one, the `signing_keys_retired` variable's, and the development
//! key once a configured key has replaced it (so what it sealed still verifies).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use sha2::{Digest, Sha256};

use common::db::{Db, int, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    KeyStatus, PublishedKey, Seal,
};

/// The seal's algorithm, as JOSE names it.
pub const ALG: &str = "EdDSA";
/// What is signed: this prefix, then the 64-hex signature.
const MESSAGE_PREFIX: &str = "receta:rx:v1:";

const DEV_KEY: &str = "SELECT seed FROM signing_keys WHERE id = 1";

thread_local! {
    /// The development key once read: its row is written once (`INSERT OR IGNORE`, never updated
    /// or deleted), so it is a fact of the database, like the schema, and this instance reads it
    /// once instead of at every create, sale and verify (on a libSQL server a round trip each).
    static DEV_SEED: std::cell::Cell<Option<[u8; 32]>> = const { std::cell::Cell::new(None) };
}
const INSERT_DEV_KEY: &str =
    "INSERT OR IGNORE INTO signing_keys (id, seed, kid, created_at) VALUES (1, ?, ?, ?)";

/// The key new prescriptions are sealed with.
pub struct Signer {
    key: SigningKey,
    pub kid: String,
}

impl Signer {
    fn new(key: SigningKey) -> Signer {
        let kid = kid_of(&key.verifying_key());
        Signer { key, kid }
    }

    /// The seal of `signature`.
    pub fn seal(&self, signature: &str) -> Seal {
        Seal {
            kid: self.kid.clone(),
            alg: ALG.into(),
            sig: self.sign(&message(signature)),
        }
    }

    /// The Ed25519 signature of `message`'s bytes, base64url without padding.
    pub fn sign(&self, message: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(message.as_bytes()).to_bytes())
    }
}

/// The message a seal signs.
pub fn message(signature: &str) -> String {
    format!("{MESSAGE_PREFIX}{signature}")
}

/// `?1` prescription, `?2` kid, `?3` sig.
const SET_SEAL: &str = "UPDATE prescriptions SET seal_kid = ?2, seal_sig = ?3 WHERE id = ?1";

/// Stores prescription `id`'s seal, in the transaction that issues it (a create, or a draft's
/// activation).
pub fn store(db: &Db, id: i64, kid: &str, sig: &str) -> Result<(), Error> {
    db.execute_batched(SET_SEAL, &[int(id), text(kid), text(sig)])?;
    Ok(())
}

/// A key's id: the first 16 hex characters of the SHA-256 of its 32 public bytes.
pub fn kid_of(key: &VerifyingKey) -> String {
    common::hex::encode(&Sha256::digest(key.as_bytes())[..8])
}

/// The configured key, or the development key (generated and stored at first use).
pub fn signer(db: &Db) -> Result<Signer, Error> {
    let configured = spin_sdk::variables::get("signing_key").unwrap_or_default();
    if !configured.trim().is_empty() {
        let seed = key_bytes(&configured)
            .ok_or_else(|| anyhow::anyhow!("the signing_key variable is not base64 of 32 bytes"))?;
        return Ok(Signer::new(SigningKey::from_bytes(&seed)));
    }
    if let Some(key) = dev_key(db)? {
        return Ok(Signer::new(key));
    }
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| anyhow::anyhow!("no randomness for a key: {e}"))?;
    let generated = Signer::new(SigningKey::from_bytes(&seed));
    // Two first requests at once: one row wins, both use it.
    db.execute(
        INSERT_DEV_KEY,
        &[
            text(&STANDARD.encode(seed)),
            text(&generated.kid),
            text(&common::time::now_iso8601()),
        ],
    )?;
    let key = dev_key(db)?.ok_or_else(|| anyhow::anyhow!("the development key was not stored"))?;
    let signer = Signer::new(key);
    if signer.kid == generated.kid {
        eprintln!(
            "receta: no signing_key configured: generated a development signing key (kid {}) and \
             stored it in the database. Set the signing_key variable in production.",
            signer.kid
        );
    }
    Ok(signer)
}

fn dev_key(db: &Db) -> Result<Option<SigningKey>, Error> {
    if let Some(seed) = DEV_SEED.get() {
        return Ok(Some(SigningKey::from_bytes(&seed)));
    }
    let seed = db.query_opt(DEV_KEY, &[], |r| r.string("seed"))?;
    let seed = seed.as_deref().and_then(key_bytes);
    if let Some(seed) = seed {
        DEV_SEED.set(Some(seed));
    }
    Ok(seed.map(|s| SigningKey::from_bytes(&s)))
}

/// The published keys: the active one first, then the retired ones, without duplicates.
pub fn published(db: &Db) -> Result<Vec<PublishedKey>, Error> {
    let active = signer(db)?.key.verifying_key();
    let mut keys = vec![published_key(&active, KeyStatus::Active)];
    let retired = spin_sdk::variables::get("signing_keys_retired").unwrap_or_default();
    let mut old: Vec<VerifyingKey> = retired_keys(&retired);
    if let Some(dev) = dev_key(db)? {
        old.push(dev.verifying_key());
    }
    for key in old {
        let k = published_key(&key, KeyStatus::Retired);
        if !keys.iter().any(|p| p.kid == k.kid) {
            keys.push(k);
        }
    }
    Ok(keys)
}

fn published_key(key: &VerifyingKey, status: KeyStatus) -> PublishedKey {
    PublishedKey {
        kid: kid_of(key),
        x: URL_SAFE_NO_PAD.encode(key.as_bytes()),
        status,
    }
}

/// The public keys of a `signing_keys_retired` value; what is not a key is logged and left out.
fn retired_keys(value: &str) -> Vec<VerifyingKey> {
    value
        .split([',', ' ', '\n', '\t'])
        .filter(|s| !s.trim().is_empty())
        .filter_map(|s| {
            let key = key_bytes(s).and_then(|b| VerifyingKey::from_bytes(&b).ok());
            if key.is_none() {
                eprintln!("receta: signing_keys_retired: {s:?} is not an Ed25519 public key");
            }
            key
        })
        .collect()
}

/// 32 bytes from base64 or base64url, padded or not.
fn key_bytes(s: &str) -> Option<[u8; 32]> {
    let s = s.trim();
    let bytes = [STANDARD, URL_SAFE]
        .iter()
        .find_map(|e| e.decode(s).ok())
        .or_else(|| URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok())
        .or_else(|| {
            base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(s.trim_end_matches('='))
                .ok()
        })?;
    bytes.try_into().ok()
}

/// The published key (see [`published`]) whose id is `kid`, if there is one. Each candidate is
/// derived or decoded only until one matches: a check needs one key, and deriving a public key
/// from its seed is a scalar multiplication (the development key was derived twice per verify
/// when the list was built whole).
pub fn key_for(db: &Db, kid: &str) -> Result<Option<VerifyingKey>, Error> {
    let active = signer(db)?;
    if active.kid == kid {
        return Ok(Some(active.key.verifying_key()));
    }
    let retired = spin_sdk::variables::get("signing_keys_retired").unwrap_or_default();
    if let Some(key) = retired_keys(&retired)
        .into_iter()
        .find(|k| kid_of(k) == kid)
    {
        return Ok(Some(key));
    }
    Ok(dev_key(db)?
        .map(|key| key.verifying_key())
        .filter(|key| kid_of(key) == kid))
}

/// Whether `sig` (base64url) is `key`'s Ed25519 signature of `message`.
pub fn check(key: &VerifyingKey, sig: &str, message: &str) -> bool {
    URL_SAFE_NO_PAD
        .decode(sig)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .is_some_and(|b| {
            key.verify(message.as_bytes(), &Signature::from_bytes(&b))
                .is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: &str = "5b08a4d000d9203e36394202d94be41a41ee7675c1731ff96a59705da36c3dd8";

    fn signer(seed: u8) -> Signer {
        Signer::new(SigningKey::from_bytes(&[seed; 32]))
    }

    fn verifies(s: &Signer, signature: &str, seal: &Seal) -> bool {
        seal.kid == s.kid && check(&s.key.verifying_key(), &seal.sig, &message(signature))
    }

    #[test]
    fn a_seal_verifies_with_its_key_only() {
        let (a, b) = (signer(1), signer(2));
        let seal = a.seal(SIG);
        assert_eq!(seal.alg, "EdDSA");
        assert_eq!(seal.kid.len(), 16);
        assert_eq!(seal.sig.len(), 86, "64 bytes, base64url without padding");
        assert!(verifies(&a, SIG, &seal));
        assert!(!verifies(&b, SIG, &seal), "another key");
        let other = SIG.replace('5', "6");
        assert!(!verifies(&a, &other, &seal), "another document");
        let mut forged = seal.clone();
        forged.sig.replace_range(0..2, "AA");
        assert!(!verifies(&a, SIG, &forged));
        assert!(!check(&a.key.verifying_key(), "not base64", &message(SIG)));
    }

    #[test]
    fn the_message_is_the_documented_one() {
        assert_eq!(message("ab"), "receta:rx:v1:ab");
        // RFC 8032 test 1: the seed of zeros' public key and kid are stable.
        let k = SigningKey::from_bytes(&[0; 32]).verifying_key();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(k.as_bytes()),
            "O2onvM62pC1io6jQKm8Nc2UyFXcd4kOmOsBIoYtZ2ik"
        );
        assert_eq!(kid_of(&k), kid_of(&k));
    }

    #[test]
    fn keys_read_in_every_base64_spelling() {
        let seed = [7u8; 32];
        for spelled in [
            STANDARD.encode(seed),
            URL_SAFE_NO_PAD.encode(seed),
            format!("  {}\n", STANDARD.encode(seed)),
        ] {
            assert_eq!(key_bytes(&spelled), Some(seed), "{spelled:?}");
        }
        assert_eq!(key_bytes("c2hvcnQ="), None, "too short");
        assert_eq!(key_bytes("not base64!"), None);
        let public = SigningKey::from_bytes(&seed).verifying_key();
        let retired = format!(
            "{}, {} junk",
            URL_SAFE_NO_PAD.encode(public.as_bytes()),
            STANDARD.encode(public.as_bytes())
        );
        assert_eq!(retired_keys(&retired), vec![public, public]);
    }
}
