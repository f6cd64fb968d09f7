//! A prescription's state as a change sees it (its status as shown, its terms), and the 409 that
//! names why a closed one cannot change: shared by `lifecycle` and `claims`.

use common::codes::RxState;
use common::db::{Db, Row, text};
use common::types::Error;

use crate::read;

/// The message of a 404 on the pharmacy calls (the original pharmacy API's wording).
pub const RX_NOT_FOUND: &str = "rx not found";

/// A prescription's state with its terms (before 0012: no expiry, one fill, no interval), from
/// `read::VIEW` (`p`). A draft (`crate::efirma`) has `draft_expires_at`.
pub(crate) const STATE_COLUMNS: &str = "p.id, p.medic_id, p.rx_status, p.valid_until, \
    p.expires_at, p.fills, p.fill_interval_days, p.draft_expires_at";

/// `?1` signature: its prescription's state (`STATE_COLUMNS`).
fn state_sql() -> String {
    format!(
        "SELECT {STATE_COLUMNS} FROM {} WHERE p.signature = ?1",
        read::VIEW
    )
}

/// A prescription's state as a change sees it.
pub struct State {
    pub id: i64,
    pub medic_id: i64,
    /// As shown: `expired` once the validity is over with units left.
    pub rx_status: RxState,
    pub valid_until: Option<String>,
    pub fills: i64,
    pub fill_interval_days: i64,
}

/// The 409 for a prescription rejected, cancelled or expired.
pub fn closed(status: RxState, state: &State, verb: &str) -> Error {
    if status == RxState::Expired {
        return Error::Conflict(format!(
            "This prescription expired: it was valid until {} (the end of that day, Mexico City \
             time); it cannot be {verb}.",
            state.valid_until.as_deref().unwrap_or_default()
        ));
    }
    let why = match status {
        RxState::Rejected => "was rejected by a pharmacy",
        RxState::Cancelled => "was cancelled by its medic",
        _ => "is not available",
    };
    Error::Conflict(format!("This prescription {why}; it cannot be {verb}."))
}

/// A prescription's state, for a change; `not-found` for an unknown signature, and `conflict` for
/// a draft awaiting its medic's e.firma (`crate::efirma`): nothing changes a draft.
pub fn state(db: &Db, signature: &str) -> Result<State, Error> {
    if !crate::document::is_signature(signature) {
        return Err(Error::NotFound(RX_NOT_FOUND.into()));
    }
    changeable(db.query_opt(&state_sql(), &[text(signature)], from_row)?)
}

/// The state of a row read with `STATE_COLUMNS`, and its draft's expiry (`None`: not a draft).
pub fn from_row(r: &Row) -> anyhow::Result<(State, Option<String>)> {
    Ok((
        State {
            id: r.i64("id")?,
            medic_id: r.i64("medic_id")?,
            rx_status: read::shown_state(r)?,
            valid_until: r.opt_string("valid_until")?,
            fills: r.i64("fills")?,
            fill_interval_days: r.i64("fill_interval_days")?,
        },
        r.opt_string("draft_expires_at")?,
    ))
}

/// A state a change may start from (`state`'s refusals): `found` by `from_row`, if any.
pub fn changeable(found: Option<(State, Option<String>)>) -> Result<State, Error> {
    let (state, draft) = found.ok_or_else(|| Error::NotFound(RX_NOT_FOUND.into()))?;
    match crate::efirma::refusal(draft.as_deref()) {
        Some(refused) => Err(refused),
        None => Ok(state),
    }
}
