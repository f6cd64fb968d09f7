//! The prescriber's e.firma on a prescription as readers see it (table `prescription_drafts` and
//! the `efirma_…` columns of `prescription_documents`, migrations 0022 and 0039, read through
//! `prescription_view`; docs/verification.md, "The prescriber's e.firma"): the `efirma` object,
//! and the 409 that keeps a draft from being used. Drafts and their activation are `signing`.

use common::db::Row;
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    EfirmaStatus, Prescription, RxEfirma,
};

const AWAITING: &str = "This prescription is awaiting the prescriber's e.firma: it is not issued \
    yet, and cannot be looked up, dispensed, printed or changed until its medic signs it.";
pub(crate) const EXPIRED: &str =
    "This draft expired awaiting the prescriber's e.firma: it was never issued.";

/// Where a prescription stands with its medic's e.firma, from a row of `prescription_view` with its
/// `draft_rfc`, `draft_serial`, `draft_expires_at`, `efirma_rfc`, `efirma_serial` and
/// `efirma_signed_at`; `None` for one created without.
pub(crate) fn from_row(r: &Row) -> anyhow::Result<Option<RxEfirma>> {
    if let Some(rfc) = r.opt_string("efirma_rfc")? {
        return Ok(Some(RxEfirma {
            status: EfirmaStatus::Signed,
            rfc,
            serial: r.string("efirma_serial")?,
            signed_at: r.opt_string("efirma_signed_at")?,
            to_sign: None,
        }));
    }
    let Some(expires_at) = r.opt_string("draft_expires_at")? else {
        return Ok(None);
    };
    Ok(Some(RxEfirma {
        status: draft_status(&expires_at),
        rfc: r.string("draft_rfc")?,
        serial: r.string("draft_serial")?,
        signed_at: None,
        to_sign: None,
    }))
}

pub(crate) fn draft_status(expires_at: &str) -> EfirmaStatus {
    if expires_at > common::time::now_iso8601().as_str() {
        EfirmaStatus::AwaitingSignature
    } else {
        EfirmaStatus::Expired
    }
}

/// The 409 for anything but its medic's reads and activation while a prescription is a draft
/// (`expires_at` its draft's); `None` for a prescription that is not a draft.
pub(crate) fn refusal(expires_at: Option<&str>) -> Option<Error> {
    Some(refused(draft_status(expires_at?)))
}

fn refused(status: EfirmaStatus) -> Error {
    Error::Conflict(match status {
        EfirmaStatus::Expired => EXPIRED.into(),
        _ => AWAITING.into(),
    })
}

/// `rx`, unless it is a draft (a pharmacy's lookup, a cancellation's check): the same refusal.
pub(crate) fn issued(rx: Prescription) -> Result<Prescription, Error> {
    match rx.efirma.as_ref().map(|e| e.status) {
        Some(status @ (EfirmaStatus::AwaitingSignature | EfirmaStatus::Expired)) => {
            Err(refused(status))
        }
        _ => Ok(rx),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_expires_at_its_time() {
        assert_eq!(
            draft_status("9999-01-01T00:00:00Z"),
            EfirmaStatus::AwaitingSignature
        );
        assert_eq!(draft_status("2000-01-01T00:00:00Z"), EfirmaStatus::Expired);
        let e = refusal(Some("9999-01-01T00:00:00Z")).unwrap();
        assert!(
            matches!(&e, Error::Conflict(m) if m.contains("awaiting the prescriber's e.firma")),
            "{e:?}"
        );
        assert!(refusal(None).is_none());
        let e = refusal(Some("2000-01-01T00:00:00Z")).unwrap();
        assert!(
            matches!(&e, Error::Conflict(m) if m.contains("expired")),
            "{e:?}"
        );
    }
}
