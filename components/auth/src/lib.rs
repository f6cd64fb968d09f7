//! The auth component: wires `receta:auth/auth` to the functions in `credentials`.

mod credentials;

use common::db::{Db, text};
use common::types::Error;
use spin_sdk::sqlite3::Connection;

mod bindings;

use bindings::exports::receta::auth::auth::{Caller, Guest, MintedToken};

/// A medic whose token hash matches and who is active.
const MEDIC_BY_TOKEN_HASH: &str = "SELECT id FROM medics WHERE token_hash = ? AND is_active = 1";
/// A pharmacy whose token hash matches and who is active (`is_active` false revokes the token).
const PHARMACY_BY_TOKEN_HASH: &str =
    "SELECT id FROM pharmacies WHERE token_hash = ? AND is_active = 1";

struct Auth;

impl Guest for Auth {
    fn authenticate(db: &Connection, authorization: Option<String>) -> Result<Caller, Error> {
        common::db::lent(db, || authenticate(authorization))
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

/// See `receta:auth/auth#authenticate`.
fn authenticate(authorization: Option<String>) -> Result<Caller, Error> {
    let token = authorization
        .as_deref()
        .and_then(credentials::token_from_header)
        .ok_or(Error::Unauthorized)?;
    // No admin token configured means no admin access, never a default.
    let admin = spin_sdk::variables::get("admin_token").unwrap_or_default();
    if credentials::is_configured_token(token, &admin) {
        return Ok(Caller::Admin);
    }
    // The scheduler's token (docs/deploying.md): empty means the jobs door is the admin's alone.
    let jobs = spin_sdk::variables::get("jobs_token").unwrap_or_default();
    if credentials::is_configured_token(token, &jobs) {
        return Ok(Caller::Scheduler);
    }
    let db = Db::open()?;
    let hash = [text(&credentials::token_hash(token))];
    if let Some(id) = db.query_opt(MEDIC_BY_TOKEN_HASH, &hash, |r| r.i64("id"))? {
        return Ok(Caller::Medic(id));
    }
    db.query_opt(PHARMACY_BY_TOKEN_HASH, &hash, |r| r.i64("id"))?
        .map(Caller::Pharmacy)
        .ok_or(Error::Unauthorized)
}

// Exported only when built as a component: a native build (unit tests, clippy) has no component ABI.
#[cfg(target_arch = "wasm32")]
bindings::export!(Auth with_types_in bindings);
