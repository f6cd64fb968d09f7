//! The gateway: the app's only HTTP component. It owns the route table below, authenticates through
//! the auth component, and orchestrates the domain components (imported through WIT, composed at load).

mod bindings;
mod campaigns;
mod drugs;
mod hospitals;
mod http;
mod landing;
mod landing_html;
mod locations;
mod media;
mod medics;
mod memberships;
mod patients;
mod prescriptions;

use spin_sdk::http::{IncomingRequest, Method, ResponseOutparam};

use common::types::Error;
use http::{Request, Response};

#[spin_sdk::http_component]
async fn handle(incoming: IncomingRequest, out: ResponseOutparam) {
    let response = match Request::read(incoming).await {
        Ok(request) => route(&request).unwrap_or_else(Response::error),
        Err(response) => response,
    };
    response.send(out).await;
}

/// Every route of the API. Paths match with or without their trailing slash.
fn route(req: &Request) -> Result<Response, Error> {
    use Method::*;
    match (req.method(), req.segments().as_slice()) {
        (Get, ["api", "v2", "hospital"]) => hospitals::list(req),
        (Post, ["api", "v2", "hospital"]) => hospitals::create(req),
        (Get, ["api", "v2", "hospital", id]) => hospitals::get(req, id),
        (Patch, ["api", "v2", "hospital", id]) => hospitals::update(req, id),
        (Post, ["api", "v2", "medics"]) => medics::create(req),
        (Get, ["api", "v2", "search", "medics"]) => medics::search(req),
        (Get, ["api", "v2", "management", "memberships"]) => memberships::list(req),
        (Post, ["api", "v2", "management", "memberships"]) => memberships::create(req),
        (Patch, ["api", "v2", "management", "memberships", id]) => memberships::update(req, id),
        (Delete, ["api", "v2", "management", "memberships", id]) => memberships::delete(req, id),
        (Get, ["api", "v2", "memberships", hospital]) => memberships::of_hospital(req, hospital),
        (Get, ["api", "v2", "locations"]) => locations::list(req),
        (Patch, ["api", "v2", "locations", "update"]) => locations::update(req),
        (Get, ["api", "v2", "patient"]) => patients::list(req),
        (Post, ["api", "v2", "patient"]) => patients::create(req),
        (Get, ["api", "v2", "patient", key]) => patients::get(req, key),
        (Patch, ["api", "v2", "patient", key]) => patients::update(req, key),
        (Get, ["api", "v2", "rx-endpoint"]) => prescriptions::list(req),
        (Post, ["api", "v2", "rx-endpoint"]) => prescriptions::create(req),
        (Get, ["api", "v2", "rx-endpoint", key]) => prescriptions::detail(req, key),
        (Get, ["api", "v2", "rx", "pdf", signature]) => prescriptions::pdf(req, signature),
        (Get, ["api", "v2", "drugs"]) => drugs::search(req),
        (Post, ["api", "v2", "drugs"]) => drugs::load(req),
        (Get, ["api", "v2", "rx", "patient-landing", signature]) => landing::json(req, signature),
        (Get, ["api", "v2", "campaigns"]) => campaigns::list(req),
        (Post, ["api", "v2", "campaigns"]) => campaigns::create(req),
        (Get, ["api", "v2", "campaigns", id]) => campaigns::get(req, id),
        (Patch, ["api", "v2", "campaigns", id]) => campaigns::update(req, id),
        (Delete, ["api", "v2", "campaigns", id]) => campaigns::delete(req, id),
        (Get, ["media", "hospitals", id, file]) => media::hospital_image(id, file),
        // The patient's page (`cta_link`) and its PDF: no token, the signature is the capability.
        (Get, ["rx", signature]) => landing::page(signature),
        (Get, ["rx", signature, "pdf"]) => landing::pdf(signature),
        (Get, ["rx", ..]) => Ok(landing::not_found()),
        _ => Err(Error::not_found()),
    }
}
