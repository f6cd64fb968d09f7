//! `/api/v2/locations/` (medic token): where the medic can prescribe from, and the active one.

use serde_json::{Value, json};

use common::types::Error;

use crate::bindings::catalog;
use crate::http::{Request, Response};
use crate::roles::MedicId;

/// `GET /api/v2/locations/` → 200 array of `{hospital: {name, id, location}, default, clinics}`.
/// `clinics` is always `[]`: there is no clinic model yet.
pub fn list(medic: MedicId) -> Result<Response, Error> {
    let entries = catalog::list_locations(medic.get())?;
    let body: Vec<Value> = entries
        .into_iter()
        .map(|e| {
            let clinics: Vec<Value> = e
                .clinics
                .into_iter()
                .map(|c| json!({ "id": c.id, "name": c.name, "location": c.location }))
                .collect();
            json!({
                "hospital": { "name": e.hospital.name, "id": e.hospital.id, "location": e.hospital.location },
                "default": e.is_default,
                "clinics": clinics,
            })
        })
        .collect();
    Ok(Response::json(200, &body))
}

/// `PATCH /api/v2/locations/update/` `{hospital_id}` → 200 `{message}`: that hospital becomes the
/// medic's active one. 404 `{message}` when the hospital is absent (or inactive) or the medic has no
/// live membership there.
pub fn update(req: &Request, medic: MedicId) -> Result<Response, Error> {
    let mut fields = req.json_fields()?;
    let hospital = fields.required_i64("hospital_id");
    let hospital = fields.finish_with(hospital)?;
    catalog::set_active_hospital(medic.get(), hospital)?;
    Ok(Response::message(200, "The active hospital was updated."))
}
