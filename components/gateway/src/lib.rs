//! The gateway: the app's only HTTP component. It owns the route table below, authenticates through
//! the auth component, and orchestrates the domain components (imported through WIT, composed at load).

mod bindings;
mod campaigns;
mod drugs;
mod hospitals;
mod http;
mod idempotency;
mod landing;
mod landing_html;
mod locations;
mod media;
mod medics;
mod memberships;
mod notifications;
mod patients;
mod pharmacies;
mod pharmacy;
mod prescriptions;
mod reference;
mod register;
mod verification;

use spin_sdk::http::{IncomingRequest, Method, ResponseOutparam};

use common::types::Error;
use http::{Request, Response};

#[spin_sdk::http_component]
async fn handle(incoming: IncomingRequest, out: ResponseOutparam) {
    let mut response = match Request::read(incoming).await {
        Ok(request) => route(&request).unwrap_or_else(Response::error),
        Err(response) => response,
    };
    // E.g. delivering a new prescription's email and webhooks: after the client has its answer.
    let after = response.take_after();
    response.send(out).await;
    if let Some(work) = after {
        work();
    }
}

/// Runs the route of the request's method and path. A path served only under other methods is
/// `405` with `Allow`; a path no route serves, `404`.
fn route(req: &Request) -> Result<Response, Error> {
    let segments = req.segments();
    if let Some(handler) = handler(req, req.method(), &segments) {
        return handler();
    }
    let allowed: Vec<&str> = METHODS
        .iter()
        .filter(|(method, _)| handler(req, method.clone(), &segments).is_some())
        .map(|(_, name)| *name)
        .collect();
    if allowed.is_empty() {
        return Err(Error::not_found());
    }
    let message = format!(
        "Method \"{}\" not allowed.",
        http::method_name(&req.method())
    );
    Ok(Response::message(405, &message).with_header("allow", allowed.join(", ")))
}

/// The methods routes are written for, with their names for `Allow`.
const METHODS: [(Method, &str); 4] = [
    (Method::Get, "GET"),
    (Method::Post, "POST"),
    (Method::Patch, "PATCH"),
    (Method::Delete, "DELETE"),
];

/// A route's handler, matched but not yet run.
type Handler<'a> = Box<dyn FnOnce() -> Result<Response, Error> + 'a>;

fn run<'a>(handler: impl FnOnce() -> Result<Response, Error> + 'a) -> Option<Handler<'a>> {
    Some(Box::new(handler))
}

/// Every route of the API. Paths match with or without their trailing slash.
fn handler<'a>(req: &'a Request, method: Method, segments: &'a [&'a str]) -> Option<Handler<'a>> {
    use Method::*;
    match (method, segments) {
        (Get, ["api", "v2", "hospital"]) => run(move || hospitals::list(req)),
        (Post, ["api", "v2", "hospital"]) => run(move || hospitals::create(req)),
        (Get, ["api", "v2", "hospital", id]) => run(move || hospitals::get(req, id)),
        (Patch, ["api", "v2", "hospital", id]) => run(move || hospitals::update(req, id)),
        (Post, ["api", "v2", "medics"]) => run(move || medics::create(req)),
        (Get, ["api", "v2", "medics"]) => run(move || medics::list(req)),
        (Get, ["api", "v2", "medics", id]) => run(move || medics::get(req, id)),
        (Patch, ["api", "v2", "medics", id]) => run(move || medics::update(req, id)),
        (Get, ["api", "v2", "medications"]) => run(move || prescriptions::prescribed(req)),
        (Get, ["api", "v2", "search", "medics"]) => run(move || medics::search(req)),
        (Get, ["api", "v2", "management", "memberships"]) => run(move || memberships::list(req)),
        (Post, ["api", "v2", "management", "memberships"]) => run(move || memberships::create(req)),
        (Get, ["api", "v2", "management", "memberships", id]) => {
            run(move || memberships::get(req, id))
        }
        (Patch, ["api", "v2", "management", "memberships", id]) => {
            run(move || memberships::update(req, id))
        }
        (Delete, ["api", "v2", "management", "memberships", id]) => {
            run(move || memberships::delete(req, id))
        }
        (Get, ["api", "v2", "memberships", hospital]) => {
            run(move || memberships::of_hospital(req, hospital))
        }
        (Get, ["api", "v2", "locations"]) => run(move || locations::list(req)),
        (Patch, ["api", "v2", "locations", "update"]) => run(move || locations::update(req)),
        (Get, ["api", "v2", "patient"]) => run(move || patients::list(req)),
        (Post, ["api", "v2", "patient"]) => run(move || patients::create(req)),
        (Get, ["api", "v2", "patient", key]) => run(move || patients::get(req, key)),
        (Patch, ["api", "v2", "patient", key]) => run(move || patients::update(req, key)),
        (Get, ["api", "v2", "rx-endpoint"]) => run(move || prescriptions::list(req)),
        (Post, ["api", "v2", "rx-endpoint"]) => run(move || prescriptions::create(req)),
        (Get, ["api", "v2", "rx-endpoint", key]) => run(move || prescriptions::detail(req, key)),
        (Post, ["api", "v2", "rx-endpoint", signature, "cancel"]) => {
            run(move || prescriptions::cancel(req, signature))
        }
        (Get, ["api", "v2", "rx-endpoint", signature, "document"]) => {
            run(move || prescriptions::document(req, signature))
        }
        (Get, ["api", "v2", "rx-endpoint", signature, "dispenses"]) => {
            run(move || prescriptions::events(req, signature))
        }
        (Get, ["api", "v2", "rx", "pdf", signature]) => {
            run(move || prescriptions::pdf(req, signature))
        }
        (Post, ["api", "v2", "rx", "resend", signature]) => {
            run(move || notifications::resend(req, signature))
        }
        (Get, ["api", "v2", "webhooks"]) => run(move || notifications::list_webhooks(req)),
        (Post, ["api", "v2", "webhooks"]) => run(move || notifications::create_webhook(req)),
        (Get, ["api", "v2", "webhooks", id]) => run(move || notifications::get_webhook(req, id)),
        (Delete, ["api", "v2", "webhooks", id]) => {
            run(move || notifications::delete_webhook(req, id))
        }
        (Get, ["api", "v2", "deliveries"]) => run(move || notifications::list_deliveries(req)),
        (Post, ["api", "v2", "deliveries", "run"]) => run(move || notifications::run_worker(req)),
        (Get, ["api", "v2", "deliveries", id]) => run(move || notifications::get_delivery(req, id)),
        (Post, ["api", "v2", "deliveries", id, "replay"]) => {
            run(move || notifications::replay(req, id))
        }
        (Get, ["api", "v2", "drugs"]) => run(move || drugs::search(req)),
        (Post, ["api", "v2", "drugs"]) => run(move || drugs::load(req)),
        (Get, ["api", "v2", "rx", "patient-landing", signature]) => {
            run(move || landing::json(req, signature))
        }
        (Get, ["api", "v2", "campaigns"]) => run(move || campaigns::list(req)),
        (Post, ["api", "v2", "campaigns"]) => run(move || campaigns::create(req)),
        (Get, ["api", "v2", "campaigns", id]) => run(move || campaigns::get(req, id)),
        (Patch, ["api", "v2", "campaigns", id]) => run(move || campaigns::update(req, id)),
        (Delete, ["api", "v2", "campaigns", id]) => run(move || campaigns::delete(req, id)),
        (Get, ["api", "v2", "pharmacies"]) => run(move || pharmacies::list(req)),
        (Post, ["api", "v2", "pharmacies"]) => run(move || pharmacies::create(req)),
        (Get, ["api", "v2", "pharmacies", id]) => run(move || pharmacies::get(req, id)),
        (Patch, ["api", "v2", "pharmacies", id]) => run(move || pharmacies::update(req, id)),
        (Get, ["api", "v2", "pharmacies", id, "calls"]) => run(move || pharmacies::calls(req, id)),
        (Get, ["api", "v2", "pharmacies", id, "register"]) => {
            run(move || pharmacies::register(req, id))
        }
        // The pharmacy calls (a pharmacy's token only), on the original pharmacy API's paths.
        (Get, ["api", "v2", "pharmacy", "register"]) => run(move || pharmacy::register(req)),
        (Get, ["api", "v2", "pharmacy", "rx", signature]) => {
            run(move || pharmacy::lookup(req, signature))
        }
        (Post, ["api", "v1", "prescriptions", "burn", signature]) => {
            run(move || pharmacy::burn(req, signature))
        }
        (Post, ["api", "v1", "prescriptions", "reject", signature]) => {
            run(move || pharmacy::reject(req, signature))
        }
        (Post, ["api", "v2", "pharmacy", "rx", signature, "claim"]) => {
            run(move || pharmacy::claim(req, signature))
        }
        (Post, ["api", "v2", "pharmacy", "rx", signature, "release"]) => {
            run(move || pharmacy::release(req, signature))
        }
        (Get, ["api", "v2", "pharmacy", "receipts", digest]) => {
            run(move || pharmacy::receipt(req, digest))
        }
        // The contract (OpenAPI) and its reference page: no token.
        (Get, ["api", "v2", "openapi.json"]) => run(reference::openapi),
        (Get, ["docs"]) => run(reference::docs),
        // Verification: no token (docs/verification.md).
        (Get, [".well-known", "receta-keys.json"]) => run(verification::keys),
        (Get, ["api", "v2", "verify", signature]) => {
            run(move || verification::verify(req, signature))
        }
        (Get, ["api", "v2", "verify", "receipt", digest]) => {
            run(move || verification::receipt(req, digest))
        }
        (Get, ["media", "hospitals", id, file]) => run(move || media::hospital_image(id, file)),
        // The patient's page (`cta_link`) and its PDF: no token, the signature is the capability.
        (Get, ["rx", signature]) => run(move || landing::page(signature)),
        (Get, ["rx", signature, "pdf"]) => run(move || landing::pdf(signature)),
        (Get, ["rx", ..]) => run(move || Ok(landing::not_found())),
        _ => None,
    }
}
