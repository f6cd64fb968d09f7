//! Standard Webhooks (standardwebhooks.com): the secret, the `webhook-id`, and the
//! `webhook-signature` header, `v1,<base64 of HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>`, where
//! the key is the base64-decoded part of the secret after `whsec_`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Every secret starts with this.
pub const SECRET_PREFIX: &str = "whsec_";
/// Random bytes in a new secret (the spec allows 24 to 64).
pub const SECRET_BYTES: usize = 32;

/// A new secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    format!(
        "{SECRET_PREFIX}{}",
        STANDARD.encode(random::<SECRET_BYTES>())
    )
}

/// A new `webhook-id`: `msg_` and 32 lowercase hex characters (128 random bits).
pub fn new_message_id() -> String {
    let hex = common::hex::encode(&random::<16>());
    format!("msg_{hex}")
}

/// The `webhook-signature` value for one attempt. `Err` when the secret is not `whsec_<base64>`.
pub fn sign(secret: &str, id: &str, timestamp: u64, body: &[u8]) -> Result<String, String> {
    let key = secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|b64| STANDARD.decode(b64).ok())
        .ok_or_else(|| "the subscription's secret is not whsec_<base64>".to_string())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| e.to_string())?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The three Standard Webhooks headers of one attempt.
pub fn headers(
    secret: &str,
    id: &str,
    timestamp: u64,
    body: &[u8],
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let signature = sign(secret, id, timestamp, body)?;
    Ok(vec![
        ("webhook-id".into(), id.as_bytes().to_vec()),
        (
            "webhook-timestamp".into(),
            timestamp.to_string().into_bytes(),
        ),
        ("webhook-signature".into(), signature.into_bytes()),
    ])
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the host provides randomness");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification (and of its reference libraries' tests).
    #[test]
    fn signs_like_the_specification() {
        let signature = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn secrets_and_ids_have_their_shapes() {
        let secret = new_secret();
        let key = STANDARD
            .decode(secret.strip_prefix("whsec_").unwrap())
            .unwrap();
        assert_eq!(key.len(), SECRET_BYTES);
        assert_ne!(secret, new_secret());
        let id = new_message_id();
        assert!(id.starts_with("msg_") && id.len() == 36, "{id}");
        assert!(sign("not-a-secret", "msg_x", 1, b"{}").is_err());
        assert!(sign("whsec_!!!", "msg_x", 1, b"{}").is_err());
    }
}
