//! The auth component: wires `receta:auth/auth` to the functions in `credentials`.

mod credentials;

use common::db::{Db, text};
use common::types::Error;
use spin_sdk::sqlite3::Connection;

mod bindings;

use bindings::exports::receta::auth::auth::{Caller, Claim, Guest, MintedToken};

/// `?1` a token's hash: the active medic or pharmacy it is the token of, the medic first (tokens
/// are random, so both never match). One statement for both roles: on a libSQL server every
/// statement is a round trip, and a pharmacy's every call used to pay a medic miss first. The
/// medic's half is checked again inside a medic's detail and list over HTTP, where the token's
/// check travels with the read (`components/prescriptions/src/scope.rs`): keep the two alike.
const CALLER_BY_TOKEN_HASH: &str = "SELECT 'medic' AS role, id FROM medics \
    WHERE token_hash = ?1 AND is_active = 1 \
    UNION ALL SELECT 'pharmacy' AS role, id FROM pharmacies \
    WHERE token_hash = ?1 AND is_active = 1 ORDER BY role LIMIT 1";

struct Auth;

impl Guest for Auth {
    fn authenticate(
        db: Option<&Connection>,
        authorization: Option<String>,
    ) -> Result<Caller, Error> {
        common::db::lent(db, || authenticate(authorization))
    }

    fn identify(authorization: Option<String>) -> Result<Claim, Error> {
        identify(authorization)
    }

    fn mint_token() -> MintedToken {
        let token = credentials::new_token();
        MintedToken {
            token_hash: credentials::token_hash(&token),
            token,
        }
    }

    fn hash_password(password: String) -> String {
        credentials::hash_password(&password)
    }
}

/// See `receta:auth/auth#identify`.
fn identify(authorization: Option<String>) -> Result<Claim, Error> {
    let token = authorization
        .as_deref()
        .and_then(credentials::token_from_header)
        .ok_or(Error::Unauthorized)?;
    // No admin token configured means no admin access, never a default.
    let admin = spin_sdk::variables::get("admin_token").unwrap_or_default();
    if credentials::is_configured_token(token, &admin) {
        return Ok(Claim::Caller(Caller::Admin));
    }
    // The scheduler's token (docs/deploying.md): empty means the jobs door is the admin's alone.
    let jobs = spin_sdk::variables::get("jobs_token").unwrap_or_default();
    if credentials::is_configured_token(token, &jobs) {
        return Ok(Claim::Caller(Caller::Scheduler));
    }
    Ok(Claim::TokenHash(credentials::token_hash(token)))
}

/// See `receta:auth/auth#authenticate`.
fn authenticate(authorization: Option<String>) -> Result<Caller, Error> {
    let hash = match identify(authorization)? {
        Claim::Caller(caller) => return Ok(caller),
        Claim::TokenHash(hash) => hash,
    };
    let db = Db::open()?;
    let found = db.query_opt(CALLER_BY_TOKEN_HASH, &[text(&hash)], |r| {
        Ok((r.string("role")?, r.i64("id")?))
    })?;
    match found {
        Some((role, id)) if role == "medic" => Ok(Caller::Medic(id)),
        Some((_, id)) => Ok(Caller::Pharmacy(id)),
        None => Err(Error::Unauthorized),
    }
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Auth with_types_in bindings);
