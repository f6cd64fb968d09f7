//! What the HTTP trigger answers by itself, and the response body that says when it was sent:
//! shared by WASIp2 requests (`mod.rs`) and WASIp3 ones (`p3.rs`).

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

/// The longest a request waits for a free instance before it is told to come back (503).
pub const QUEUE_TIMEOUT: Duration = Duration::from_secs(5);

/// An answer of the host itself (no route, a failed component), in the API's error shape:
/// `{"message": "..."}`, so a client parses every error the same way.
pub fn text(status: StatusCode, message: &'static str) -> Response<HyperOutgoingBody> {
    let body = format!("{{\"message\":\"{message}\"}}");
    let mut response = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed_unsync(),
    );
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 503 with `Retry-After`: no instance freed in time.
pub fn busy() -> Response<HyperOutgoingBody> {
    let mut busy = text(
        StatusCode::SERVICE_UNAVAILABLE,
        "The service is busy; retry in a moment.",
    );
    busy.headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    busy
}

/// A response body that says when it has been sent in full (or dropped: the client went away).
pub struct NotifyOnEnd {
    /// The guest's body.
    pub inner: HyperOutgoingBody,
    /// Told when the body ends or is dropped.
    pub ended: Option<oneshot::Sender<()>>,
}

impl hyper::body::Body for NotifyOnEnd {
    type Data = Bytes;
    type Error = <HyperOutgoingBody as hyper::body::Body>::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::result::Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, std::task::Poll::Ready(None)) {
            self.ended.take().map(|tx| tx.send(()));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for NotifyOnEnd {
    fn drop(&mut self) {
        self.ended.take().map(|tx| tx.send(()));
    }
}
