//! The HTTP trigger: hyper HTTP/1.1 with keep-alive, Spin's request headers, per-request time
//! limit, one log line per request, and graceful shutdown. A WASIp3 handler (the gateway) is
//! served by reused instances (`p3.rs`, `reuse.rs`: Spin's reuse flags and defaults); a WASIp2 one
//! gets one fresh `Store` per request from its `ProxyPre` (like `wasmtime serve`; `p2.rs`).
//!
//! Slow or hostile peers never hold an instance that others need: a request's head must arrive
//! within `HEADER_TIMEOUT`, and its body is read in full (bounded in size and time) before the
//! request takes an instance; once the client has the whole response, whatever the guest still
//! does moves to a separate budget of background instances, or, when that budget is full, is
//! stopped (the app's durable outbox delivers it later).

mod answer;
mod bare;
mod p2;
mod p3;
pub mod reuse;
pub mod router;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::net::TcpListener;
use tokio::sync::watch;
use wasmtime_wasi_http::handler::ProxyHandler;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

use crate::runtime::store::{ComponentContext, HostState};
use crate::trigger::{Inflight, Runner};
use answer::text;
use router::{RouteMatch, Router};
/// The longest a connection may take to send a request's head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest request target (path and query) answered: beyond it, 414.
const MAX_URI_BYTES: usize = 8 << 10;
/// Most header bytes answered: beyond them, 431. (Past hyper's own limits, a 64 KiB target, 100
/// headers or ~400 KiB of head, hyper answers by itself and closes the connection; `bare` gives
/// those answers the same JSON shape.)
const MAX_HEADER_BYTES: usize = 64 << 10;
/// The HTTP trigger: the routes and the components they run.
pub struct HttpTrigger {
    /// How components run.
    pub runner: Arc<Runner>,
    /// `[[trigger.http]]` routes.
    pub router: Router,
    /// Each routed component, by id.
    pub components: HashMap<String, HttpComponent>,
    /// Largest request body read, in bytes (larger: 413 without an instance).
    pub max_body_bytes: usize,
    /// The longest a request body may take to arrive (slower: 408 without an instance).
    pub body_timeout: Duration,
}

/// A routed component: its configuration and how its requests run.
pub struct HttpComponent {
    /// What the component may do.
    pub context: Arc<ComponentContext>,
    /// Its `wasi:http` export.
    pub handler: Handler,
}

/// How a component's requests run.
pub enum Handler {
    /// `wasi:http/incoming-handler@0.2.x`: a fresh store per request from the pre-instantiated
    /// proxy.
    P2(ProxyPre<HostState>),
    /// `wasi:http/handler@0.3.0-rc-2026-03-15`: instances reused as `spin up` reuses them
    /// (`reuse.rs`).
    P3(ProxyHandler<reuse::Reuse>),
}

/// Binds the listener. Returns it with its actual address.
pub async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener
        .local_addr()
        .context("cannot read the listening address")?;
    Ok((listener, local))
}

/// Serves HTTP until `shutdown` resolves; then stops accepting, and tells open connections to
/// finish (gracefully) once `stop` turns true.
pub async fn serve(
    http: Arc<HttpTrigger>,
    listener: TcpListener,
    local: SocketAddr,
    shutdown: impl Future<Output = ()>,
    stop: &watch::Receiver<bool>,
    inflight: &Arc<Inflight>,
) {
    tokio::pin!(shutdown);
    loop {
        let (stream, client) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // e.g. EMFILE: keep serving the connections we have.
                    eprintln!("receta: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let http = http.clone();
        let guard = inflight.enter();
        let inflight_for_conn = inflight.clone();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let service = hyper::service::service_fn(move |req| {
                let http = http.clone();
                let inflight = inflight_for_conn.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(
                        handle(http, inflight, req, client, local).await,
                    )
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(bare::JsonErrors::new(stream)), service);
            tokio::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                _ = async { stop.wait_for(|stopped| *stopped).await.map(|_| ()) } => {
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
            };
            if let Err(e) = result
                && !e.is_incomplete_message()
            {
                eprintln!("receta: connection from {client}: {e}");
            }
        });
    }
    drop(listener);
}

async fn handle(
    http: Arc<HttpTrigger>,
    inflight: Arc<Inflight>,
    req: Request<Incoming>,
    client: SocketAddr,
    local: SocketAddr,
) -> Response<HyperOutgoingBody> {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let header_bytes: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    let uri_bytes = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    let (response, component) = match http.router.route(&path) {
        _ if uri_bytes > MAX_URI_BYTES => (
            text(StatusCode::URI_TOO_LONG, "The request target is too long."),
            "-".to_string(),
        ),
        _ if header_bytes > MAX_HEADER_BYTES => (
            text(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "The request headers are too large.",
            ),
            "-".to_string(),
        ),
        None => (text(StatusCode::NOT_FOUND, "Not found."), "-".to_string()),
        Some(route) => {
            let id = route.route.component.clone();
            let component = &http.components[&id];
            let response =
                match execute(&http, &inflight, component, &route, req, client, local).await {
                    Ok(response) => response,
                    Err(e) => {
                        eprintln!("receta: {method} {path} ({id}) failed: {e:#}");
                        text(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error.")
                    }
                };
            (response, id)
        }
    };
    log_line(&format!(
        "receta: {method} {path} {} {:.1}ms {component}\n",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1000.0,
    ));
    response
}

/// Writes one line to stderr with a single `write`: `eprintln!` on the unbuffered stderr makes one
/// system call per formatted piece (a dozen for the request line), each holding stderr's lock.
fn log_line(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A request body read in full: at most `max` bytes (413 otherwise, decided from `Content-Length`
/// when it says so), within `timeout` (408 otherwise). Errors are the host's JSON answers.
async fn read_body(
    incoming: Incoming,
    parts: &http::request::Parts,
    max: usize,
    timeout: Duration,
) -> std::result::Result<Bytes, Response<HyperOutgoingBody>> {
    let too_large = || text(StatusCode::PAYLOAD_TOO_LARGE, "Request body is too large.");
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(incoming, max);
    match tokio::time::timeout(timeout, limited.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(_)) => Err(text(
            StatusCode::BAD_REQUEST,
            "The request body could not be read.",
        )),
        Err(_) => Err(text(
            StatusCode::REQUEST_TIMEOUT,
            "The request body did not arrive in time.",
        )),
    }
}

/// Spin's `spin-*` request headers.
fn spin_headers(
    route: &RouteMatch<'_>,
    req: &Request<Incoming>,
    client: SocketAddr,
    local: SocketAddr,
) -> Vec<(String, String)> {
    let host = req
        .headers()
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .unwrap_or_else(|| local.to_string());
    let path_and_query = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let raw = &route.route.raw;
    let mut headers = vec![
        (
            "spin-full-url".to_string(),
            format!("http://{host}{path_and_query}"),
        ),
        ("spin-path-info".to_string(), route.path_info.clone()),
        ("spin-matched-route".to_string(), route.route.based.clone()),
        ("spin-base-path".to_string(), "/".to_string()),
        ("spin-raw-component-route".to_string(), raw.clone()),
        (
            "spin-component-route".to_string(),
            raw.strip_suffix("/...").unwrap_or(raw).to_string(),
        ),
        ("spin-client-addr".to_string(), client.to_string()),
    ];
    for (name, value) in &route.params {
        headers.push((
            format!(
                "spin-path-match-{}",
                name.to_ascii_lowercase().replace('_', "-")
            ),
            value.clone(),
        ));
    }
    headers
}

async fn execute(
    http: &HttpTrigger,
    inflight: &Arc<Inflight>,
    component: &HttpComponent,
    route: &RouteMatch<'_>,
    req: Request<Incoming>,
    client: SocketAddr,
    local: SocketAddr,
) -> Result<Response<HyperOutgoingBody>> {
    let req = match guest_request(http, route, req, client, local).await? {
        Ok(req) => req,
        Err(refusal) => return Ok(refusal),
    };
    match &component.handler {
        Handler::P2(pre) => {
            p2::execute(&http.runner, inflight, &component.context, pre.clone(), req).await
        }
        Handler::P3(handler) => p3::execute(&http.runner, inflight, handler, req).await,
    }
}

/// The request as the guest gets it: its whole body (read without an instance: a client trickling
/// bytes holds a connection only), Spin's headers, and a `Host`; or the refusal of its body.
async fn guest_request(
    http: &HttpTrigger,
    route: &RouteMatch<'_>,
    req: Request<Incoming>,
    client: SocketAddr,
    local: SocketAddr,
) -> Result<Result<Request<Full<Bytes>>, Response<HyperOutgoingBody>>> {
    let headers = spin_headers(route, &req, client, local);
    let (parts, incoming) = req.into_parts();
    let body = match read_body(incoming, &parts, http.max_body_bytes, http.body_timeout).await {
        Ok(body) => body,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let mut req = Request::from_parts(parts, Full::new(body));
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            req.headers_mut().insert(name, value);
        }
    }
    if !req.headers().contains_key(http::header::HOST) {
        req.headers_mut().insert(
            http::header::HOST,
            HeaderValue::try_from(local.to_string()).context("listen address as Host")?,
        );
    }
    Ok(Ok(req))
}
