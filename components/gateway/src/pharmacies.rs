//! `/api/v2/pharmacies/` (API admin): registering pharmacies, the third kind of caller, and reading
//! each one's call log. The token is minted by `auth` and shown once, in the 201; `pharmacies`
//! stores only its hash.

use serde::Serialize;

use common::types::Error;

use crate::bindings::auth;
use crate::bindings::pharmacies::{self, Call, CallAction, NewPharmacy, Pharmacy, PharmacyPatch};
use crate::http::{Request, Response, path_id};
use crate::roles::Admin;

/// Text fields: at most 255 characters; `address` at most 1023; `zip_code` under 32 (as docs/api-notes.md's).
const TEXT: Option<usize> = Some(256);
const ADDRESS: Option<usize> = Some(1024);
const ZIP: Option<usize> = Some(32);

/// The optional text fields, with their limits, in the API's order.
const OPTIONAL: [(&str, Option<usize>); 6] = [
    ("legal_name", TEXT),
    ("license", TEXT),
    ("address", ADDRESS),
    ("zip_code", ZIP),
    ("state", TEXT),
    ("contact", TEXT),
];

/// `POST /api/v2/pharmacies/` `{name, legal_name?, license?, address?, zip_code?, state?, contact?}`
/// → 201 the pharmacy with its `token` (the only time it is shown; `Cache-Control: no-store`).
pub fn create(req: &Request, _: Admin) -> Result<Response, Error> {
    let mut f = req.json_fields()?;
    let name = f.required_str("name", TEXT);
    let [legal_name, license, address, zip_code, state, contact] =
        OPTIONAL.map(|(field, under)| f.optional_str(field, under).unwrap_or_default());
    let name = f.finish_with(name)?;
    let minted = auth::mint_token();
    let created = pharmacies::create_pharmacy(&NewPharmacy {
        name,
        legal_name,
        license,
        address,
        zip_code,
        state,
        contact,
        token_hash: minted.token_hash,
    })?;
    #[derive(Serialize)]
    struct Created<'a> {
        #[serde(flatten)]
        pharmacy: &'a Pharmacy,
        token: &'a str,
    }
    let body = Created {
        pharmacy: &created,
        token: &minted.token,
    };
    Ok(Response::json(201, &body).with_header("cache-control", "no-store"))
}

/// `GET /api/v2/pharmacies/?limit&offset` → 200 paginated pharmacies, oldest first (no tokens).
pub fn list(req: &Request, _: Admin) -> Result<Response, Error> {
    let page = req.page()?;
    let found = pharmacies::list_pharmacies(page)?;
    Ok(Response::page(req, &page, found.count, &found.results))
}

/// `GET /api/v2/pharmacies/<id>/` → 200 the pharmacy; 404.
pub fn get(id: &str, _: Admin) -> Result<Response, Error> {
    Ok(Response::json(
        200,
        &pharmacies::get_pharmacy(path_id(id)?)?,
    ))
}

/// `GET /api/v2/pharmacies/<id>/register/` (API admin) → 200 that pharmacy's antibiotic register
/// (`register`); 404 for an unknown pharmacy.
pub fn register(req: &Request, id: &str, _: Admin) -> Result<Response, Error> {
    let id = path_id(id)?;
    pharmacies::get_pharmacy(id)?;
    crate::views::register::respond(req, id)
}

/// `PATCH /api/v2/pharmacies/<id>/` (any field; `is_active: false` revokes the token at once) → 200
/// the pharmacy; 404 (checked before the body).
pub fn update(req: &Request, id: &str, _: Admin) -> Result<Response, Error> {
    let id = path_id(id)?;
    pharmacies::get_pharmacy(id)?;
    let mut f = req.json_fields()?;
    let name = f.patch_str("name", TEXT, false);
    let [legal_name, license, address, zip_code, state, contact] =
        OPTIONAL.map(|(field, under)| f.patch_str(field, under, true));
    let is_active = f.patch_bool("is_active");
    f.finish()?;
    let patch = PharmacyPatch {
        name,
        legal_name,
        license,
        address,
        zip_code,
        state,
        contact,
        is_active,
    };
    Ok(Response::json(
        200,
        &pharmacies::update_pharmacy(id, &patch)?,
    ))
}

/// `GET /api/v2/pharmacies/<id>/calls/?limit&offset` → 200 paginated log of the pharmacy's calls,
/// newest first: `{signature, action, status, created_at}`. 404 for an unknown pharmacy.
pub fn calls(req: &Request, id: &str, _: Admin) -> Result<Response, Error> {
    let id = path_id(id)?;
    pharmacies::get_pharmacy(id)?;
    let page = req.page()?;
    let found = pharmacies::list_calls(id, page)?;
    let results: Vec<CallJson> = found.results.iter().map(CallJson::from).collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// One logged call as the API shows it.
#[derive(Serialize)]
struct CallJson<'a> {
    signature: &'a str,
    /// `lookup`, `dispense` or `reject`.
    action: &'static str,
    /// The HTTP status the call was answered with.
    status: u16,
    created_at: &'a str,
}

impl<'a> From<&'a Call> for CallJson<'a> {
    fn from(c: &'a Call) -> Self {
        CallJson {
            signature: &c.signature,
            action: match c.action {
                CallAction::Lookup => "lookup",
                CallAction::Dispense => "dispense",
                CallAction::Reject => "reject",
            },
            status: c.status,
            created_at: &c.created_at,
        }
    }
}
