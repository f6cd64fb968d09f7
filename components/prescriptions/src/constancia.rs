//! NOM-151 constancias as readers see them (tables `stamp_queue` and `constancias`, migration
//! 0020, worked by the notifications component; docs/verification.md, "Constancias NOM-151"): the
//! `constancia` object of a prescription or a receipt, and the stored `TimeStampResp` itself.

use common::db::{Db, Param, Row, int, text};
use common::types::Error;

use crate::bindings::exports::receta::prescriptions::prescriptions::{
    Constancia, ConstanciaStatus,
};
use crate::document::is_signature;

/// `?1` digest, `?2` the pharmacy that sold or NULL (the admin).
const RECEIPT_REPLY: &str = "SELECT c.reply FROM receipts r \
    LEFT JOIN constancias c ON c.digest = r.digest \
    WHERE r.digest = ?1 AND (?2 IS NULL OR r.pharmacy_id = ?2)";

const NONE_YET: &str = "There is no NOM-151 constancia for this document yet: the service requests \
    it from its timestamp authority after issue and after each sale; try again shortly.";
const DISABLED: &str = "This service issues no NOM-151 constancias: no timestamp authority is \
    configured (timestamp_url).";

/// Whether a timestamp authority is configured (`timestamp_url`).
pub(crate) fn configured() -> bool {
    spin_sdk::variables::get("timestamp_url").is_ok_and(|url| !url.trim().is_empty())
}

/// The constancia of `digest` from a row with the columns `constancia_time` and `constancia_tsa`
/// (`nc.gen_time`, `nc.tsa` of `LEFT JOIN constancias nc ON nc.digest = <the digest>`).
pub(crate) fn from_row(r: &Row, digest: &str) -> anyhow::Result<Constancia> {
    let gen_time = r.opt_string("constancia_time")?;
    let tsa = r.opt_string("constancia_tsa")?;
    let status = match gen_time {
        Some(_) => ConstanciaStatus::Stamped,
        None => unstamped(),
    };
    Ok(Constancia {
        status,
        gen_time,
        tsa,
        digest: digest.to_string(),
    })
}

/// Where a document without a stored constancia stands: pending with an authority configured,
/// else disabled.
fn unstamped() -> ConstanciaStatus {
    if configured() {
        ConstanciaStatus::Pending
    } else {
        ConstanciaStatus::Disabled
    }
}

/// The constancia of a document just queued (the create's answer): pending, or disabled.
pub(crate) fn queued(digest: &str) -> Constancia {
    Constancia {
        status: unstamped(),
        gen_time: None,
        tsa: None,
        digest: digest.to_string(),
    }
}

/// A receipt's stored reply, for the pharmacy that sold it (`Some`) or the API admin (`None`).
pub fn of_receipt(pharmacy: Option<i64>, digest: &str) -> Result<Vec<u8>, Error> {
    if !is_signature(digest) {
        return Err(Error::not_found());
    }
    let db = Db::open()?;
    let params = [text(digest), pharmacy.map_or(Param::Null, int)];
    stored(&db, RECEIPT_REPLY, &params)
}

/// The `reply` column of the one row `sql` finds: `not-found` when there is no row (unknown, or not
/// the caller's), and, saying why, while the row has no constancia.
pub(crate) fn stored(db: &Db, sql: &str, params: &[Param]) -> Result<Vec<u8>, Error> {
    let visible = db.query_opt(sql, params, |r| r.opt_blob("reply"))?;
    match visible {
        None => Err(Error::not_found()),
        Some(Some(reply)) => Ok(reply),
        Some(None) if configured() => Err(Error::NotFound(NONE_YET.into())),
        Some(None) => Err(Error::NotFound(DISABLED.into())),
    }
}
