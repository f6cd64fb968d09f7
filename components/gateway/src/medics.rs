//! `/api/v2/medics/` (creation, API admin only) and `/api/v2/search/medics/`.
//!
//! Creation orchestrates the two components: the gateway validates the body, has `auth` hash the
//! password and mint the token, and `catalog` stores only the hashes.

use serde_json::{Value, json};

use common::types::{Error, Principal};

use crate::bindings::{auth, catalog};
use crate::http::{Request, Response};

/// Free-text medic fields: at most 255 characters.
const TEXT: Option<usize> = Some(256);
/// Passwords: at most 1023 characters (the hash costs the same for any length; this bounds the body).
const PASSWORD: Option<usize> = Some(1024);

/// `POST /api/v2/medics/` → 201 Medic with its `token` (the only time it is shown).
///
/// Required (spec 4.2 lists them without "optional"): `name`, `password`, `email` (a valid address,
/// unique), `date_of_birth` (`YYYY-MM-DD`, not in the future), `cedula_prof`, `specialty_no`,
/// `specialty`, `alma_mater` (non-blank strings), `female`, `specialty_verified` (booleans).
/// Optional: `hospital` (an existing hospital id: the first membership), `is_active` (default true),
/// `is_admin_membership` (default false: the membership is MEMBER). Unknown fields are ignored.
/// The response's `password` is the stored Argon2id hash; `campaign` is always `null`.
pub fn create(req: &Request) -> Result<Response, Error> {
    let caller = req.caller()?;
    if !matches!(caller, Principal::Admin) {
        return Err(Error::forbidden("Only the API admin may create medics."));
    }
    let mut fields = req.json_fields()?;
    let name = fields.required_str("name", TEXT);
    let password = fields.required_str("password", PASSWORD);
    let email = fields.required_email("email");
    let date_of_birth = fields.required_date("date_of_birth");
    if !date_of_birth.is_empty() && date_of_birth.as_str() > common::time::today().as_str() {
        fields.error(
            "date_of_birth",
            "The date of birth cannot be in the future.",
        );
    }
    let cedula_prof = fields.required_str("cedula_prof", TEXT);
    let specialty_no = fields.required_str("specialty_no", TEXT);
    let specialty = fields.required_str("specialty", TEXT);
    let alma_mater = fields.required_str("alma_mater", TEXT);
    let female = fields.required_bool("female");
    let specialty_verified = fields.required_bool("specialty_verified");
    let hospital = fields.optional_i64("hospital");
    let is_active = fields.optional_bool("is_active").unwrap_or(true);
    let is_admin_membership = fields.optional_bool("is_admin_membership").unwrap_or(false);
    fields.finish()?;

    let minted = auth::mint_token();
    let input = catalog::NewMedic {
        name,
        email,
        password_hash: auth::hash_password(&password),
        token_hash: minted.token_hash,
        date_of_birth,
        cedula_prof,
        specialty_no,
        specialty,
        alma_mater,
        female,
        specialty_verified,
        is_active,
        hospital,
        is_admin_membership,
    };
    let medic = catalog::create_medic(caller, &input)?;
    let body = json!({
        "id": medic.id,
        "token": minted.token,
        "name": medic.name,
        "password": medic.password_hash,
        "email": medic.email,
        "date_of_birth": medic.date_of_birth,
        "cedula_prof": medic.cedula_prof,
        "specialty_no": medic.specialty_no,
        "specialty": medic.specialty,
        "alma_mater": medic.alma_mater,
        "female": medic.female,
        "specialty_verified": medic.specialty_verified,
        "hospital": medic.hospital,
        "is_active": medic.is_active,
        "is_admin_membership": medic.is_admin_membership,
        "campaign": Value::Null,
    });
    // The body carries a secret: no cache may keep it.
    Ok(Response::json(201, &body).with_header("cache-control", "no-store"))
}

/// `GET /api/v2/search/medics/?query=<email>` → 200 paginated `{id, email}`: medics whose email
/// contains `query` (case-insensitive); none for an empty query. API admin, or a medic with an ADMIN
/// membership (to find medics to invite); else 403.
pub fn search(req: &Request) -> Result<Response, Error> {
    let caller = req.caller()?;
    catalog::authorize_manager(caller)?;
    let page = req.page()?;
    let query = req.query().get("query").unwrap_or_default().to_string();
    let found = catalog::search_medics(caller, &query, page)?;
    let results = found
        .results
        .into_iter()
        .map(|m| json!({ "id": m.id, "email": m.email }))
        .collect::<Vec<_>>();
    Ok(Response::page(req, &page, found.count, &results))
}
