//! A prescription signed with its medic's e.firma, in two steps as gematik's E-Rezept
//! (docs/verification.md, "The prescriber's e.firma"): a create with `"efirma": true` stores a
//! draft (`issue` writes `draft`'s row with it); the medic signs its canonical document with the e.firma's
//! key; the gateway has the catalog check that CMS against the medic's registered certificate, and
//! `activate` issues the draft in one transaction: the CMS, the seal, the email, the webhooks and
//! the constancia. How a draft reads is `efirma`.

use common::db::{Db, Param, int, opt_text, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    EfirmaActivation, EfirmaDraft, EfirmaStatus, PrescriberCertificate, Prescription, RxEfirma,
};
use crate::document::{is_signature, signature_of};
use crate::efirma::{EXPIRED, draft_status};
use crate::outbox;
use crate::read::{ALTERED, VISIBLE_BY_SIGNATURE};
use crate::scope::caller_param;
use crate::seal;

/// How long a draft waits for its signature, unless `efirma_draft_hours` says otherwise.
const DRAFT_HOURS: f64 = 24.0;

/// `?1` signature, `?2` the medic: the prescription, its document and where it stands.
const DRAFT: &str = "SELECT p.id, p.created_at, p.hospital_id, p.canonical, \
    p.draft_kid AS kid, p.draft_sig AS sig, p.draft_email AS email, p.draft_rfc, p.draft_serial, \
    p.draft_expires_at, p.efirma_rfc, p.efirma_serial, p.efirma_signed_at \
    FROM prescription_view p WHERE p.signature = ?1 AND p.medic_id = ?2";

/// `?1` prescription, then the CMS, RFC, CURP, serial, signing time and now: written once
/// (migration 0039's triggers refuse changing a signed document).
const STORE_SIGNATURE: &str = "UPDATE prescription_documents SET efirma_cms = ?2, efirma_rfc = ?3, \
    efirma_curp = ?4, efirma_serial = ?5, efirma_signed_at = ?6, efirma_activated_at = ?7 \
    WHERE prescription_id = ?1";

/// Activation's last step: the draft goes; `RETURNING` tells a racing activation it lost.
const DELETE_DRAFT: &str =
    "DELETE FROM prescription_drafts WHERE prescription_id = ?1 RETURNING prescription_id";

fn cms_sql() -> String {
    format!(
        "SELECT ef.efirma_cms AS cms FROM prescriptions p \
         JOIN prescription_documents ef ON ef.prescription_id = p.id \
         WHERE ef.efirma_cms IS NOT NULL AND {VISIBLE_BY_SIGNATURE}"
    )
}

const SIGNED: &str = "This prescription is already signed with its prescriber's e.firma.";
const WITHOUT: &str = "This prescription was issued without the prescriber's e.firma: there is \
    nothing to sign.";
const NO_SIGNATURE: &str = "This prescription carries no e.firma signature.";

/// Hours a draft waits (`efirma_draft_hours`, a positive number, fractions allowed; else 24).
fn draft_hours() -> f64 {
    spin_sdk::variables::get("efirma_draft_hours")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|h| h.is_finite() && *h > 0.0)
        .unwrap_or(DRAFT_HOURS)
}

/// A new draft's row, written with its prescription (`issue`): the certificate it pins and the
/// patient's email to queue at activation (the seal it will carry is the prescription's).
pub(crate) struct NewDraft {
    pub rfc: String,
    pub serial: String,
    pub email: Option<String>,
    /// `created_at` + `efirma_draft_hours`.
    pub expires_at: String,
}

/// The draft row of a prescription created at `created_at` for the certificate `cert`.
pub(crate) fn new_draft(
    cert: &PrescriberCertificate,
    email: Option<&str>,
    created_at: &str,
) -> Result<NewDraft, Error> {
    let seconds = (draft_hours() * 3600.0).round() as i64;
    let expires_at = common::time::shift(created_at, seconds.max(1))
        .ok_or_else(|| anyhow::anyhow!("the draft's expiry: bad time {created_at}"))?;
    Ok(NewDraft {
        rfc: cert.rfc.clone(),
        serial: cert.serial.clone(),
        email: email.map(str::to_string),
        expires_at,
    })
}

/// What `issue` answers of a new draft.
pub(crate) fn awaiting(cert: &PrescriberCertificate, canonical: &str) -> RxEfirma {
    RxEfirma {
        status: EfirmaStatus::AwaitingSignature,
        rfc: cert.rfc.clone(),
        serial: cert.serial.clone(),
        signed_at: None,
        to_sign: Some(canonical.to_string()),
    }
}

/// A draft as activation reads it.
struct Draft {
    id: i64,
    created_at: String,
    hospital: i64,
    canonical: String,
    serial: String,
    /// The seal's key id and signature.
    seal: (String, String),
    email: Option<String>,
}

/// Medic `medic`'s draft `signature`, or why it is none.
fn draft(db: &Db, medic: i64, signature: &str) -> Result<Draft, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    let row = db
        .query_opt(DRAFT, &[text(signature), int(medic)], |r| {
            Ok((
                Draft {
                    id: r.i64("id")?,
                    created_at: r.string("created_at")?,
                    hospital: r.i64("hospital_id")?,
                    canonical: r.string("canonical")?,
                    serial: r.opt_string("draft_serial")?.unwrap_or_default(),
                    seal: (
                        r.opt_string("kid")?.unwrap_or_default(),
                        r.opt_string("sig")?.unwrap_or_default(),
                    ),
                    email: r.opt_string("email")?,
                },
                r.opt_string("draft_expires_at")?,
                r.opt_string("efirma_serial")?.is_some(),
            ))
        })?
        .ok_or_else(Error::not_found)?;
    match row {
        (_, _, true) => Err(Error::Conflict(SIGNED.into())),
        (_, None, false) => Err(Error::Conflict(WITHOUT.into())),
        (_, Some(expires_at), _) if draft_status(&expires_at) == EfirmaStatus::Expired => {
            Err(Error::Conflict(EXPIRED.into()))
        }
        (draft, Some(_), _) if signature_of(&draft.canonical) != signature => {
            Err(Error::Conflict(ALTERED.into()))
        }
        (draft, Some(_), _) => Ok(draft),
    }
}

/// `prescriptions.get-draft`.
pub fn get_draft(medic: i64, signature: &str) -> Result<EfirmaDraft, Error> {
    let d = draft(&Db::open()?, medic, signature)?;
    Ok(EfirmaDraft {
        to_sign: d.canonical,
        created_at: d.created_at,
        hospital: d.hospital,
    })
}

/// `prescriptions.activate`: in one transaction, the signature, the seal, the outbox rows and the
/// constancia's queue row, and the draft deleted; then the prescription as a detail shows it.
pub fn activate(medic: i64, a: EfirmaActivation) -> Result<Prescription, Error> {
    let db = Db::open()?;
    let now = common::time::now_iso8601();
    db.transaction(|db| -> Result<(), Error> {
        let d = draft(db, medic, &a.signature)?;
        // A signature that does not check out for this draft: 400 on `cms`, as every other
        // (docs/verification.md); the draft stays as it was.
        if d.serial != a.serial {
            return Err(Error::field(
                "cms",
                format!(
                    "The draft was made for e.firma certificate {}, and its PDF names it; it was \
                 signed with certificate {}. Sign with the first, or create the prescription \
                 again.",
                    d.serial, a.serial
                ),
            ));
        }
        if db
            .query_opt(DELETE_DRAFT, &[int(d.id)], |r| r.i64("prescription_id"))?
            .is_none()
        {
            return Err(Error::Conflict(SIGNED.into()));
        }
        db.execute_batched(
            STORE_SIGNATURE,
            &[
                int(d.id),
                Param::Blob(a.cms.clone()),
                text(&a.rfc),
                opt_text(a.curp.as_deref()),
                text(&a.serial),
                text(&a.signed_at),
                text(&now),
            ],
        )?;
        seal::store(db, d.id, &d.seal.0, &d.seal.1)?;
        let email = d.email.as_deref();
        outbox::queue_issued(db, d.id, &a.signature, email, &a.webhooks, &now)
    })?;
    crate::detail::for_pharmacy(&a.signature)
}

/// `prescriptions.get-efirma-cms`.
pub fn cms(caller: &common::types::Principal, signature: &str) -> Result<Vec<u8>, Error> {
    if !is_signature(signature) {
        return Err(Error::not_found());
    }
    Db::open()?
        .query_opt(&cms_sql(), &[text(signature), caller_param(caller)], |r| {
            r.blob("cms")
        })?
        .ok_or_else(|| Error::NotFound(NO_SIGNATURE.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_the_medics_own_to_read() {
        assert!(cms_sql().contains("(?2 IS NULL OR p.medic_id = ?2)"));
        assert!(DRAFT.contains("p.medic_id = ?2"));
    }
}
