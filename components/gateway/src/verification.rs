//! Verifying a prescription without a token (docs/verification.md):
//!
//! - `GET /.well-known/receta-keys.json`: the service's public keys (JWK), cacheable.
//! - `GET /api/v2/verify/<signature>`: whether the prescription exists and is genuine (its stored
//!   document hashes to the signature and its seal verifies), its state, issue date, medic and
//!   hospital; nothing of the patient. Rate limited per client address.
//! - `GET /api/v2/verify/receipt/<digest>`: whether a dispense receipt exists and verifies, when and
//!   by which pharmacy it was sold; nothing else. Rate limited as the prescription check.

use serde::Serialize;
use serde_json::json;

use common::types::Error;

use crate::bindings::prescriptions::{self, KeyStatus, PublishedKey};
use crate::http::{Request, Response};
use crate::views::rx_json::{constancia, efirma, public_status};

/// How long a client may cache the keys.
const KEYS_MAX_AGE: u32 = 300;

/// `GET /.well-known/receta-keys.json` → 200 `{"keys": [{kid, kty, crv, x, status}]}`, the active key
/// first.
pub fn keys() -> Result<Response, Error> {
    #[derive(Serialize)]
    struct Jwk<'a> {
        kid: &'a str,
        kty: &'static str,
        crv: &'static str,
        x: &'a str,
        status: &'static str,
    }
    let published = prescriptions::published_keys()?;
    let keys: Vec<Jwk> = published
        .iter()
        .map(|k: &PublishedKey| Jwk {
            kid: &k.kid,
            kty: "OKP",
            crv: "Ed25519",
            x: &k.x,
            status: match k.status {
                KeyStatus::Active => "active",
                KeyStatus::Retired => "retired",
            },
        })
        .collect();
    Ok(Response::json(200, &json!({ "keys": keys }))
        .with_header("cache-control", format!("public, max-age={KEYS_MAX_AGE}")))
}

/// `GET /api/v2/verify/<signature>` → 200 `{valid, kid, issued_at, rx_status, medic: {name,
/// cedula_prof}, hospital: {name}, valid_until, constancia}` (`valid` false for an altered prescription); 404 `{"valid":
/// false}` for an unknown one; 429 past 60 calls a minute from one address.
pub fn verify(req: &Request, signature: &str) -> Result<Response, Error> {
    let client = client_ip(req.header("spin-client-addr").unwrap_or_default());
    match prescriptions::verify(signature, &client) {
        Ok(v) => Ok(Response::json(
            200,
            &json!({
                "valid": v.valid,
                "kid": v.kid,
                "issued_at": v.issued_at,
                "rx_status": public_status(v.rx_status, v.efirma.as_ref()),
                "medic": {"name": v.medic_name, "cedula_prof": v.medic_cedula_prof},
                "hospital": {"name": v.hospital_name},
                "valid_until": v.valid_until,
                "constancia": constancia(&v.constancia),
                "efirma": v.efirma.as_ref().map(efirma),
            }),
        )),
        Err(Error::NotFound(_)) => Ok(Response::json(404, &json!({"valid": false}))),
        Err(other) => Err(other),
    }
}

/// `GET /api/v2/verify/receipt/<digest>` → 200 `{valid, kid, sold_at, pharmacy: {name, license},
/// constancia}`
/// (`valid` false for an altered receipt); 404 `{"valid": false}` for an unknown one; 429 as
/// `verify`.
pub fn receipt(req: &Request, digest: &str) -> Result<Response, Error> {
    let client = client_ip(req.header("spin-client-addr").unwrap_or_default());
    match prescriptions::verify_receipt(digest, &client) {
        Ok(r) => Ok(Response::json(
            200,
            &json!({
                "valid": r.valid,
                "kid": r.kid,
                "sold_at": r.sold_at,
                "pharmacy": {"name": r.pharmacy_name, "license": r.pharmacy_license},
                "constancia": constancia(&r.constancia),
            }),
        )),
        Err(Error::NotFound(_)) => Ok(Response::json(404, &json!({"valid": false}))),
        Err(other) => Err(other),
    }
}

/// The IP address of Spin's `spin-client-addr` (`ip:port`, `[v6]:port`).
fn client_ip(addr: &str) -> String {
    let addr = addr.trim();
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default().to_string();
    }
    match addr.rsplit_once(':') {
        Some((ip, port)) if !ip.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            ip.to_string()
        }
        _ => addr.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_is_its_address_without_the_port() {
        assert_eq!(client_ip("127.0.0.1:54321"), "127.0.0.1");
        assert_eq!(client_ip("[::1]:8080"), "::1");
        assert_eq!(client_ip("::1"), "::1");
        assert_eq!(client_ip(""), "");
    }
}
