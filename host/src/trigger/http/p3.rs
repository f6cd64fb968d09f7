//! A request to a WASIp3 component (`wasi:http/handler@0.3.0-rc-2026-03-15`): handed to the
//! component's `ProxyHandler`, which runs it on a reused instance (`reuse.rs`), as Spin 4.0.2's
//! `wasip3` executor does.
//!
//! A request holds one of the host's instance permits from its start until the client has the
//! whole response, as a WASIp2 request does; whatever the guest still does after that runs on
//! its instance and counts against the instance's own limits (its reuse count, its concurrency).

use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use tokio::sync::oneshot;
use wasmtime::component::Accessor;
use wasmtime_wasi_http::handler::{Proxy, ProxyHandler};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::p3::bindings::Service;
use wasmtime_wasi_http::p3::bindings::http::types::ErrorCode;
use wasmtime_wasi_http::p3::{self, WasiHttpView};

use super::answer::{NotifyOnEnd, QUEUE_TIMEOUT, busy};
use super::reuse::Reuse;
use crate::runtime::store::HostState;
use crate::trigger::{Inflight, Runner};

/// Runs `req` (its body already read) on an instance of the component behind `handler`, once
/// `runner` admits it.
pub(super) async fn execute(
    runner: &Runner,
    inflight: &Arc<Inflight>,
    handler: &ProxyHandler<Reuse>,
    req: Request<Full<Bytes>>,
) -> Result<Response<HyperOutgoingBody>> {
    let Some(permit) = runner.admit(Some(QUEUE_TIMEOUT)).await? else {
        return Ok(busy());
    };
    let req = with_absolute_uri(req)?;
    let req = req.map(|body| body.map_err(|never| -> ErrorCode { match never {} }));
    let (request, request_io) = p3::Request::from_http(req);

    let (tx, rx) = oneshot::channel();
    let guard = inflight.enter();
    handler.spawn(
        None,
        Box::new(move |store: &Accessor<HostState>, guest: &Proxy| {
            Box::pin(async move {
                let _guard = guard;
                let _permit = permit;
                let Proxy::P3(guest) = guest else {
                    let _ = tx.send(Err(anyhow!("not a WASIp3 component")));
                    return;
                };
                match handle(store, guest, request, request_io).await {
                    Ok(response) => {
                        // The store's event loop must go on until the client has the whole
                        // body: the guest writes it.
                        let (sent_tx, sent_rx) = oneshot::channel();
                        let response = response.map(|body| {
                            NotifyOnEnd {
                                inner: body.map_err(p3_to_p2).boxed_unsync(),
                                ended: Some(sent_tx),
                            }
                            .boxed_unsync()
                        });
                        if tx.send(Ok(response)).is_ok() {
                            let _ = sent_rx.await;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e.into()));
                    }
                }
            })
        }),
    );
    rx.await
        .map_err(|_| anyhow!("the instance stopped before the guest answered"))?
}

/// The guest's `handle` of `request`, and its response as hyper writes it.
async fn handle(
    store: &Accessor<HostState>,
    guest: &Service,
    request: p3::Request,
    request_io: impl Future<Output = std::result::Result<(), ErrorCode>> + Send + 'static,
) -> wasmtime::Result<Response<UnsyncBoxBody<Bytes, ErrorCode>>> {
    let request =
        store.with(|mut store| WasiHttpView::http(store.data_mut()).table.push(request))?;
    let response = guest
        .wasi_http_handler()
        .call_handle(store, request)
        .await?
        .map_err(|code| wasmtime::format_err!("the guest answered with error code {code:?}"))?;
    store.with(|mut store| {
        let response = WasiHttpView::http(store.data_mut())
            .table
            .delete(response)?;
        response.into_http(&mut store, request_io)
    })
}

/// The request's URI with `http://<Host>` in front, as Spin hands it to the guest. A `Host` that
/// is no authority stays out of the URI: the guest reads the header and answers it (400).
fn with_absolute_uri(mut req: Request<Full<Bytes>>) -> Result<Request<Full<Bytes>>> {
    let Some(authority) = req
        .headers()
        .get(http::header::HOST)
        .and_then(|host| host.to_str().ok())
        .and_then(|host| host.parse::<http::uri::Authority>().ok())
    else {
        return Ok(req);
    };
    let mut parts = req.uri().clone().into_parts();
    parts.scheme = Some(http::uri::Scheme::HTTP);
    parts.authority = Some(authority);
    if parts.path_and_query.is_none() {
        parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
    }
    *req.uri_mut() = http::Uri::from_parts(parts).context("an invalid request target")?;
    Ok(req)
}

/// The WASIp3 error of a response body, as the WASIp2 body type the server writes carries it.
fn p3_to_p2(code: ErrorCode) -> wasmtime_wasi_http::p2::bindings::http::types::ErrorCode {
    eprintln!("receta: the guest's response body failed: {code:?}");
    wasmtime_wasi_http::p2::bindings::http::types::ErrorCode::InternalError(Some(format!(
        "{code:?}"
    )))
}
