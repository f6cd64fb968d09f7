//! The seal formats and their check (docs/verification.md); the keys file is
//! `/.well-known/receta-keys.json` as downloaded.
//!
//! - A prescription: the QR code and the email's link are the patient page's URL with the seal in
//!   its fragment, `<base_url>/rx/<signature>#<kid>.<sig>`. The seal is an Ed25519 signature of the
//!   ASCII bytes `receta:rx:v1:<signature>`.
//! - A dispense receipt: an argument naming a file is a receipt as
//!   `GET /api/v2/pharmacy/receipts/<digest>/` answers it, `{"document": "…", "receipt": {digest,
//!   kid, alg, sig}}`. The document's SHA-256 must be the digest, and the seal an Ed25519
//!   signature of `receta:dispense:v1:<digest>`.

use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What a verified seal says.
#[derive(Debug, PartialEq)]
pub struct Verified {
    /// What was sealed: `prescription <signature>` or `dispense receipt <digest> (…)`.
    pub subject: String,
    pub kid: String,
    /// `active` or `retired`.
    pub status: String,
}

/// The seal in `text` (or in the receipt file `text` names) checked against the keys file at `keys`.
pub fn run(text: &str, keys: &Path) -> Result<Verified> {
    let json = std::fs::read_to_string(keys)
        .with_context(|| format!("cannot read the keys file {}", keys.display()))?;
    let file = Path::new(text);
    if file.is_file() {
        let receipt = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the receipt file {}", file.display()))?;
        return check_receipt(&receipt, &json);
    }
    check(text, &json)
}

/// The seal in `text` checked against the keys document `keys_json`.
pub fn check(text: &str, keys_json: &str) -> Result<Verified> {
    let (signature, kid, sig) = parse(text)?;
    let status = verify_with(keys_json, &kid, &sig, &format!("receta:rx:v1:{signature}"))?;
    Ok(Verified {
        subject: format!("prescription {signature}"),
        kid,
        status,
    })
}

/// A receipt (`{"document", "receipt": {digest, kid, sig}}`) checked against `keys_json`: the
/// document's SHA-256 is the digest and the seal signs `receta:dispense:v1:<digest>`.
pub fn check_receipt(receipt_json: &str, keys_json: &str) -> Result<Verified> {
    let receipt: Value = serde_json::from_str(receipt_json).context("the receipt is not JSON")?;
    let document = receipt["document"]
        .as_str()
        .context("the receipt has no \"document\" text")?;
    let field = |name: &str| {
        receipt["receipt"][name]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("the receipt has no \"receipt\".\"{name}\""))
    };
    let (digest, kid, sig) = (field("digest")?, field("kid")?, field("sig")?);
    let actual = hex(&Sha256::digest(document.as_bytes()));
    if actual != digest {
        bail!("the document does not hash to the digest (it hashes to {actual}): altered");
    }
    let status = verify_with(
        keys_json,
        &kid,
        &sig,
        &format!("receta:dispense:v1:{digest}"),
    )?;
    let stated: Value = serde_json::from_str(document).unwrap_or(Value::Null);
    let text = |path: &str| stated.pointer(path).and_then(Value::as_str).unwrap_or("?");
    Ok(Verified {
        subject: format!(
            "dispense receipt {digest} (prescription {}, sold by {} at {})",
            text("/signature"),
            text("/pharmacy/name"),
            text("/sold_at")
        ),
        kid,
        status,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks `sig` (base64url) over `message` with the key `kid` of `keys_json`; its status.
fn verify_with(keys_json: &str, kid: &str, sig: &str, message: &str) -> Result<String> {
    let keys: serde_json::Value =
        serde_json::from_str(keys_json).context("the keys file is not JSON")?;
    let key = keys["keys"]
        .as_array()
        .context("the keys file has no \"keys\" list")?
        .iter()
        .find(|k| k["kid"] == kid)
        .with_context(|| format!("no published key has the id {kid}"))?;
    if key["kty"] != "OKP" || key["crv"] != "Ed25519" {
        bail!("key {kid} is not an Ed25519 key");
    }
    let x = URL_SAFE_NO_PAD
        .decode(key["x"].as_str().unwrap_or_default())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .with_context(|| format!("key {kid} has no 32-byte \"x\""))?;
    let public = VerifyingKey::from_bytes(&x).context("not an Ed25519 public key")?;
    let sig = URL_SAFE_NO_PAD
        .decode(sig)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .context("the seal is not 64 bytes of base64url")?;
    public
        .verify(message.as_bytes(), &Signature::from_bytes(&sig))
        .map_err(|_| anyhow::anyhow!("the seal does not verify: forged or altered"))?;
    Ok(key["status"].as_str().unwrap_or("unknown").to_string())
}

/// `(signature, kid, sig)` from `…/rx/<signature>#<kid>.<sig>` (or `<signature>#<kid>.<sig>`).
fn parse(text: &str) -> Result<(String, String, String)> {
    let text = text.trim();
    let (before, fragment) = text
        .split_once('#')
        .context("no seal: expected <…/rx/<signature>>#<kid>.<sig>")?;
    let signature = before
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if signature.len() != 64
        || !signature
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        bail!("no prescription signature (64 lowercase hex) before the '#'");
    }
    let (kid, sig) = fragment
        .split_once('.')
        .context("the seal must be <kid>.<sig>")?;
    Ok((signature.to_string(), kid.to_string(), sig.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    const SIG: &str = "5b08a4d000d9203e36394202d94be41a41ee7675c1731ff96a59705da36c3dd8";

    fn fixture() -> (String, String) {
        let key = SigningKey::from_bytes(&[9; 32]);
        let x = URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes());
        let keys = format!(
            r#"{{"keys":[{{"kid":"k1","kty":"OKP","crv":"Ed25519","x":"{x}","status":"retired"}}]}}"#
        );
        let sig = URL_SAFE_NO_PAD.encode(
            key.sign(format!("receta:rx:v1:{SIG}").as_bytes())
                .to_bytes(),
        );
        (keys, format!("https://receta.mx/rx/{SIG}#k1.{sig}"))
    }

    #[test]
    fn a_genuine_seal_verifies() {
        let (keys, text) = fixture();
        let v = check(&text, &keys).unwrap();
        assert_eq!(v.subject, format!("prescription {SIG}"));
        assert_eq!((v.kid.as_str(), v.status.as_str()), ("k1", "retired"));
    }

    #[test]
    fn forgeries_fail() {
        let (keys, text) = fixture();
        let other = text.replace("5b08", "5b09");
        assert!(check(&other, &keys).is_err(), "another prescription");
        let (head, sig) = text.rsplit_once('.').unwrap();
        let flipped = format!("{head}.A{}", &sig[1..]);
        assert!(check(&flipped, &keys).is_err(), "another seal");
        assert!(
            check(&text.replace("#k1.", "#k2."), &keys).is_err(),
            "unknown key"
        );
        assert!(
            check(text.split('#').next().unwrap(), &keys).is_err(),
            "no seal"
        );
        assert!(check("nonsense", &keys).is_err());
    }

    #[test]
    fn a_receipt_verifies_and_an_altered_one_does_not() {
        let key = SigningKey::from_bytes(&[9; 32]);
        let (keys, _) = fixture();
        let document = r#"{"pharmacy":{"name":"F"},"signature":"ab","sold_at":"t"}"#;
        let digest = hex(&Sha256::digest(document.as_bytes()));
        let sig = URL_SAFE_NO_PAD.encode(
            key.sign(format!("receta:dispense:v1:{digest}").as_bytes())
                .to_bytes(),
        );
        let receipt = serde_json::json!({
            "document": document,
            "receipt": {"digest": digest, "kid": "k1", "alg": "EdDSA", "sig": sig},
        })
        .to_string();
        let v = check_receipt(&receipt, &keys).unwrap();
        assert!(v.subject.contains("sold by F at t"), "{}", v.subject);
        let altered = receipt.replace(r#"\"F\""#, r#"\"G\""#);
        assert_ne!(altered, receipt);
        let e = check_receipt(&altered, &keys).unwrap_err().to_string();
        assert!(e.contains("altered"), "{e}");
        let reseal = receipt.replace(&sig[..4], "AAAA");
        assert!(check_receipt(&reseal, &keys).is_err(), "another seal");
    }
}
