//! The prescriber's e.firma rows (issue 61): on the app stage's database, with a test e.firma
//! authority (`receta_test_tsa::make_ca`, laid out as SAT's: the medic's RFC and CURP in the
//! subject) in `efirma_ca`, `receta-bench efirma` creates 1,000 drafts, has `openssl cms -sign`
//! sign each (not timed: the medic's tool), then times the 1,000 activations on 2 connections,
//! and 1,000 plain creates of the same prescription the same way, for the row beside it.

use std::path::Path;

use receta_test_tsa::make_ca;

use super::harness::{ADMIN_TOKEN, helper, value};
use super::report::{Row, ratio, thousands};
use crate::project::Result;

/// Activations timed, and plain creates beside them.
const COUNT: &str = "1000";
const CONNS: u32 = 2;
const RFC: &str = "HEGT7610034S2";
const CURP: &str = "SABC560626MDFLRN01";

/// Measures the rows on `dir`'s seeded app state (the app stage's) and appends them.
pub fn rows(dir: &Path, rows: &mut Vec<Row>, notes: &mut Vec<String>) -> Result {
    let pki = dir.join("efirma-pki");
    std::fs::create_dir_all(&pki).map_err(|e| format!("{}: {e}", pki.display()))?;
    make_ca(&pki, "AC de pruebas Receta bench");
    holder(&pki);
    let ca = std::fs::read_to_string(pki.join("ca.pem")).map_err(|e| e.to_string())?;
    let server = super::constancias::start(dir, &[("SPIN_VARIABLE_EFIRMA_CA", &ca)], "efirma")?;
    let path = |name: &str| pki.join(name).to_string_lossy().into_owned();
    let kv = helper(&[
        "efirma",
        "--url",
        &server.url,
        "--admin-token",
        ADMIN_TOKEN,
        "--cert",
        &path("medic.pem"),
        "--key",
        &path("medic.key"),
        "--rfc",
        RFC,
        "--curp",
        CURP,
        "--count",
        COUNT,
        "--conns",
        &CONNS.to_string(),
    ]);
    server.stop();
    let kv = kv?;
    let (activate, create) = (value(&kv, "activate_rps")?, value(&kv, "create_rps")?);
    rows.push(Row::section(
        "The prescriber's e.firma: a draft's activation (the CMS checked against the registered certificate and its authority, then issued in one transaction) beside a plain create of the same prescription",
    ));
    rows.push(Row {
        name: "POST /api/v2/rx-endpoint/&lt;signature&gt;/efirma/: activation of a draft signed \
               by `openssl cms -sign` (RSA 2048, SHA-256, detached), 1,000 drafts once each"
            .into(),
        conns: Some(CONNS),
        result: format!("{} req/s", thousands(activate)),
        p50_ms: Some(value(&kv, "activate_p50_ms")?),
        ratios: vec![(activate / create, "of the plain create".into())],
        ..Row::default()
    });
    rows.push(Row {
        name: "POST /api/v2/rx-endpoint/ (the same prescription, no e.firma), 1,000 creates timed \
               the same way"
            .into(),
        conns: Some(CONNS),
        result: format!("{} req/s", thousands(create)),
        p50_ms: Some(value(&kv, "create_p50_ms")?),
        ..Row::default()
    });
    notes.push(format!(
        "e.firma rows: timed by `receta-bench efirma` (each request once: a draft activates once), \
         not `wrk`; the activation does a create's work at issue plus the CMS check (an RSA \
         verification, the chain to `efirma_ca`), so it runs at {} of a plain create.",
        ratio(activate / create)
    ));
    Ok(())
}

/// The medic's certificate (`medic.pem`, key `medic.key`), issued by the CA in `dir`: RFC and CURP
/// where SAT puts them, key usage for signing.
fn holder(dir: &Path) {
    let subject = format!("/CN=DR JOSE NUNEZ/x500UniqueIdentifier={RFC}/serialNumber={CURP}");
    receta_test_tsa::issue_signer(dir, "medic", &subject);
}
