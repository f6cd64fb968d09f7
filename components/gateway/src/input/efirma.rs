//! A create's `"efirma": true` (docs/verification.md, "The prescriber's e.firma"): the medic's
//! registered certificate, which the draft pins.

use common::fields::Fields;
use common::types::{Error, Principal};

use crate::bindings::catalog;
use crate::bindings::prescriptions::PrescriberCertificate;

/// A create's `"efirma": true`: the medic's registered certificate, which the draft pins; a field
/// error on `efirma` when there is none, or it is no longer valid.
pub fn certificate(f: &mut Fields, medic: i64) -> Result<Option<PrescriberCertificate>, Error> {
    let registered = match catalog::get_efirma(Principal::Medic(medic), medic) {
        Ok(e) => e,
        Err(Error::NotFound(_)) => {
            f.error(
                "efirma",
                format!(
                    "This medic has no e.firma registered: register the certificate first (PUT \
                     /api/v2/medics/{medic}/efirma/)."
                ),
            );
            return Ok(None);
        }
        Err(other) => return Err(other),
    };
    if registered.not_after.as_str() <= common::time::now_iso8601().as_str() {
        f.error(
            "efirma",
            format!(
                "The registered e.firma certificate {} expired on {}: register the current one.",
                registered.serial, registered.not_after
            ),
        );
        return Ok(None);
    }
    Ok(Some(PrescriberCertificate {
        rfc: registered.rfc.unwrap_or_default(),
        serial: registered.serial,
    }))
}
