//! `receta-verify efirma <DOCUMENT> --p7s <SIGNATURE.P7S> --ca <CA.PEM>`: the prescriber's e.firma
//! signature of a prescription (`GET …/efirma.p7s`) checked offline against its saved document
//! (`GET …/document/`) and the e.firma authority's certificates (SAT's, in production): the CMS
//! signature verifies over exactly the document's bytes, and the signer's certificate was valid at
//! its signing time, chains to the CA and may sign (`pkix::prescriber::check`, the checks the
//! service makes at activation, less the comparison with the registered certificate).

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};

/// What a valid signature says.
pub struct Signed {
    pub name: String,
    pub rfc: String,
    pub serial: String,
    pub signed_at: String,
}

pub fn run(document: &Path, p7s: &Path, ca: &Path) -> Result<Signed> {
    let bytes = std::fs::read(document)
        .with_context(|| format!("reading the document {}", document.display()))?;
    let cms = std::fs::read(p7s).with_context(|| format!("reading {}", p7s.display()))?;
    let ca = std::fs::read_to_string(ca)
        .with_context(|| format!("reading the CA file {}", ca.display()))?;
    let anchors = pkix::pem_bundle(&ca).map_err(anyhow::Error::msg)?;
    if anchors.is_empty() {
        bail!("the CA file holds no certificate");
    }
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH)?;
    // Offline there is no draft: any signing time up to now.
    let signer = pkix::prescriber::check(&cms, &bytes, &anchors, &[], Duration::ZERO, now)
        .map_err(anyhow::Error::msg)?;
    Ok(Signed {
        name: pkix::display_name(&signer.certificate.tbs_certificate.subject),
        rfc: signer.holder.rfc.unwrap_or_else(|| "none".into()),
        serial: signer.holder.serial,
        signed_at: pkix::prescriber::iso(signer.signed_at),
    })
}
