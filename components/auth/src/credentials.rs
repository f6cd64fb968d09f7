//! Token and password handling, pure functions with their tests.

use argon2::password_hash::{PasswordHasher, SaltString};
use common::hex::encode as hex;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Random bytes in a medic token: 160 bits, printed as 40 hex characters (the length integrators'
/// clients already store for DRF-style tokens).
const TOKEN_BYTES: usize = 20;

/// The secret of an `Authorization: Token <secret>` header. The keyword is matched without regard to
/// case, as DRF does; any other scheme (`Bearer`, `Basic`) is refused.
pub fn token_from_header(header: &str) -> Option<&str> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("token")
        && !token.is_empty()
        && !token.contains(char::is_whitespace))
    .then_some(token)
}

/// Whether `given` is a configured token (`admin_token`, `jobs_token`). Compares SHA-256 digests in constant time, so
/// neither the content nor the length of the secret leaks through timing. An empty configured token
/// matches nothing.
pub fn is_configured_token(given: &str, configured: &str) -> bool {
    if configured.is_empty() {
        return false;
    }
    let (a, b) = (
        Sha256::digest(given.as_bytes()),
        Sha256::digest(configured.as_bytes()),
    );
    bool::from(a.as_slice().ct_eq(b.as_slice()))
}

/// SHA-256 of a token, lowercase hex: what the database stores. A token carries 160 random bits,
/// so a fast hash is enough (no dictionary to attack) and lookups stay a single index probe.
pub fn token_hash(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// A fresh medic token.
pub fn new_token() -> String {
    common::hex::random::<TOKEN_BYTES>()
}

/// Argon2id (OWASP's minimum: 19 MiB, 2 passes, 1 lane) in PHC format, with a random salt.
pub fn hash_password(password: &str) -> String {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).expect("the host provides randomness");
    let salt = SaltString::encode_b64(&salt).expect("16 bytes is a valid salt");
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2 with default parameters")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHash, PasswordVerifier};

    #[test]
    fn only_the_token_scheme_is_accepted() {
        assert_eq!(token_from_header("Token abc"), Some("abc"));
        assert_eq!(token_from_header("token  abc "), Some("abc"));
        assert_eq!(token_from_header("Bearer abc"), None);
        assert_eq!(token_from_header("Token"), None);
        assert_eq!(token_from_header("Token a b"), None);
        assert_eq!(token_from_header("abc"), None);
    }

    #[test]
    fn admin_token_must_match_exactly_and_be_configured() {
        assert!(is_configured_token("s3cret", "s3cret"));
        assert!(!is_configured_token("s3cre", "s3cret"));
        assert!(!is_configured_token("s3cret ", "s3cret"));
        assert!(!is_configured_token("", ""));
    }

    #[test]
    fn tokens_are_random_hex_with_160_bits() {
        let (a, b) = (new_token(), new_token());
        assert_eq!(a.len(), 40);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
        assert_eq!(token_hash(&a).len(), 64);
        assert_ne!(token_hash(&a), a);
    }

    #[test]
    fn password_hash_is_argon2id_and_verifies() {
        let hash = hash_password("correct horse");
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert!(!hash.contains("correct horse"));
        let parsed = PasswordHash::new(&hash).unwrap();
        let argon = argon2::Argon2::default();
        assert!(argon.verify_password(b"correct horse", &parsed).is_ok());
        assert!(argon.verify_password(b"wrong", &parsed).is_err());
        assert_ne!(hash, hash_password("correct horse"), "salted");
    }
}
