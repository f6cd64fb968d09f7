//! `receta-verify constancia <DOCUMENT> --reply <REPLY.TSR> --ca <CA.PEM>`: a saved NOM-151
//! constancia (the RFC 3161 reply of `GET …/constancia/`) checked offline against the saved document
//! and the timestamp authority's CA: the imprint is the document's SHA-256, the authority's
//! signature verifies, its certificate is a timestamping one and chains to the CA at the stamp's
//! time (`pkix::tsp::check_reply`, the same checks the service makes before storing one).

use std::path::Path;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// What a valid constancia says.
pub struct Stamped {
    pub digest: String,
    pub tsa: String,
    pub gen_time: String,
}

pub fn run(document: &Path, reply: &Path, ca: &Path) -> Result<Stamped> {
    let bytes = std::fs::read(document)
        .with_context(|| format!("reading the document {}", document.display()))?;
    let reply =
        std::fs::read(reply).with_context(|| format!("reading the reply {}", reply.display()))?;
    let ca = std::fs::read_to_string(ca)
        .with_context(|| format!("reading the CA file {}", ca.display()))?;
    let anchors = pkix::pem_bundle(&ca).map_err(anyhow::Error::msg)?;
    if anchors.is_empty() {
        bail!("the CA file holds no certificate");
    }
    let digest: [u8; 32] = Sha256::digest(stamped_bytes(&bytes)).into();
    let stamp = pkix::tsp::check_reply(&reply, &digest, None, Some(&anchors))
        .map_err(anyhow::Error::msg)?;
    Ok(Stamped {
        digest: digest.iter().map(|b| format!("{b:02x}")).collect(),
        tsa: stamp.tsa,
        gen_time: stamp.gen_time,
    })
}

/// The bytes the constancia is over: a receipt saved as the API answers it
/// (`{"document": "…", "receipt": …}`) stamps its `document` (the JSON string's text); anything
/// else (a prescription's canonical document, a receipt's document alone) is stamped as it is.
fn stamped_bytes(file: &[u8]) -> Vec<u8> {
    if let Ok(serde_json::Value::Object(body)) = serde_json::from_slice(file)
        && let (Some(serde_json::Value::String(document)), Some(_)) =
            (body.get("document"), body.get("receipt"))
    {
        return document.clone().into_bytes();
    }
    file.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receipt_body_stamps_its_document_and_anything_else_itself() {
        let body = br#"{"document":"{\"a\":\"\u00f1\"}","receipt":{"digest":"x"}}"#;
        assert_eq!(stamped_bytes(body), "{\"a\":\"ñ\"}".as_bytes());
        let document = br#"{"type":"receta.prescription","version":2}"#;
        assert_eq!(stamped_bytes(document), document.to_vec());
        assert_eq!(stamped_bytes(b"not json"), b"not json".to_vec());
    }
}
