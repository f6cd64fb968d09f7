//! The prescriber's e.firma on a prescription (docs/verification.md, "The prescriber's e.firma"),
//! in two steps as gematik's E-Rezept (`$create`, then `$activate`):
//!
//! - a create with `"efirma": true` (`prescriptions::create`) stores a draft pinned to the medic's
//!   registered certificate (`input::efirma::certificate`) and answers the bytes to sign
//!   (`views::rx_json::draft_body`);
//! - `POST /api/v2/rx-endpoint/<signature>/efirma/` activates it, orchestrated here:
//!   `prescriptions.get-draft` (the bytes, when the draft was made) →
//!   `catalog.check-efirma-signature` (the CMS against the medic's registered certificate and
//!   `efirma_ca`) → `notifications.plan` → `prescriptions.activate` (one transaction: the CMS, the
//!   seal, the email, the webhooks and the constancia);
//! - `GET /api/v2/rx-endpoint/<signature>/efirma.p7s` answers the stored CMS.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

use common::db::Db;
use common::types::{Error, Principal, RxEvent};

use crate::bindings::catalog;
use crate::bindings::notifications;
use crate::bindings::prescriptions::{self, EfirmaActivation};
use crate::http::{self, Request, Response};
use crate::roles::MedicId;
use crate::views::rx_json::detail_shape;

/// The media type of a detached CMS signature (RFC 8551).
const P7S: &str = "application/pkcs7-signature";
/// `cms`: base64 of at most 48 KiB of DER (a signature with a SAT chain is about 4 KiB).
const CMS_CHARS: Option<usize> = Some(65_536);

/// `POST /api/v2/rx-endpoint/<signature>/efirma/` `{"cms": "<base64 of a DER CMS SignedData,
/// detached, SHA-256, over to_sign>"}` (the issuing medic) → 200 the prescription in the detail
/// shape, `efirma.status` `signed`. 400 on `cms` for a signature that does not check out (nothing
/// changes); 409 when it is not a draft awaiting a signature (already signed, created without,
/// expired); 404 for another medic's or an unknown signature.
pub fn activate(req: &Request, medic: MedicId, signature: &str) -> Result<Response, Error> {
    let medic = medic.get();
    let db = Db::open()?;
    let draft = prescriptions::get_draft(db.lend().as_deref(), medic, signature)?;
    let mut f = req.json_fields()?;
    let cms = f.required_str("cms", CMS_CHARS);
    let cms = f.finish_with(cms)?;
    let compact: String = cms.split_whitespace().collect();
    let der = BASE64
        .decode(compact.as_bytes())
        .map_err(|_| Error::field("cms", "Not base64 of a DER CMS SignedData."))?;
    let signed =
        catalog::check_efirma_signature(medic, &der, draft.to_sign.as_bytes(), &draft.created_at)?;
    let webhooks = notifications::plan(
        db.lend().as_deref(),
        medic,
        draft.hospital,
        RxEvent::Created,
    )?;
    let activation = EfirmaActivation {
        signature: signature.to_string(),
        cms: der,
        rfc: signed.rfc,
        curp: signed.curp,
        serial: signed.serial,
        signed_at: signed.signed_at,
        webhooks,
    };
    let rx = prescriptions::activate(db.lend().as_deref(), medic, &activation)?;
    Ok(Response::json(200, &detail_shape(&rx, &http::base_url())))
}

/// `GET /api/v2/rx-endpoint/<signature>/efirma.p7s` (the issuing medic or the API admin; anyone
/// else 404) → 200 `application/pkcs7-signature`: the medic's CMS exactly as received; 404
/// `{"message"}` when the prescription carries none.
pub fn p7s(caller: Principal, signature: &str) -> Result<Response, Error> {
    let cms = prescriptions::get_efirma_cms(Db::open()?.lend().as_deref(), caller, signature)?;
    Ok(Response::bytes(200, P7S, cms).with_header(
        "content-disposition",
        format!(
            "attachment; filename=\"receta-{}.p7s\"",
            common::folio::of(signature)
        ),
    ))
}
