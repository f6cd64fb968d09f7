//! Reading a request: its body whole within the size limits, its path and query, its token's
//! owner (`authenticate`, for `roles`), and its one SQLite connection.

use std::cell::OnceCell;

use serde::Serialize;
use wasip3::http::types::{self as wasi, Method};
use wasip3::wit_bindgen::StreamResult;
use wasip3::wit_future;

use common::db::Db;
use common::fields::Fields;
use common::page::Query;
use common::types::{Error, PageRequest};

use crate::bindings::auth::{self, Caller};
use crate::http::origin::{answers_for, base_url, is_host_and_port};
use crate::http::response::Response;

/// Largest JSON body accepted (decisions: 1 MiB).
pub const MAX_JSON_BODY: usize = 1 << 20;
/// Largest multipart body accepted (decisions: 5 MiB).
pub const MAX_MULTIPART_BODY: usize = 5 << 20;

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

    /// Whose token the request carries (`receta:auth/auth#authenticate`); `roles` decides what
    /// it may call.
    pub fn authenticate(&self) -> Result<Caller, Error> {
        auth::authenticate(self.db()?.lend().as_deref(), self.header("authorization"))
    }

    /// The JSON body as fields (400 for malformed JSON or a body over 1 MiB → 413 is decided earlier).
    pub fn json_fields(&self) -> Result<Fields, Error> {
        Fields::from_json(&self.body)
    }

    /// The body's fields: an HTML form's (`application/x-www-form-urlencoded`, each value text) or
    /// a JSON object's; and whether it was a form.
    pub fn form_or_json_fields(&self) -> Result<(Fields, bool), Error> {
        let form = self.header("content-type").is_some_and(|ct| {
            ct.trim_start()
                .starts_with("application/x-www-form-urlencoded")
        });
        if !form {
            return Ok((self.json_fields()?, false));
        }
        let map = form_urlencoded::parse(&self.body)
            .map(|(k, v)| (k.into_owned(), serde_json::Value::String(v.into_owned())))
            .collect();
        Ok((Fields::from_map(map), true))
    }

    /// Whether the client asked for JSON (`Accept: application/json`): the patient's page's calls
    /// answer JSON then, and HTML otherwise.
    pub fn wants_json(&self) -> bool {
        self.header("accept")
            .is_some_and(|a| a.contains("application/json"))
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
            .is_some_and(|ct| super::multipart::boundary(ct).is_some())
    }
}

/// An integer id from a path segment. Anything else (text, a number too large for an `i64`) names
/// nothing, so it is the standard 404, never a 400 or a 500.
pub fn path_id(segment: &str) -> Result<i64, Error> {
    segment.parse().map_err(|_| Error::not_found())
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

/// The paginated response, written here beside the request whose query and path give its links.
impl Response {
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
}
