//! `/api/v2/medics/` (creation, API admin only; the list, one medic and PATCH within the caller's
//! reach) and `/api/v2/search/medics/`.
//!
//! Creation orchestrates the two components: the gateway validates the body, has `auth` hash the
//! password and mint the token, and `catalog` stores only the hashes.

use serde_json::{Value, json};

use crate::input::ids::{Curp, Rfc};
use common::fields::Fields;
use common::types::{Error, Principal};

use crate::bindings::catalog::{MedicPatch, MedicView};
use crate::bindings::{auth, catalog};
use crate::http::{Request, Response, path_id};
use crate::roles::Admin;

/// Free-text medic fields: at most 255 characters.
const TEXT: Option<usize> = Some(256);
/// Passwords: at most 1023 characters (the hash costs the same for any length; this bounds the body).
const PASSWORD: Option<usize> = Some(1024);

/// `POST /api/v2/medics/` → 201 Medic with its `token` (the only time it is shown).
///
/// Required (docs/api.md lists them without "optional"): `name`, `password`, `email` (a valid address,
/// unique), `date_of_birth` (`YYYY-MM-DD`, not in the future), `cedula_prof`, `specialty_no`,
/// `specialty`, `alma_mater` (non-blank strings), `female`, `specialty_verified` (booleans).
/// Optional: `hospital` (an existing hospital id: the first membership), `is_active` (default true),
/// `is_admin_membership` (default false: the membership is MEMBER). Unknown fields are ignored.
/// The response's `password` is the stored Argon2id hash; `campaign` is always `null`.
pub fn create(req: &Request, _: Admin) -> Result<Response, Error> {
    let mut fields = req.json_fields()?;
    let name = fields.required_str("name", TEXT);
    let password = fields.required_str("password", PASSWORD);
    let email = fields.required_email("email");
    let date_of_birth = fields.required_birth_date("date_of_birth");
    let cedula_prof = fields.required_str("cedula_prof", TEXT);
    // A general practitioner has no specialty licence: blank or left out is accepted.
    let specialty_no = fields
        .optional_str("specialty_no", TEXT)
        .unwrap_or_default();
    let specialty = fields.required_str("specialty", TEXT);
    let alma_mater = fields.required_str("alma_mater", TEXT);
    let female = fields.required_bool("female");
    // Left out: unverified until the API admin sets it (PATCH /api/v2/medics/<id>/).
    let specialty_verified = fields.optional_bool("specialty_verified").unwrap_or(false);
    let hospital = fields.optional_i64("hospital");
    let is_active = fields.optional_bool("is_active").unwrap_or(true);
    let is_admin_membership = fields.optional_bool("is_admin_membership").unwrap_or(false);
    let rfc = identity(&mut fields, "rfc", Rfc::parse).map(|r| r.as_str().to_string());
    let curp = identity(&mut fields, "curp", Curp::parse).map(|c| c.as_str().to_string());
    let read = fields.finish_then(|| {
        Some((
            name?,
            email?,
            password?,
            date_of_birth?,
            cedula_prof?,
            specialty?,
            alma_mater?,
            female?,
        ))
    })?;
    let (name, email, password, date_of_birth, cedula_prof, specialty, alma_mater, female) = read;

    let minted = auth::mint_token();
    let input = catalog::NewMedic {
        name,
        email: email.into(),
        password_hash: auth::hash_password(&password),
        token_hash: minted.token_hash,
        date_of_birth: date_of_birth.to_string(),
        cedula_prof,
        specialty_no,
        specialty,
        alma_mater,
        female,
        specialty_verified,
        is_active,
        hospital,
        is_admin_membership,
        rfc,
        curp,
    };
    let medic = catalog::create_medic(&input)?;
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
        "rfc": medic.rfc,
        "curp": medic.curp,
        "campaign": Value::Null,
    });
    // The body carries a secret: no cache may keep it.
    Ok(Response::json(201, &body).with_header("cache-control", "no-store"))
}

/// `GET /api/v2/medics/?limit&offset` → 200 paginated medics, by id: every medic for the API admin;
/// for a medic with an ADMIN membership, the medics of the hospitals they manage; else 403.
pub fn list(req: &Request, caller: Principal) -> Result<Response, Error> {
    let page = req.page()?;
    let found = catalog::list_medics(caller, page)?;
    let results: Vec<Value> = found.results.into_iter().map(view_json).collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/medics/<id>` → 200 the medic; 404 `{message}` outside the caller's reach.
pub fn get(caller: Principal, id: &str) -> Result<Response, Error> {
    let medic = catalog::view_medic(caller, path_id(id)?)?;
    Ok(Response::json(200, &view_json(medic)))
}

/// `PATCH /api/v2/medics/<id>/` (any field of the create but `hospital` and `is_admin_membership`,
/// which memberships manage) → 202 the medic. The token never changes; `password` is hashed again;
/// `email` stays unique; `is_active` and `specialty_verified` are the API admin's (403 for a medic).
/// 404 outside the caller's reach, checked before the body.
pub fn update(req: &Request, caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    catalog::view_medic(caller, id)?;
    let mut f = req.json_fields()?;
    let name = f.patch_str("name", TEXT, false);
    let email = f.patch_email("email", TEXT);
    let password = f.patch_str("password", PASSWORD, false);
    let date_of_birth = f.patch_birth_date("date_of_birth");
    let cedula_prof = f.patch_str("cedula_prof", TEXT, false);
    let specialty_no = f.patch_str("specialty_no", TEXT, true);
    let specialty = f.patch_str("specialty", TEXT, false);
    let alma_mater = f.patch_str("alma_mater", TEXT, false);
    let female = f.patch_bool("female");
    let is_active = f.patch_bool("is_active");
    let specialty_verified = f.patch_bool("specialty_verified");
    let rfc = patch_identity(&mut f, "rfc", Rfc::parse, |r| r.as_str().to_string());
    let curp = patch_identity(&mut f, "curp", Curp::parse, |c| c.as_str().to_string());
    f.finish()?;
    let patch = MedicPatch {
        name,
        email: email.map(String::from),
        password_hash: password.map(|p| auth::hash_password(&p)),
        date_of_birth: date_of_birth.map(|d| d.to_string()),
        cedula_prof,
        specialty_no,
        specialty,
        alma_mater,
        female,
        is_active,
        specialty_verified,
        rfc,
        curp,
    };
    let medic = catalog::update_medic(caller, id, &patch)?;
    Ok(Response::json(202, &view_json(medic)))
}

/// The medic shape of the list, detail and PATCH: never the token or the password hash.
fn view_json(m: MedicView) -> Value {
    json!({
        "id": m.id,
        "name": m.name,
        "email": m.email,
        "hospital": m.hospital,
        "date_of_birth": m.date_of_birth,
        "cedula_prof": m.cedula_prof,
        "specialty_no": m.specialty_no,
        "specialty": m.specialty,
        "alma_mater": m.alma_mater,
        "female": m.female,
        "is_active": m.is_active,
        "specialty_verified": m.specialty_verified,
        "campaign": Value::Null,
        "is_admin_membership": m.is_admin_membership,
        "rfc": m.rfc,
        "curp": m.curp,
    })
}

/// An optional identity number (`rfc`, `curp`): absent or null is none; a bad one is the field's
/// error (`parse`'s sentence).
fn identity<T>(
    f: &mut Fields,
    field: &str,
    parse: fn(&str) -> Result<T, &'static str>,
) -> Option<T> {
    let text = f.optional_str(field, Some(64))?;
    parse(&text).map_err(|why| f.error(field, why)).ok()
}

/// For a PATCH: absent keeps it, `null` clears it, else it must parse.
fn patch_identity<T>(
    f: &mut Fields,
    field: &str,
    parse: fn(&str) -> Result<T, &'static str>,
    show: fn(&T) -> String,
) -> Option<Option<String>> {
    match f.raw(field) {
        None => None,
        Some(Value::Null) => Some(None),
        Some(_) => identity(f, field, parse).map(|v| Some(show(&v))),
    }
}

/// `PUT /api/v2/medics/<id>/efirma/` `{"certificate": "<PEM, or base64 of the DER .cer>"}` (the
/// medic itself or the API admin) → 200 `{"efirma": {serial, issuer, rfc, curp, not_before,
/// not_after}}`; 400 on `certificate` with the reason (docs/verification.md, "The prescriber's
/// e.firma").
pub fn put_efirma(req: &Request, caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    // The owner rule first, before the body is read (the catalog checks it again on the write).
    catalog::authorize_efirma(caller, id)?;
    let mut f = req.json_fields()?;
    let certificate = f.required_str("certificate", Some(64 * 1024));
    let certificate = f.finish_with(certificate)?;
    let efirma = catalog::set_efirma(caller, id, certificate.as_bytes())?;
    Ok(Response::json(200, &json!({ "efirma": efirma })))
}

/// `GET /api/v2/medics/<id>/efirma/` → 200 `{"efirma": …}`; 404 `{message}` when none is registered.
pub fn get_efirma(caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    let efirma = catalog::get_efirma(caller, id)?;
    Ok(Response::json(200, &json!({ "efirma": efirma })))
}

/// `DELETE /api/v2/medics/<id>/efirma/` → 204: withdrawn; 404 `{message}` when none is registered.
pub fn delete_efirma(caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    catalog::delete_efirma(caller, id)?;
    Ok(Response::no_content())
}

/// `GET /api/v2/search/medics/?query=<email>` → 200 paginated `{id, email}`: medics whose email
/// contains `query` (case-insensitive); none for an empty query. API admin, or a medic with an ADMIN
/// membership (to find medics to invite); else 403.
pub fn search(req: &Request, caller: Principal) -> Result<Response, Error> {
    catalog::authorize_manager(caller)?;
    let page = req.page()?;
    let query = req.query().get("query").unwrap_or_default().to_string();
    if let Some(message) = common::text::refused(&query, false) {
        return Err(Error::field("query", message));
    }
    let found = catalog::search_medics(caller, &query, page)?;
    let results = found
        .results
        .into_iter()
        .map(|m| json!({ "id": m.id, "email": m.email }))
        .collect::<Vec<_>>();
    Ok(Response::page(req, &page, found.count, &results))
}
