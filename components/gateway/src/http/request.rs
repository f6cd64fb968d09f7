//! The HTTP boundary: reading a request (with size limits), writing a response, and mapping the domain
//! `Error` to status codes and the spec's body shapes.

use std::cell::OnceCell;

use serde::Serialize;
use serde_json::{Value, json};
use wasip3::http::types::{self as wasi, ErrorCode};
use wasip3::wit_bindgen::StreamResult;
use wasip3::{wit_bindgen, wit_future, wit_stream};

pub use wasip3::http::types::Method;

use common::db::Db;
use common::fields::Fields;
use common::page::Query;
use common::types::{Error, PageRequest, Principal};

use crate::bindings::auth::{self, Caller};

/// Largest JSON body accepted (decisions: 1 MiB).
pub const MAX_JSON_BODY: usize = 1 << 20;
/// Largest multipart body accepted (decisions: 5 MiB).
pub const MAX_MULTIPART_BODY: usize = 5 << 20;

/// The one text of each role refusal (403), whatever the route.
const PHARMACY_TOKEN_ELSEWHERE: &str = "A pharmacy token is good only on the pharmacy calls (/api/v2/pharmacy/rx/, /api/v2/pharmacy/register/, /api/v1/prescriptions/).";
const PHARMACY_CALL_ONLY: &str = "Only a pharmacy's token may make the pharmacy calls.";
const ADMIN_ONLY: &str = "This endpoint requires the API admin's token.";
const MEDIC_ONLY: &str = "This endpoint requires a medic token.";
const PHARMACY_OR_ADMIN_ONLY: &str =
    "This endpoint requires a pharmacy's or the API admin's token.";

/// A request, body read in full.
pub struct Request {
    method: Method,
    path: String,
    query: Query,
    scheme: String,
    authority: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The request's connection, opened at its first use ([`Request::db`]).
    db: OnceCell<Db>,
}

impl Request {
    /// Reads the request; a body over the limit is answered 413 without reading the rest.
    pub async fn read(incoming: wasi::Request) -> Result<Request, Response> {
        let method = incoming.get_method();
        let path_with_query = incoming.get_path_with_query().unwrap_or_else(|| "/".into());
        let (path, query) = path_with_query
            .split_once('?')
            .unwrap_or((&path_with_query, ""));
        let headers: Vec<(String, String)> = incoming
            .get_headers()
            .copy_all()
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_ascii_lowercase(),
                    String::from_utf8_lossy(&v).into_owned(),
                )
            })
            .collect();
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let scheme = match incoming.get_scheme() {
            Some(wasi::Scheme::Https) => "https".to_string(),
            _ => "http".to_string(),
        };
        let authority = incoming
            .get_authority()
            .or_else(|| header("host"))
            .unwrap_or_else(|| "127.0.0.1:3000".into());
        if !is_host_and_port(&authority) {
            return Err(Response::message(
                400,
                "The Host header is not a valid host[:port].",
            ));
        }
        let declared: Option<usize> = header("content-length").and_then(|v| v.parse().ok());
        if declared.is_some_and(|n| n > MAX_MULTIPART_BODY) {
            return Err(Response::too_large());
        }
        let body = read_body(incoming).await?;
        let request = Request {
            method,
            path: path.to_string(),
            query: Query::parse(query),
            scheme,
            authority,
            headers,
            body,
            db: OnceCell::new(),
        };
        if !request.is_multipart() && request.body.len() > MAX_JSON_BODY {
            return Err(Response::too_large());
        }
        Ok(request)
    }

    pub fn method(&self) -> Method {
        self.method.clone()
    }

    /// The path's non-empty segments, as sent (not percent-decoded): `/api/v2/hospital/7/` is
    /// `["api", "v2", "hospital", "7"]`.
    pub fn segments(&self) -> Vec<&str> {
        self.path.split('/').filter(|s| !s.is_empty()).collect()
    }

    /// The path, as sent (without the query string).
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn query(&self) -> &Query {
        &self.query
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// `scheme://host/path` of this request, for absolute `next`/`previous` links: the request's
    /// own origin when its host is one the service answers for (`base_url`'s, or a loopback name),
    /// else `base_url`, so a forged `Host` never makes the service write links to elsewhere.
    pub fn absolute_path(&self) -> String {
        let base = base_url();
        if answers_for(&self.authority, &base) {
            format!("{}://{}{}", self.scheme, self.authority, self.path)
        } else {
            format!("{base}{}", self.path)
        }
    }

    /// The request's connection: opened at its first use (the token's check) and kept until the
    /// route's handler returns, so that every `Db::open` of the gateway meanwhile shares it and
    /// every domain call that takes one is lent it. A request then makes one SQLite connection,
    /// not one per component (on Spin each is new and parses the schema: docs/architecture.md, "On
    /// real Spin").
    fn db(&self) -> Result<&Db, Error> {
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        let db = Db::open()?;
        Ok(self.db.get_or_init(|| db))
    }

    /// After a server error: the request's connection, if it opened one, is closed rather than
    /// kept for a later request, since a component it was lent to may have left it in a state
    /// nobody here can see (docs/architecture.md, "What an instance keeps").
    pub fn forget_connection(&self) {
        if let Some(db) = self.db.get() {
            db.forget();
        }
    }

    /// Whose token the request carries (`receta:auth/auth#authenticate`).
    fn authenticate(&self) -> Result<Caller, Error> {
        auth::authenticate(self.db()?.connection(), self.header("authorization"))
    }

    /// The caller of an admin or medic call, from `Authorization: Token <token>`: 401 without a
    /// valid token, 403 for a pharmacy's token (good only on the pharmacy calls).
    pub fn caller(&self) -> Result<Principal, Error> {
        match self.authenticate()? {
            Caller::Admin => Ok(Principal::Admin),
            Caller::Medic(id) => Ok(Principal::Medic(id)),
            Caller::Pharmacy(_) => Err(Error::forbidden(PHARMACY_TOKEN_ELSEWHERE)),
        }
    }

    /// Lets only the API admin through: 401 without a valid token, 403 for anyone else.
    pub fn admin(&self) -> Result<(), Error> {
        match self.caller()? {
            Principal::Admin => Ok(()),
            Principal::Medic(_) => Err(Error::forbidden(ADMIN_ONLY)),
        }
    }

    /// The medic of a medic call: 401 without a valid token, 403 for anyone else.
    pub fn medic(&self) -> Result<i64, Error> {
        match self.caller()? {
            Principal::Medic(id) => Ok(id),
            Principal::Admin => Err(Error::forbidden(MEDIC_ONLY)),
        }
    }

    /// The pharmacy of a pharmacy call: 401 without a valid token, 403 for an admin's or a medic's.
    pub fn pharmacy(&self) -> Result<i64, Error> {
        match self.authenticate()? {
            Caller::Pharmacy(id) => Ok(id),
            Caller::Admin | Caller::Medic(_) => Err(Error::forbidden(PHARMACY_CALL_ONLY)),
        }
    }

    /// The caller of a call open to pharmacies and the API admin (a receipt): `Some(pharmacy)`, or
    /// `None` for the admin; 401 without a valid token, 403 for a medic's.
    pub fn pharmacy_or_admin(&self) -> Result<Option<i64>, Error> {
        match self.authenticate()? {
            Caller::Pharmacy(id) => Ok(Some(id)),
            Caller::Admin => Ok(None),
            Caller::Medic(_) => Err(Error::forbidden(PHARMACY_OR_ADMIN_ONLY)),
        }
    }

    /// The JSON body as fields (400 for malformed JSON or a body over 1 MiB → 413 is decided earlier).
    pub fn json_fields(&self) -> Result<Fields, Error> {
        Fields::from_json(&self.body)
    }

    /// `json_fields`, where an empty (or all-whitespace) body is an object with no fields: for the
    /// calls whose every field is optional (resend, release).
    pub fn json_fields_or_empty(&self) -> Result<Fields, Error> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            Ok(Fields::default())
        } else {
            self.json_fields()
        }
    }

    /// `limit`/`offset` from the query string.
    pub fn page(&self) -> Result<PageRequest, Error> {
        self.query.page()
    }

    /// Whether the body is `multipart/form-data`.
    pub fn is_multipart(&self) -> bool {
        self.header("content-type")
            .is_some_and(|ct| common::multipart::boundary(ct).is_some())
    }
}

/// Whether `authority` is `host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6 address,
/// and a port of at most 65535.
pub fn is_host_and_port(authority: &str) -> bool {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, after)) => {
                if v6.parse::<std::net::Ipv6Addr>().is_err() {
                    return false;
                }
                ("v6", after.strip_prefix(':'))
            }
            None => return false,
        },
        None => match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        },
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok());
    let host_ok = host == "v6"
        || (!host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            }));
    port_ok && host_ok
}

/// Whether the service answers for `authority`'s host: `base_url`'s host, or a loopback name.
fn answers_for(authority: &str, base_url: &str) -> bool {
    let host = |a: &str| -> String {
        let a = a.rsplit_once('@').map_or(a, |(_, h)| h);
        match a.strip_prefix('[') {
            Some(rest) => rest.split(']').next().unwrap_or_default().to_string(),
            None => a.split(':').next().unwrap_or_default().to_ascii_lowercase(),
        }
    };
    let requested = host(authority);
    let base_authority = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    requested == host(base_authority)
        || requested == "localhost"
        || requested == "::1"
        || requested
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An integer id from a path segment. Anything else (text, a number too large for an `i64`) names
/// nothing, so it is the standard 404, never a 400 or a 500.
pub fn path_id(segment: &str) -> Result<i64, Error> {
    segment.parse().map_err(|_| Error::not_found())
}

/// A response ready to send, and what to do once it is sent.
pub struct Response {
    status: u16,
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

impl Response {
    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// A JSON response.
    pub fn json(status: u16, body: &impl Serialize) -> Response {
        Response {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: serde_json::to_vec(body).expect("JSON values serialize"),
        }
    }

    /// `{"message": "..."}`.
    pub fn message(status: u16, message: &str) -> Response {
        Response::json(status, &json!({ "message": message }))
    }

    /// Raw bytes with a content type.
    pub fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            status,
            content_type,
            headers: Vec::new(),
            body,
        }
    }

    /// `204 No Content`: no body and no content type.
    pub fn no_content() -> Response {
        Response {
            status: 204,
            content_type: "",
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }

    /// 413 for a body over its limit.
    pub fn too_large() -> Response {
        Response::message(413, "Request body is too large.")
    }

    /// The paginated shape `{count, next, previous, results}`.
    pub fn page(
        req: &Request,
        page: &PageRequest,
        count: u64,
        results: &[impl Serialize],
    ) -> Response {
        #[derive(Serialize)]
        struct Page<'a, T> {
            count: u64,
            next: Option<String>,
            previous: Option<String>,
            results: &'a [T],
        }
        let (next, previous) = req.query().links(&req.absolute_path(), page, count);
        Response::json(
            200,
            &Page {
                count,
                next,
                previous,
                results,
            },
        )
    }

    /// Maps a domain error to its status and body shape (spec section 7, decisions).
    pub fn error(error: Error) -> Response {
        match error {
            Error::Invalid(fields) => {
                let body: serde_json::Map<String, Value> = fields
                    .into_iter()
                    .map(|f| (f.field, json!(f.messages)))
                    .collect();
                Response::json(400, &body)
            }
            Error::BadRequest(message) => Response::message(400, &message),
            Error::Unauthorized => Response::message(401, "Invalid Token"),
            Error::Forbidden(message) => Response::message(403, &message),
            Error::NotFound(message) => Response::message(404, &message),
            Error::Conflict(message) => Response::message(409, &message),
            Error::TooManyRequests(seconds) => Response::message(
                429,
                &format!("Too many requests: try again in {seconds} s."),
            )
            .with_header("retry-after", seconds.to_string()),
            Error::Unavailable(seconds) => Response::message(
                503,
                &format!("The service is unavailable: try again in {seconds} s."),
            )
            .with_header("retry-after", seconds.to_string()),
            Error::Internal(detail) => {
                eprintln!("internal error: {detail}");
                Response::message(500, "Internal server error.")
            }
        }
    }

    /// The `wasi:http` response to return. Its body is written by a task of this request that
    /// goes on after the handler returns.
    pub fn send(self) -> Result<wasi::Response, ErrorCode> {
        let mut headers = Vec::new();
        if !self.content_type.is_empty() {
            headers.push((
                "content-type".to_string(),
                self.content_type.as_bytes().to_vec(),
            ));
        }
        headers.extend(
            self.headers
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.into_bytes())),
        );
        // The length up front: without it the body goes out chunked, and the chunked encoding's
        // last, tiny write waits on real Spin (no `TCP_NODELAY` on its sockets) for the client's
        // delayed ACK of the body, ~40 ms on a kept-alive connection (docs/architecture.md, "On
        // real Spin"). A 204 or 304 has no body and no length.
        let has_body = !matches!(self.status, 204 | 304);
        if has_body {
            headers.push((
                "content-length".to_string(),
                self.body.len().to_string().into_bytes(),
            ));
        }
        let fields = wasi::Fields::from_list(&headers)
            .map_err(|e| ErrorCode::InternalError(Some(format!("response headers: {e:?}"))))?;
        let (mut body_tx, body_rx) = wit_stream::new();
        let (trailers_tx, trailers_rx) = wit_future::new(|| Ok(None));
        let (response, sent) =
            wasi::Response::new(fields, has_body.then_some(body_rx), trailers_rx);
        response
            .set_status_code(self.status)
            .map_err(|()| ErrorCode::InternalError(Some("invalid status".into())))?;
        let body = self.body;
        wit_bindgen::spawn(async move {
            if has_body && !body.is_empty() {
                let unsent = body_tx.write_all(body).await;
                if !unsent.is_empty() {
                    eprintln!("the client went away before the whole response body was sent");
                }
            }
            drop(body_tx);
            drop(trailers_tx);
            if let Err(e) = sent.await {
                eprintln!("sending the response failed: {e:?}");
            }
        });
        Ok(response)
    }
}

/// The request body, read whole: over [`MAX_MULTIPART_BODY`], 413 without reading the rest.
async fn read_body(incoming: wasi::Request) -> Result<Vec<u8>, Response> {
    let (done_tx, done_rx) = wit_future::new(|| Ok(()));
    let (mut stream, _trailers) = wasi::Request::consume_body(incoming, done_rx);
    let mut body = Vec::new();
    loop {
        let (result, chunk) = stream.read(Vec::with_capacity(64 << 10)).await;
        body.extend_from_slice(&chunk);
        if body.len() > MAX_MULTIPART_BODY {
            return Err(Response::too_large());
        }
        match result {
            StreamResult::Complete(_) => {}
            StreamResult::Dropped => break,
            StreamResult::Cancelled => {
                return Err(Response::message(
                    400,
                    "The request body could not be read.",
                ));
            }
        }
    }
    drop(done_tx);
    Ok(body)
}

/// The public origin (`base_url` variable), without a trailing slash.
pub fn base_url() -> String {
    spin_sdk::variables::get("base_url")
        .unwrap_or_else(|_| "http://127.0.0.1:3000".into())
        .trim_end_matches('/')
        .to_string()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports() {
        for good in [
            "127.0.0.1:3000",
            "localhost",
            "receta.example.mx",
            "api-1.receta.mx:443",
            "[::1]:8080",
            "[2001:db8::1]",
        ] {
            assert!(is_host_and_port(good), "{good}");
        }
        for bad in [
            "",
            "evil.com/path",
            "a b",
            "host:99999",
            "host:",
            "[::1",
            "[nope]:80",
            "-x.mx",
            "x..mx",
            "<script>",
            "user@host",
        ] {
            assert!(!is_host_and_port(bad), "{bad}");
        }
    }

    #[test]
    fn links_use_the_request_host_only_when_the_service_answers_for_it() {
        let base = "https://receta.example.mx";
        assert!(answers_for("receta.example.mx", base));
        assert!(answers_for("RECETA.example.mx:443", base));
        assert!(answers_for("127.0.0.1:41000", base));
        assert!(answers_for("localhost:3000", base));
        assert!(answers_for("[::1]:3000", base));
        assert!(!answers_for("evil.example.com", base));
        assert!(!answers_for("receta.example.mx.evil.com", base));
    }
}
