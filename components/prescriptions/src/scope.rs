//! Whose prescriptions a read answers, written into the read's own statement: a principal's (a
//! medic's, or anyone's for the API admin), or, over HTTP, those of the holder of a medic token the
//! gateway has not looked up on its own (`reader.medic-token`, `medic-key.token`; issue 87), so the
//! token's check travels in the read's own request: one round trip to the database instead of two.
//! The holder is found as auth finds a medic by its token (the medic's half of
//! `CALLER_BY_TOKEN_HASH` in `components/auth`; keep them alike); a token no active medic holds
//! matches nothing, and the read says so (a list by its `HOLDER` step, a read by signature by
//! finding nothing), so the gateway settles it as usual (401, or 403 for a pharmacy's token).

use common::db::{Param, int, text};
use common::types::Principal;

use crate::bindings::exports::receta::prescriptions::prescriptions::Reader;

/// `?1` a token's SHA-256: the active medic who holds it, if any (a list's first step).
pub const HOLDER: &str = "SELECT id FROM medics WHERE token_hash = ?1 AND is_active = 1";

/// `?1` the medic: prescription `p` is theirs (a list's scope).
pub const OWNED: &str = "p.medic_id = ?1";

/// `?1` a token's SHA-256: prescription `p` is its holder's (`HOLDER`).
pub const OWNED_BY_HOLDER: &str =
    "p.medic_id = (SELECT t.id FROM medics t WHERE t.token_hash = ?1 AND t.is_active = 1)";

/// `?2` the medic, or NULL for the API admin: prescription `p` is theirs to read.
const THE_CALLERS: &str = "(?2 IS NULL OR p.medic_id = ?2)";

/// `?2` a token's SHA-256: prescription `p` is its holder's (`OWNED_BY_HOLDER` at `?2`).
const THE_TOKEN_HOLDERS: &str =
    "p.medic_id = (SELECT t.id FROM medics t WHERE t.token_hash = ?2 AND t.is_active = 1)";

/// `caller` as a read's medic parameter: the medic, or NULL (anyone's) for the API admin.
pub fn caller_param(caller: &Principal) -> Param {
    match caller {
        Principal::Admin => Param::Null,
        Principal::Medic(id) => int(*id),
    }
}

/// Whose prescriptions a read by signature answers: the condition on `p` and its `?2`.
pub enum Visible {
    /// The medic's (`Param::Null`: anyone's, the API admin's or a pharmacy's read).
    Caller(Param),
    /// The prescriptions of the active medic whose token has this SHA-256.
    TokenHolder(String),
}

impl Visible {
    pub fn of(reader: &Reader) -> Visible {
        match reader {
            Reader::Caller(caller) => Visible::Caller(caller_param(caller)),
            Reader::MedicToken(hash) => Visible::TokenHolder(hash.clone()),
        }
    }

    /// The condition on prescription `p`, with `?2` [`Visible::param`].
    pub fn condition(&self) -> &'static str {
        match self {
            Visible::Caller(_) => THE_CALLERS,
            Visible::TokenHolder(_) => THE_TOKEN_HOLDERS,
        }
    }

    pub fn param(&self) -> Param {
        match self {
            Visible::Caller(medic) => medic.clone(),
            Visible::TokenHolder(hash) => text(hash),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holder_is_found_alike_everywhere() {
        assert!(HOLDER.contains("WHERE token_hash = ?1 AND is_active = 1"));
        assert!(OWNED_BY_HOLDER.contains("WHERE t.token_hash = ?1 AND t.is_active = 1"));
        assert_eq!(THE_TOKEN_HOLDERS, OWNED_BY_HOLDER.replace("?1", "?2"));
    }
}
