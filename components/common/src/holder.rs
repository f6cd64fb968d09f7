//! A medic named in a statement by id, or over HTTP by its token before the gateway has looked the
//! token up (`medic-key`, issue 87): the statement then finds the active medic who holds the token
//! itself, so the token's check travels in the same request to the database as the reads that need
//! its answer. The holder is found as auth finds a medic by its token (the medic's half of
//! `CALLER_BY_TOKEN_HASH` in `components/auth`; keep them alike).

use crate::db::{Param, int, text};
use crate::types::MedicKey;

/// `?1` a token's SHA-256: the id of the active medic who holds it, NULL when none does.
pub const HOLDER: &str = "(SELECT holder.id FROM medics holder \
    WHERE holder.token_hash = ?1 AND holder.is_active = 1)";

/// A statement whose `?1` is a medic's id, for `medic`: as it is with the id, or with each `?1`
/// read as [`HOLDER`] with the token's hash. The statement must number its parameters (`?1`…`?9`).
pub fn statement(sql: &str, medic: &MedicKey) -> (String, Param) {
    debug_assert!(!(0..10).any(|d| sql.contains(&format!("?1{d}"))), "{sql}");
    match medic {
        MedicKey::Id(id) => (sql.to_string(), int(*id)),
        MedicKey::Token(hash) => (sql.replace("?1", HOLDER), text(hash)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_reads_as_its_holder_wherever_the_medic_is() {
        let sql = "SELECT 1 FROM patients WHERE medic_id = ?1 AND uid = ?2 OR ?1 IS NULL";
        let (by_id, id) = statement(sql, &MedicKey::Id(7));
        assert_eq!(by_id, sql);
        assert!(matches!(id, Param::Integer(7)));
        let (by_token, hash) = statement(sql, &MedicKey::Token("ab".into()));
        assert_eq!(by_token.matches(HOLDER).count(), 2);
        assert!(by_token.contains("uid = ?2"));
        assert!(matches!(hash, Param::Text(h) if h == "ab"));
    }
}
