//! Memberships: `/api/v2/management/memberships/` (create, list, PATCH, DELETE) and
//! `/api/v2/memberships/<hospital_id>/` (one hospital's memberships, for its managers).
//!
//! Managers are the API admin (every hospital) and medics with a live ADMIN membership (their
//! hospitals); anyone else gets 403. A member may also DELETE their own membership.

use serde_json::{Value, json};

use common::types::{Error, Principal};

use crate::bindings::catalog::{self, Membership, MembershipPatch, MembershipType, NewMembership};
use crate::http::{Request, Response, path_id};

const TYPES: [&str; 2] = ["ADMIN", "MEMBER"];

fn parse_type(s: &str) -> MembershipType {
    if s == "ADMIN" {
        MembershipType::Admin
    } else {
        MembershipType::Member
    }
}

fn type_name(kind: MembershipType) -> &'static str {
    match kind {
        MembershipType::Admin => "ADMIN",
        MembershipType::Member => "MEMBER",
    }
}

/// The API shape (openapi/receta.json): `medic` as `{id, email, name}`.
fn to_json(m: Membership) -> Value {
    json!({
        "id": m.id,
        "medic": { "id": m.medic.id, "email": m.medic.email, "name": m.medic.name },
        "hospital": m.hospital,
        "type_membership": type_name(m.type_membership),
        "is_active": m.is_active,
        "is_deleted": m.is_deleted,
        "date_joined": m.date_joined,
    })
}

/// `GET /api/v2/management/memberships/<id>` → 200 one membership in the list's shape: a manager of
/// its hospital, or the medic it belongs to; 404 for an unknown id, 403 for anyone else.
pub fn get(caller: Principal, id: &str) -> Result<Response, Error> {
    let membership = catalog::get_membership(caller, path_id(id)?)?;
    Ok(Response::json(200, &to_json(membership)))
}

/// `POST /api/v2/management/memberships/` `{hospital, type_membership, medic}` → 201
/// `{id, medic, type_membership}` (`medic` the integer id; `id` added so the client can PATCH or
/// DELETE it). An existing membership of that medic on that hospital is reactivated with the type
/// sent, still 201.
pub fn create(req: &Request, caller: Principal) -> Result<Response, Error> {
    catalog::authorize_manager(caller)?;
    let mut fields = req.json_fields()?;
    let hospital = fields.required_i64("hospital");
    let medic = fields.required_i64("medic");
    let kind = fields.required_choice("type_membership", &TYPES);
    let input = fields.finish_then(|| {
        Some(NewMembership {
            hospital: hospital?,
            medic: medic?,
            type_membership: parse_type(&kind?),
        })
    })?;
    let created = catalog::create_membership(caller, input)?;
    Ok(Response::json(
        201,
        &json!({
            "id": created.id,
            "medic": created.medic.id,
            "type_membership": type_name(created.type_membership),
        }),
    ))
}

/// `GET /api/v2/management/memberships/` → 200 paginated Membership list of the managed hospitals.
pub fn list(req: &Request, caller: Principal) -> Result<Response, Error> {
    catalog::authorize_manager(caller)?;
    let page = req.page()?;
    let found = catalog::list_memberships(caller, page)?;
    let results: Vec<Value> = found.results.into_iter().map(to_json).collect();
    Ok(Response::page(req, &page, found.count, &results))
}

/// `GET /api/v2/memberships/<hospital_id>/` → 200 array of Membership; 404 when the hospital does
/// not exist, 403 when the caller does not manage it.
pub fn of_hospital(caller: Principal, hospital: &str) -> Result<Response, Error> {
    let hospital = path_id(hospital)?;
    let found = catalog::hospital_memberships(caller, hospital)?;
    Ok(Response::json(
        200,
        &Value::Array(found.into_iter().map(to_json).collect()),
    ))
}

/// `PATCH /api/v2/management/memberships/<id>/` with any of `type_membership`, `medic`, `hospital`,
/// `is_deleted` → 200 Membership. `is_active` is ignored (only `locations/update` changes it).
pub fn update(req: &Request, caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    catalog::authorize_membership(caller, id)?;
    let mut fields = req.json_fields()?;
    let patch = MembershipPatch {
        type_membership: fields
            .choice("type_membership", &TYPES, false)
            .map(|s| parse_type(&s)),
        medic: fields.patch_i64("medic"),
        hospital: fields.patch_i64("hospital"),
        is_deleted: fields.patch_bool("is_deleted"),
    };
    fields.finish()?;
    let updated = catalog::update_membership(caller, id, patch)?;
    Ok(Response::json(200, &to_json(updated)))
}

/// `DELETE /api/v2/management/memberships/<id>/` → 204, empty: a soft delete (`is_deleted` true,
/// the record stays).
pub fn delete(caller: Principal, id: &str) -> Result<Response, Error> {
    let id = path_id(id)?;
    catalog::delete_membership(caller, id)?;
    Ok(Response::no_content())
}
