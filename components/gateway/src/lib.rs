//! The gateway: the app's only HTTP component. It owns the route table below, authenticates through
//! the auth component, and orchestrates the domain components (imported through WIT, composed at load).

mod bindings;
mod hospitals;
mod http;
mod media;

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
        (Get, ["media", "hospitals", id, file]) => media::hospital_image(id, file),
        _ => Err(Error::not_found()),
    }
}
