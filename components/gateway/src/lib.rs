//! The gateway: the app's only HTTP component. It owns the route table below, authenticates through
//! the auth component, and orchestrates the domain components (imported through WIT, composed at load).

mod bindings;
mod campaigns;
mod channels;
mod drugs;
mod hospitals;
mod http;
mod input;
mod jobs_door;
mod landing;
mod linking;
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
mod roles;
mod signing;
mod verification;
mod views;

use wasip3::http::types::{ErrorCode, Request as WasiRequest, Response as WasiResponse};

use common::types::Error;
use http::{Method, Request, Response};
use roles::{
    Handler, admin, caller, medic, medic_key, page_change, pharmacy, pharmacy_call,
    pharmacy_or_admin, public, reader, scheduler,
};

/// The `wasi:http/handler@0.3.0-rc-2026-03-15` export (WASIp3): Spin 4 and `receta` reuse an
/// instance for many requests, several at once (docs/architecture.md, "What an instance keeps").
struct Gateway;

wasip3::http::service::export!(Gateway);

impl wasip3::exports::http::handler::Guest for Gateway {
    async fn handle(incoming: WasiRequest) -> Result<WasiResponse, ErrorCode> {
        let response = match Request::read(incoming).await {
            // The route runs without yielding, and the request (with its SQLite connection) is
            // dropped before anything is awaited: another request of this instance never sees it.
            // The schema first (once per instance): a database a newer build migrated is refused.
            Ok(request) => {
                if let Err(refusal) = schema::ensure() {
                    return schema_refused(refusal).send().await;
                }
                let outcome = route(&request);
                if matches!(outcome, Err(Error::Internal(_) | Error::Unavailable(_))) {
                    request.forget_connection();
                }
                outcome.unwrap_or_else(Response::error)
            }
            Err(response) => response,
        };
        response.send().await
    }
}

/// The answer to every request while [`schema::ensure`] fails: 503 naming the newer migration of a
/// database ahead of this build; else the database's failure as any request's.
fn schema_refused(refusal: schema::SchemaError) -> Response {
    eprintln!("receta: {refusal}");
    match refusal {
        schema::SchemaError::Ahead { .. } => Response::message(503, &refusal.to_string()),
        schema::SchemaError::Failed(e) => Response::error(Error::from(e)),
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
const METHODS: [(Method, &str); 5] = [
    (Method::Get, "GET"),
    (Method::Post, "POST"),
    (Method::Put, "PUT"),
    (Method::Patch, "PATCH"),
    (Method::Delete, "DELETE"),
];

/// Every route of the API, with who may call it. Paths match with or without their trailing slash.
#[rustfmt::skip]
fn handler<'a>(req: &'a Request, method: Method, segments: &'a [&'a str]) -> Option<Handler<'a>> {
    use Method::*;
    match (method, segments) {
        (Get, ["api", "v2", "hospital"]) => caller(req, move |c| hospitals::list(req, c)),
        (Post, ["api", "v2", "hospital"]) => caller(req, move |c| hospitals::create(req, c)),
        (Get, ["api", "v2", "hospital", id]) => caller(req, move |c| hospitals::get(c, id)),
        (Patch, ["api", "v2", "hospital", id]) => caller(req, move |c| hospitals::update(req, c, id)),
        (Post, ["api", "v2", "medics"]) => admin(req, move |a| medics::create(req, a)),
        (Get, ["api", "v2", "medics"]) => caller(req, move |c| medics::list(req, c)),
        (Get, ["api", "v2", "medics", id]) => caller(req, move |c| medics::get(c, id)),
        (Patch, ["api", "v2", "medics", id]) => caller(req, move |c| medics::update(req, c, id)),
        (Put, ["api", "v2", "medics", id, "efirma"]) => caller(req, move |c| medics::put_efirma(req, c, id)),
        (Get, ["api", "v2", "medics", id, "efirma"]) => caller(req, move |c| medics::get_efirma(c, id)),
        (Delete, ["api", "v2", "medics", id, "efirma"]) => caller(req, move |c| medics::delete_efirma(c, id)),
        (Get, ["api", "v2", "search", "medics"]) => caller(req, move |c| medics::search(req, c)),
        (Get, ["api", "v2", "management", "memberships"]) => caller(req, move |c| memberships::list(req, c)),
        (Post, ["api", "v2", "management", "memberships"]) => caller(req, move |c| memberships::create(req, c)),
        (Get, ["api", "v2", "management", "memberships", id]) => caller(req, move |c| memberships::get(c, id)),
        (Patch, ["api", "v2", "management", "memberships", id]) => caller(req, move |c| memberships::update(req, c, id)),
        (Delete, ["api", "v2", "management", "memberships", id]) => caller(req, move |c| memberships::delete(c, id)),
        (Get, ["api", "v2", "memberships", hospital]) => caller(req, move |c| memberships::of_hospital(c, hospital)),
        (Get, ["api", "v2", "locations"]) => medic(req, locations::list),
        (Patch, ["api", "v2", "locations", "update"]) => medic(req, move |m| locations::update(req, m)),
        (Get, ["api", "v2", "patient"]) => medic(req, move |m| patients::list(req, m)),
        (Post, ["api", "v2", "patient"]) => medic(req, move |m| patients::create(req, m)),
        (Get, ["api", "v2", "patient", key]) => medic(req, move |m| patients::get(m, key)),
        (Patch, ["api", "v2", "patient", key]) => medic(req, move |m| patients::update(req, m, key)),
        (Get, ["api", "v2", "patient", key, "medication-history"]) => medic(req, move |m| patients::history(m, key)),
        (Get, ["api", "v2", "patient", key, "medication-history", "fhir"]) => medic(req, move |m| patients::history_fhir(m, key)),
        (Get, ["api", "v2", "rx-endpoint"]) => medic_key(req, move |m| prescriptions::list(req, m)),
        (Post, ["api", "v2", "rx-endpoint"]) => medic_key(req, move |m| prescriptions::create(req, m)),
        (Get, ["api", "v2", "rx-endpoint", id]) if prescriptions::is_id(id) => medic(req, move |m| prescriptions::by_id(req, m, id)),
        (Get, ["api", "v2", "rx-endpoint", signature]) => reader(req, move |r| prescriptions::detail(r, signature)),
        (Post, ["api", "v2", "rx-endpoint", signature, "cancel"]) => medic(req, move |m| prescriptions::cancel(req, m, signature)),
        (Get, ["api", "v2", "rx-endpoint", signature, "document"]) => caller(req, move |c| prescriptions::document(c, signature)),
        (Get, ["api", "v2", "rx-endpoint", signature, "constancia"]) => caller(req, move |c| prescriptions::constancia(c, signature)),
        (Get, ["api", "v2", "rx-endpoint", signature, "fhir"]) => caller(req, move |c| prescriptions::fhir(c, signature)),
        (Post, ["api", "v2", "rx-endpoint", signature, "efirma"]) => medic(req, move |m| signing::activate(req, m, signature)),
        (Get, ["api", "v2", "rx-endpoint", signature, "efirma.p7s"]) => caller(req, move |c| signing::p7s(c, signature)),
        (Get, ["api", "v2", "rx-endpoint", signature, "dispenses"]) => caller(req, move |c| prescriptions::events(req, c, signature)),
        (Get, ["api", "v2", "rx-endpoint", signature, "messages"]) => caller(req, move |c| channels::of_prescription(c, signature)),
        (Get, ["api", "v2", "medications"]) => medic(req, move |m| prescriptions::prescribed(req, m)),
        (Get, ["api", "v2", "rx", "pdf", signature]) => caller(req, move |c| prescriptions::pdf(c, signature)),
        (Post, ["api", "v2", "rx", "resend", signature]) => caller(req, move |c| notifications::resend(req, c, signature)),
        (Get, ["api", "v2", "rx", "patient-landing", signature]) => caller(req, move |c| landing::json(c, signature)),
        (Get, ["api", "v2", "webhooks"]) => admin(req, move |a| notifications::list_webhooks(req, a)),
        (Post, ["api", "v2", "webhooks"]) => admin(req, move |a| notifications::create_webhook(req, a)),
        (Get, ["api", "v2", "webhooks", id]) => admin(req, move |a| notifications::get_webhook(id, a)),
        (Delete, ["api", "v2", "webhooks", id]) => admin(req, move |a| notifications::delete_webhook(id, a)),
        (Get, ["api", "v2", "deliveries"]) => admin(req, move |a| notifications::list_deliveries(req, a)),
        (Post, ["api", "v2", "deliveries", "run"]) => scheduler(req, jobs_door::run),
        (Post, ["api", "v2", "jobs", "run"]) => scheduler(req, jobs_door::run),
        (Get, ["api", "v2", "deliveries", id]) => admin(req, move |a| notifications::get_delivery(id, a)),
        (Post, ["api", "v2", "deliveries", id, "replay"]) => admin(req, move |a| notifications::replay(id, a)),
        (Get, ["api", "v2", "messages"]) => admin(req, move |a| channels::list(req, a)),
        (Post, ["api", "v2", "messages", id, "replay"]) => admin(req, move |a| channels::replay(id, a)),
        // The providers' receipts: signed by the provider, no token (docs/notifications.md).
        (Get, ["api", "v2", "channels", "whatsapp", "webhook"]) => public(move || channels::whatsapp_challenge(req)),
        (Post, ["api", "v2", "channels", "whatsapp", "webhook"]) => public(move || channels::whatsapp_receipts(req)),
        (Post, ["api", "v2", "channels", "twilio", "status"]) => public(move || channels::twilio_status(req)),
        (Get, ["api", "v2", "drugs"]) => caller(req, move |_| drugs::search(req)),
        (Post, ["api", "v2", "drugs"]) => admin(req, move |a| drugs::load(req, a)),
        (Get, ["api", "v2", "campaigns"]) => admin(req, move |a| campaigns::list(req, a)),
        (Post, ["api", "v2", "campaigns"]) => admin(req, move |a| campaigns::create(req, a)),
        (Get, ["api", "v2", "campaigns", id]) => admin(req, move |a| campaigns::get(id, a)),
        (Patch, ["api", "v2", "campaigns", id]) => admin(req, move |a| campaigns::update(req, id, a)),
        (Delete, ["api", "v2", "campaigns", id]) => admin(req, move |a| campaigns::delete(id, a)),
        (Get, ["api", "v2", "pharmacies"]) => admin(req, move |a| pharmacies::list(req, a)),
        (Post, ["api", "v2", "pharmacies"]) => admin(req, move |a| pharmacies::create(req, a)),
        (Get, ["api", "v2", "pharmacies", id]) => admin(req, move |a| pharmacies::get(id, a)),
        (Patch, ["api", "v2", "pharmacies", id]) => admin(req, move |a| pharmacies::update(req, id, a)),
        (Get, ["api", "v2", "pharmacies", id, "calls"]) => admin(req, move |a| pharmacies::calls(req, id, a)),
        (Get, ["api", "v2", "pharmacies", id, "register"]) => admin(req, move |a| pharmacies::register(req, id, a)),
        // The pharmacy calls, on the original pharmacy API's paths.
        (Get, ["api", "v2", "pharmacy", "register"]) => pharmacy(req, move |p| pharmacy::register(req, p)),
        (Get, ["api", "v2", "pharmacy", "rx", signature]) => pharmacy_call(req, move |p| pharmacy::lookup(p, signature)),
        (Get, ["api", "v2", "pharmacy", "rx", signature, "fhir"]) => pharmacy_call(req, move |p| pharmacy::fhir(p, signature)),
        (Post, ["api", "v1", "prescriptions", "burn", signature]) => pharmacy_call(req, move |p| pharmacy::burn(req, p, signature)),
        (Post, ["api", "v1", "prescriptions", "reject", signature]) => pharmacy_call(req, move |p| pharmacy::reject(req, p, signature)),
        (Post, ["api", "v2", "pharmacy", "patients", "lookup"]) => pharmacy(req, move |p| pharmacy::patients_lookup(req, p)),
        (Post, ["api", "v2", "pharmacy", "rx", signature, "claim"]) => pharmacy_call(req, move |p| pharmacy::claim(p, signature)),
        (Post, ["api", "v2", "pharmacy", "rx", signature, "release"]) => pharmacy_call(req, move |p| pharmacy::release(req, p, signature)),
        (Post, ["api", "v2", "pharmacy", "rx", signature, "status"]) => pharmacy_call(req, move |p| pharmacy::status(req, p, signature)),
        (Get, ["api", "v2", "pharmacy", "receipts", digest]) => pharmacy_or_admin(req, move |p| pharmacy::receipt(p, digest)),
        (Get, ["api", "v2", "pharmacy", "receipts", digest, "constancia"]) => pharmacy_or_admin(req, move |p| pharmacy::receipt_constancia(p, digest)),
        // The contract (OpenAPI) and its reference page.
        (Get, ["api", "v2", "openapi.json"]) => public(reference::openapi),
        (Get, ["docs"]) => public(reference::docs),
        // Verification (docs/verification.md).
        (Get, [".well-known", "receta-keys.json"]) => public(verification::keys),
        (Get, ["api", "v2", "verify", signature]) => public(move || verification::verify(req, signature)),
        (Get, ["api", "v2", "verify", "receipt", digest]) => public(move || verification::receipt(req, digest)),
        (Get, ["media", "hospitals", id, file]) => public(move || media::hospital_image(id, file)),
        // The patient's page (`cta_link`) and its PDF: the signature is the capability.
        (Get, ["rx", signature]) => public(move || landing::page(signature)),
        (Get, ["rx", signature, "pdf"]) => public(move || landing::pdf(signature)),
        // Changes made on the patient's page: refused from another site's pages (`page_change`).
        (Post, ["rx", signature, "counter-code"]) => page_change(req, move || landing::counter_code(req, signature)),
        (Post, ["rx", signature, "whatsapp-opt-out"]) => page_change(req, move || landing::whatsapp_opt_out(req, signature)),
        (Get, ["rx", signature, "consents"]) => public(move || landing::consents(req, signature)),
        (Post, ["rx", signature, "consents"]) => page_change(req, move || landing::give_consent(req, signature)),
        (Delete, ["rx", signature, "consents", id]) => page_change(req, move || landing::withdraw_consent(req, signature, id, false)),
        (Post, ["rx", signature, "consents", id, "withdraw"]) => page_change(req, move || landing::withdraw_consent(req, signature, id, true)),
        // The person's other records, proved theirs by a code sent to each (docs/patients.md).
        (Get, ["rx", signature, "records"]) => public(move || linking::list(req, signature)),
        (Post, ["rx", signature, "records"]) => page_change(req, move || linking::confirm(req, signature)),
        (Post, ["rx", signature, "records", "codes"]) => page_change(req, move || linking::send_codes(req, signature)),
        (Delete, ["rx", signature, "records", id]) => page_change(req, move || linking::unlink(req, signature, id, false)),
        (Post, ["rx", signature, "records", id, "unlink"]) => page_change(req, move || linking::unlink(req, signature, id, true)),
        (Get, ["rx", ..]) => public(move || Ok(landing::not_found())),
        _ => None,
    }
}
