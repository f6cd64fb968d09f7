//! Writing a response: the spec's body shapes, the domain `Error` mapped to status codes, and the
//! `wasi:http` response with its body streamed after the handler returns.

use serde::Serialize;
use serde_json::{Value, json};
use wasip3::http::types::{self as wasi, ErrorCode};
use wasip3::{wit_bindgen, wit_future, wit_stream};

use common::types::Error;

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
    /// goes on after the handler returns, started before it returns (see the end).
    pub async fn send(self) -> Result<wasi::Response, ErrorCode> {
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
        // The body's write is issued before the response is handed over: a runtime then finds
        // the body ready when it writes the head and sends both in one `writev`. Handed over
        // first, the head could go alone while the write was still to start, and on real Spin
        // (Nagle on) the body then waited for the client's delayed ACK: ~40 ms on most responses
        // of Spin 4.1, one in ten on 4.0.2 (docs/bench-findings.md, "Spin 4.1"). Nothing of the
        // request is held here: its connection was dropped with it.
        wit_bindgen::yield_async().await;
        Ok(response)
    }
}
