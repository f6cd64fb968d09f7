//! Serving HTTP: hyper HTTP/1.1 with keep-alive, one fresh `Store` per request from the
//! component's `ProxyPre` (like `wasmtime serve`), Spin's request headers, per-request time limit,
//! one log line per request, and graceful shutdown.
//!
//! The guest's `handle` runs in its own task that owns the store: a guest may set the response
//! and keep working (for example to deliver an email); that work may run until the time limit.
//!
//! Slow or hostile peers never hold an instance that others need: a request's head must arrive
//! within `HEADER_TIMEOUT`, and its body is read in full (bounded in size and time) before the
//! request takes an instance; once the client has the whole response, whatever the guest still
//! does moves to a separate budget of background instances, or, when that budget is full, is
//! stopped (the app's durable outbox delivers it later).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use tokio::net::TcpListener;
use tokio::sync::{Notify, oneshot, watch};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

use crate::app::{App, LoadedComponent};
use crate::router::RouteMatch;
use crate::state::new_store;

/// How long shutdown waits for in-flight requests beyond their own time limit.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The longest a connection may take to send a request's head.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest request target (path and query) answered: beyond it, 414.
const MAX_URI_BYTES: usize = 8 << 10;
/// Most header bytes answered: beyond them, 431. (Past hyper's own buffer, ~400 KiB, hyper closes
/// the connection with its bare 431 before any of this runs.)
const MAX_HEADER_BYTES: usize = 64 << 10;
/// The longest a request waits for a free instance before it is told to come back (503).
const QUEUE_TIMEOUT: Duration = Duration::from_secs(5);

/// Counts in-flight work (connections, guest tasks) so shutdown can wait for it.
#[derive(Default)]
pub struct Inflight {
    count: AtomicUsize,
    idle: Notify,
}

/// Decrements the [`Inflight`] count when dropped.
pub struct InflightGuard(Arc<Inflight>);

impl Inflight {
    /// Registers one piece of work.
    pub fn enter(self: &Arc<Self>) -> InflightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InflightGuard(self.clone())
    }

    /// Waits until nothing is in flight.
    pub async fn wait_idle(&self) {
        loop {
            let notified = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
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

/// Serves HTTP (and runs the cron schedules) until `shutdown` resolves, then stops accepting and
/// waits (bounded) for in-flight work.
pub async fn serve(
    app: Arc<App>,
    listener: TcpListener,
    local: SocketAddr,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let inflight = Arc::new(Inflight::default());
    let (stop_tx, stop_rx) = watch::channel(false);
    // Other triggers run beside HTTP and stop with it.
    crate::cron::start(&app, &stop_rx, &inflight);
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
        let app = app.clone();
        let guard = inflight.enter();
        let inflight_for_conn = inflight.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let service = hyper::service::service_fn(move |req| {
                let app = app.clone();
                let inflight = inflight_for_conn.clone();
                async move {
                    Ok::<_, std::convert::Infallible>(
                        handle(app, inflight, req, client, local).await,
                    )
                }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
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
    eprintln!("receta: shutting down: finishing in-flight requests");
    let _ = stop_tx.send(true);
    let bound = app.request_timeout + SHUTDOWN_GRACE;
    if tokio::time::timeout(bound, inflight.wait_idle())
        .await
        .is_err()
    {
        eprintln!(
            "receta: some requests were still running after {} ms; exiting anyway",
            bound.as_millis()
        );
    }
    Ok(())
}

/// An answer of the host itself (no route, a failed component), in the API's error shape:
/// `{"message": "..."}`, so a client parses every error the same way.
fn text(status: StatusCode, message: &'static str) -> Response<HyperOutgoingBody> {
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

async fn handle(
    app: Arc<App>,
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
    let (response, component) = match app.router.route(&path) {
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
            let component = &app.components[&id];
            let response =
                match execute(&app, &inflight, component, &route, req, client, local).await {
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

/// A response body that says when it has been sent in full (or dropped: the client went away).
struct NotifyOnEnd {
    inner: HyperOutgoingBody,
    ended: Option<oneshot::Sender<()>>,
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
    app: &App,
    inflight: &Arc<Inflight>,
    component: &LoadedComponent,
    route: &RouteMatch<'_>,
    req: Request<Incoming>,
    client: SocketAddr,
    local: SocketAddr,
) -> Result<Response<HyperOutgoingBody>> {
    let headers = spin_headers(route, &req, client, local);
    // The whole body first, without an instance: a client trickling bytes holds a connection only.
    let (parts, incoming) = req.into_parts();
    let body = match read_body(incoming, &parts, app.max_body_bytes, app.body_timeout).await {
        Ok(body) => body,
        Err(refusal) => return Ok(refusal),
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

    let Ok(permit) =
        tokio::time::timeout(QUEUE_TIMEOUT, app.instance_permits.clone().acquire_owned()).await
    else {
        let mut busy = text(
            StatusCode::SERVICE_UNAVAILABLE,
            "The service is busy; retry in a moment.",
        );
        busy.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
        return Ok(busy);
    };
    let permit = permit.context("the instance pool is closed")?;
    // The instance's slot: the request's permit, later swapped for a background one.
    let slot = Arc::new(std::sync::Mutex::new(Some(permit)));
    let task_slot = slot.clone();
    let timeout = app.request_timeout;
    let deadline = Instant::now() + timeout;
    let mut store = new_store(&app.engine, component.context.clone(), deadline);
    let Some(pre) = component.http.clone() else {
        bail!(
            "component {:?} does not export wasi:http/incoming-handler",
            component.context.id
        );
    };

    let (sender, receiver) = oneshot::channel();
    let request = store
        .data_mut()
        .http()
        .new_incoming_request(Scheme::Http, req)
        .map_err(anyhow::Error::from)
        .context("cannot pass the request to the guest")?;
    let outparam = store
        .data_mut()
        .http()
        .new_response_outparam(sender)
        .map_err(anyhow::Error::from)
        .context("cannot create the response outparam")?;
    let id = component.context.id.clone();
    let guard = inflight.enter();
    let task = tokio::spawn(async move {
        let _guard = guard;
        let run = async {
            let proxy = pre
                .instantiate_async(&mut store)
                .await
                .map_err(anyhow::Error::from)
                .context("cannot instantiate the component")?;
            proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, request, outparam)
                .await
                .map_err(anyhow::Error::from)
        };
        let result = match tokio::time::timeout_at(deadline.into(), run).await {
            Ok(result) => result,
            Err(_) => Err(anyhow!("time limit of {} ms exceeded", timeout.as_millis())),
        };
        // Free the instance slot before the permit that stands for it.
        drop(store);
        drop(task_slot.lock().map(|mut p| p.take()));
        result
    });

    match receiver.await {
        Ok(Ok(response)) => {
            // Once the client has the whole response, the guest's remaining work (if any) is
            // background work: it leaves the request's instance slot to requests.
            let (sent_tx, sent_rx) = oneshot::channel();
            let response = response.map(|body| {
                NotifyOnEnd {
                    inner: body,
                    ended: Some(sent_tx),
                }
                .boxed_unsync()
            });
            let background = app.background_permits.clone();
            tokio::spawn(async move {
                let _ = sent_rx.await;
                if !task.is_finished() {
                    match background.try_acquire_owned() {
                        Ok(permit) => {
                            let request_permit =
                                slot.lock().ok().and_then(|mut p| p.replace(permit));
                            drop(request_permit);
                        }
                        Err(_) => {
                            eprintln!(
                                "receta: component {id}: no background instance free for its work                                  after the response; stopped (the outbox retries what it had left)"
                            );
                            task.abort();
                        }
                    }
                }
                match task.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        eprintln!("receta: component {id} failed after responding: {e:#}")
                    }
                    Err(e) if e.is_cancelled() => {}
                    Err(e) => eprintln!("receta: component {id} task failed after responding: {e}"),
                }
                drop(slot.lock().map(|mut p| p.take()));
            });
            Ok(response)
        }
        Ok(Err(code)) => Err(anyhow!("the guest answered with error code {code:?}")),
        Err(_) => match task.await {
            Ok(Ok(())) => Err(anyhow!("the guest returned without setting a response")),
            Ok(Err(e)) => Err(e),
            Err(e) => Err(anyhow!("the guest task failed: {e}")),
        },
    }
}
