//! Outbound HTTP: `allowed_outbound_hosts` (Spin's syntax) enforced on `wasi:http/outgoing-handler`.
//!
//! An entry is `scheme://host[:port]`: `*` for any scheme, `*` or `*.suffix` hosts, an IP or a
//! CIDR range, a port, a port range `a..b`, or `*` for any port; with no port, the scheme's
//! well-known port. `{{ variable }}` templates are rendered from the application variables at
//! start-up. A request matching no entry fails with `HttpRequestDenied` without touching the
//! network (`allowed`: the entries and their matching). Allowed requests get default timeouts when
//! the guest sets none, and go out on kept-alive connections (`pool`), as Spin's do.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use wasmtime_wasi::TrappableError;
use wasmtime_wasi_http::p2::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::p2::types::{
    HostFutureIncomingResponse, IncomingResponse, OutgoingRequestConfig,
};
use wasmtime_wasi_http::p2::{self, HttpResult};
use wasmtime_wasi_http::p3;
use wasmtime_wasi_http::p3::bindings::http::types::ErrorCode as ErrorCode3;

mod allowed;
mod pool;

pub use allowed::{AllowedHost, AllowedHosts};

/// Connect timeout when the guest sets none.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Time to the response head when the guest sets none.
const FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time between body chunks when the guest sets none.
const BETWEEN_BYTES_TIMEOUT: Duration = Duration::from_secs(10);

/// An outbound request as an [`Interceptor`] sees it, its body read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterceptedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The absolute URL.
    pub url: String,
    /// The headers, in order (names lowercase).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// An [`Interceptor`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterceptedResponse {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// Answers a store's allowed outbound requests instead of the network, as Spin's outbound HTTP
/// interceptor does for `spin test`: the component test harness's virtual `wasi:http`. `None` is
/// no answer: the guest sees `destination-not-found`. The allow-list is checked first either way.
pub type Interceptor = Arc<dyn Fn(InterceptedRequest) -> Option<InterceptedResponse> + Send + Sync>;

/// `wasi:http` hooks of one store: the allow-list check, then the default sender (or the store's
/// interceptor).
pub struct OutboundHooks {
    /// The component the store runs, for logs.
    pub component_id: Arc<str>,
    /// Its rendered allow-list.
    pub allowed: Arc<AllowedHosts>,
    /// Answers requests in place of the network (never set by `receta up`).
    pub intercept: Option<Interceptor>,
}

impl OutboundHooks {
    /// Whether the allow-list lets `uri` through; a refusal is logged.
    fn allows(&self, uri: &http::Uri) -> bool {
        if self.allowed.allows(uri) {
            return true;
        }
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        eprintln!(
            "receta: component {:?} denied outbound request to {}://{authority} (not in allowed_outbound_hosts)",
            self.component_id,
            uri.scheme_str().unwrap_or("?"),
        );
        false
    }
}

impl p2::WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        request: http::Request<HyperOutgoingBody>,
        mut config: OutgoingRequestConfig,
    ) -> HttpResult<HostFutureIncomingResponse> {
        if !self.allows(request.uri()) {
            return Err(ErrorCode::HttpRequestDenied.into());
        }
        if let Some(intercept) = self.intercept.clone() {
            let handle =
                wasmtime_wasi::runtime::spawn(
                    async move { Ok(intercepted(intercept, request).await) },
                );
            return Ok(HostFutureIncomingResponse::pending(handle));
        }
        // The guest's timeouts, or ours where it set none (wasi:http's defaults are 600 s).
        let defaults = OutgoingRequestConfig {
            use_tls: config.use_tls,
            connect_timeout: CONNECT_TIMEOUT,
            first_byte_timeout: FIRST_BYTE_TIMEOUT,
            between_bytes_timeout: BETWEEN_BYTES_TIMEOUT,
        };
        config.connect_timeout = config.connect_timeout.min(defaults.connect_timeout);
        config.first_byte_timeout = config.first_byte_timeout.min(defaults.first_byte_timeout);
        config.between_bytes_timeout = config
            .between_bytes_timeout
            .min(defaults.between_bytes_timeout);
        let handle =
            wasmtime_wasi::runtime::spawn(async move { Ok(pool::send(request, config).await) });
        Ok(HostFutureIncomingResponse::pending(handle))
    }
}

/// The `wasi:http@0.3` side (a WASIp3 component's own outbound requests): the same allow-list.
impl p3::WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        request: http::Request<UnsyncBoxBody<Bytes, ErrorCode3>>,
        options: Option<p3::RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), ErrorCode3>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<UnsyncBoxBody<Bytes, ErrorCode3>>,
                        Box<dyn Future<Output = Result<(), ErrorCode3>> + Send>,
                    ),
                    TrappableError<ErrorCode3>,
                >,
            > + Send,
    > {
        if !self.allows(request.uri()) {
            return Box::new(async { Err(ErrorCode3::HttpRequestDenied.into()) });
        }
        let mut options = options.unwrap_or_default();
        options.connect_timeout.get_or_insert(CONNECT_TIMEOUT);
        options.first_byte_timeout.get_or_insert(FIRST_BYTE_TIMEOUT);
        options
            .between_bytes_timeout
            .get_or_insert(BETWEEN_BYTES_TIMEOUT);
        let _ = fut;
        Box::new(async move {
            let (response, io) = p3::default_send_request(request, Some(options)).await?;
            Ok((
                response.map(BodyExt::boxed_unsync),
                Box::new(io) as Box<dyn Future<Output = Result<(), ErrorCode3>> + Send>,
            ))
        })
    }
}

/// `request`, read whole and answered by `intercept`.
async fn intercepted(
    intercept: Interceptor,
    request: http::Request<HyperOutgoingBody>,
) -> Result<IncomingResponse, ErrorCode> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes().to_vec();
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_string(), value)
        })
        .collect();
    let seen = InterceptedRequest {
        method: parts.method.to_string(),
        url: parts.uri.to_string(),
        headers,
        body,
    };
    let answer = intercept(seen).ok_or(ErrorCode::DestinationNotFound)?;
    let mut response = http::Response::builder().status(answer.status);
    for (name, value) in &answer.headers {
        response = response.header(name, value);
    }
    let body = http_body_util::Full::new(Bytes::from(answer.body))
        .map_err(|never| match never {})
        .boxed_unsync();
    let resp = response
        .body(body)
        .map_err(|_| ErrorCode::HttpProtocolError)?;
    Ok(IncomingResponse {
        resp,
        worker: None,
        between_bytes_timeout: BETWEEN_BYTES_TIMEOUT,
    })
}
