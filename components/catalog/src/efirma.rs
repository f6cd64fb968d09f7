//! The medic's e.firma certificate (the `efirma_…` columns of `medics`, migrations 0021 and 0040;
//! docs/verification.md, "The prescriber's e.firma"): registered by the medic itself or the API
//! admin, checked once at upload against the authorities of the Spin variable `efirma_ca`,
//! replaced by a new upload, withdrawn by a DELETE. A draft's signature is checked here against it (`check_signature`).

use std::time::{SystemTime, UNIX_EPOCH};

use common::db::{Db, blob, int, opt_text, text};
use common::types::{Error, Principal};

use crate::bindings::exports::receta::catalog::catalog::{Efirma, EfirmaSignature};

const FIELD: &str = "certificate";
/// The field a signature's refusals are on.
const CMS: &str = "cms";

/// `?1` medic: its RFC and CURP, if it has any.
const IDENTITY: &str = "SELECT id, rfc, curp FROM medics WHERE id = ?1";

/// `?1` medic, then the certificate (DER), serial, issuer, RFC, CURP, validity, now and `?10` the
/// intermediate authorities the upload carried (PEM), or NULL: replaces what was registered.
const SET: &str = "UPDATE medics SET efirma_certificate = ?2, efirma_serial = ?3, \
    efirma_issuer = ?4, efirma_rfc = ?5, efirma_curp = ?6, efirma_not_before = ?7, \
    efirma_not_after = ?8, efirma_registered_at = ?9, efirma_intermediates = ?10 WHERE id = ?1";

const GET: &str = "SELECT efirma_serial AS serial, efirma_issuer AS issuer, efirma_rfc AS rfc, \
    efirma_curp AS curp, efirma_not_before AS not_before, efirma_not_after AS not_after \
    FROM medics WHERE id = ?1 AND efirma_certificate IS NOT NULL";

const CERTIFICATE: &str = "SELECT efirma_certificate AS certificate, efirma_serial AS serial, \
    efirma_intermediates AS intermediates FROM medics \
    WHERE id = ?1 AND efirma_certificate IS NOT NULL";

const DELETE: &str = "UPDATE medics SET efirma_certificate = NULL, efirma_serial = NULL, \
    efirma_issuer = NULL, efirma_rfc = NULL, efirma_curp = NULL, efirma_not_before = NULL, \
    efirma_not_after = NULL, efirma_registered_at = NULL, efirma_intermediates = NULL \
    WHERE id = ?1 AND efirma_certificate IS NOT NULL RETURNING id AS medic_id";

const DISABLED: &str = "e.firma is disabled on this service: no certification authority is \
    configured (efirma_ca).";
const NO_EFIRMA: &str = "This medic has no e.firma registered.";

/// The owner rule: only the medic itself or the API admin manages a medic's e.firma.
pub fn authorize(caller: Principal, medic: i64) -> Result<(), Error> {
    match caller {
        Principal::Admin => Ok(()),
        Principal::Medic(me) if me == medic => Ok(()),
        Principal::Medic(_) => Err(Error::forbidden(
            "Only the medic itself or the API admin may manage its e.firma.",
        )),
    }
}

/// Checks `certificate` (PEM, or base64 of the DER `.cer`, as the gateway received it) and
/// registers it as the medic's; `invalid` on `certificate` with the reason. A PEM may carry, after
/// the medic's certificate, the intermediate authorities between it and `efirma_ca`: they are used
/// only to reach `efirma_ca` (here and when a signature is checked), never as the medic's.
pub fn set(medic: i64, certificate: &[u8]) -> Result<Efirma, Error> {
    let anchors = anchors(FIELD)?;
    let mut certs = pkix::identity::certificates(certificate)
        .map_err(refused)?
        .into_iter();
    let cert = certs
        .next()
        .ok_or_else(|| refused("The upload holds no certificate."))?;
    let intermediates: Vec<pkix::Certificate> = certs.collect();
    let holder = pkix::identity::holder(&cert);
    let now = now();
    pkix::chain::valid_at(&cert, now).map_err(|_| {
        refused(format!(
            "The certificate is not valid now (valid from {} to {}).",
            holder.not_before, holder.not_after
        ))
    })?;
    pkix::chain::chains_to(&cert, &intermediates, &anchors, now).map_err(|_| {
        refused(
            "The certificate does not chain to the authorities this service trusts (efirma_ca).",
        )
    })?;
    if !pkix::identity::signs(&cert) {
        return Err(refused(
            "The certificate's key usage allows neither digitalSignature nor nonRepudiation: it \
             cannot sign.",
        ));
    }
    let db = Db::open()?;
    let (rfc, curp) = db
        .query_opt(IDENTITY, &[int(medic)], |r| {
            Ok((r.opt_string("rfc")?, r.opt_string("curp")?))
        })?
        .ok_or_else(Error::not_found)?;
    match (&rfc, &holder.rfc) {
        (None, _) => {
            return Err(refused(
                "The medic has no RFC on record: set `rfc` on the medic first (PATCH \
                 /api/v2/medics/<id>/), so the certificate can be matched to it.",
            ));
        }
        (Some(mine), Some(theirs)) if mine == theirs => {}
        (Some(_), _) => {
            return Err(refused(
                "The certificate's RFC (x500UniqueIdentifier) is not the medic's.",
            ));
        }
    }
    if let (Some(mine), Some(theirs)) = (&curp, &holder.curp)
        && mine != theirs
    {
        return Err(refused(
            "The certificate's CURP (serialNumber) is not the medic's.",
        ));
    }
    let der = der::Encode::to_der(&cert).map_err(|e| Error::Internal(e.to_string()))?;
    let chain = pem(&intermediates)?;
    db.execute(
        SET,
        &[
            int(medic),
            blob(&der),
            text(&holder.serial),
            text(&holder.issuer),
            opt_text(holder.rfc.as_deref()),
            opt_text(holder.curp.as_deref()),
            text(&holder.not_before),
            text(&holder.not_after),
            text(&common::time::now_iso8601()),
            opt_text(chain.as_deref()),
        ],
    )?;
    Ok(efirma(holder))
}

/// The intermediates as one PEM bundle; `None` when there are none.
fn pem(certs: &[pkix::Certificate]) -> Result<Option<String>, Error> {
    if certs.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    for cert in certs {
        let block = der::EncodePem::to_pem(cert, der::pem::LineEnding::LF)
            .map_err(|e| Error::Internal(e.to_string()))?;
        out.push_str(&block);
    }
    Ok(Some(out))
}

/// The medic's registered certificate; `not-found` when it has none.
pub fn get(medic: i64) -> Result<Efirma, Error> {
    let db = Db::open()?;
    db.query_opt(GET, &[int(medic)], |r| {
        Ok(Efirma {
            serial: r.string("serial")?,
            issuer: r.string("issuer")?,
            rfc: r.opt_string("rfc")?,
            curp: r.opt_string("curp")?,
            not_before: r.string("not_before")?,
            not_after: r.string("not_after")?,
        })
    })?
    .ok_or_else(|| Error::NotFound(NO_EFIRMA.into()))
}

/// Withdraws it; `not-found` when there is none.
pub fn delete(medic: i64) -> Result<(), Error> {
    Db::open()?
        .query_opt(DELETE, &[int(medic)], |r| r.i64("medic_id"))?
        .map(|_| ())
        .ok_or_else(|| Error::NotFound(NO_EFIRMA.into()))
}

/// Checks `cms` as medic `medic`'s e.firma signature over exactly `content`, signed no earlier
/// than `earliest` (`catalog.check-efirma-signature`); `invalid` on `cms` with the reason.
pub fn check_signature(
    medic: i64,
    cms: &[u8],
    content: &[u8],
    earliest: &str,
) -> Result<EfirmaSignature, Error> {
    let anchors = anchors(CMS)?;
    let (registered, serial, intermediates) = Db::open()?
        .query_opt(CERTIFICATE, &[int(medic)], |r| {
            Ok((
                r.blob("certificate")?,
                r.string("serial")?,
                r.opt_string("intermediates")?,
            ))
        })?
        .ok_or_else(|| {
            Error::field(
                CMS,
                format!("{NO_EFIRMA} Register it first (PUT /api/v2/medics/{medic}/efirma/)."),
            )
        })?;
    let earliest = common::time::parse_iso8601(earliest)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .ok_or_else(|| anyhow::anyhow!("the draft's creation time {earliest:?}"))?;
    let intermediates = pkix::pem_bundle(intermediates.as_deref().unwrap_or_default())
        .map_err(|e| anyhow::anyhow!("medic {medic}'s stored intermediates: {e}"))?;
    let signer = pkix::prescriber::check(cms, content, &anchors, &intermediates, earliest, now())
        .map_err(|e| Error::field(CMS, e))?;
    let der =
        der::Encode::to_der(&signer.certificate).map_err(|e| Error::Internal(e.to_string()))?;
    if der != registered {
        return Err(Error::field(
            CMS,
            format!(
                "The signer's certificate ({}, RFC {}) is not the medic's registered e.firma \
                 (certificate {serial}).",
                signer.holder.serial,
                signer.holder.rfc.as_deref().unwrap_or("none")
            ),
        ));
    }
    Ok(EfirmaSignature {
        rfc: signer.holder.rfc.unwrap_or_default(),
        curp: signer.holder.curp,
        serial: signer.holder.serial,
        signed_at: pkix::prescriber::iso(signer.signed_at),
    })
}

fn now() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The authorities of `efirma_ca`; `invalid` on `field` saying e.firma is disabled when there are
/// none.
fn anchors(field: &str) -> Result<Vec<pkix::Certificate>, Error> {
    let pem = spin_sdk::variables::get("efirma_ca").unwrap_or_default();
    match pkix::pem_bundle(&pem) {
        Ok(anchors) if !anchors.is_empty() => Ok(anchors),
        Ok(_) => Err(Error::field(field, DISABLED)),
        Err(e) => {
            eprintln!("catalog: efirma_ca: {e}");
            Err(Error::field(field, DISABLED))
        }
    }
}

fn refused(reason: impl Into<String>) -> Error {
    Error::field(FIELD, reason.into())
}

fn efirma(h: pkix::identity::Holder) -> Efirma {
    Efirma {
        serial: h.serial,
        issuer: h.issuer,
        rfc: h.rfc,
        curp: h.curp,
        not_before: h.not_before,
        not_after: h.not_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_medic_itself_or_the_admin_manages_its_efirma() {
        assert!(authorize(Principal::Admin, 7).is_ok());
        assert!(authorize(Principal::Medic(7), 7).is_ok());
        assert!(matches!(
            authorize(Principal::Medic(8), 7),
            Err(Error::Forbidden(_))
        ));
    }
}
