//! The HTTP boundary, one module each: `request` (reading it within the size limits, its token's
//! owner, its connection), `multipart` (a `multipart/form-data` body), `response` (the spec's body shapes, the domain `Error` mapped to status
//! codes), `origin` (the public origin and the `Host` header). Who may call what is `roles`.

pub mod multipart;
mod origin;
mod request;
mod response;

pub use origin::{base_url, from_own_pages};
pub use request::{Request, path_id};
pub use response::Response;
pub use wasip3::http::types::Method;

/// The media type of an RFC 3161 timestamp reply: the NOM-151 constancias (RFC 3161 §4).
pub const TIMESTAMP_REPLY: &str = "application/timestamp-reply";

/// A method's name, for messages and the idempotency fingerprint.
pub fn method_name(method: &Method) -> &str {
    match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(name) => name,
    }
}
