//! A request to a WASIp2 component (`wasi:http/incoming-handler`): a fresh instance in a `Store`
//! of its own, from the component's `ProxyPre`, as `wasmtime serve` does.
//!
//! The guest's `handle` runs in its own task that owns the store: it may set the response and keep
//! working (the app's own components do not: they deliver through the outbox and the background
//! jobs); that work may run until the time limit, on a background permit once the client has the
//! whole response (`after_response`).

use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use tokio::sync::{Semaphore, oneshot};
use wasmtime_wasi_http::p2::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::{ErrorCode, Scheme};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;

use super::answer::{NotifyOnEnd, QUEUE_TIMEOUT, busy};
use crate::runtime::store::{ComponentContext, HostState};
use crate::trigger::{Inflight, Runner, Slot, until_deadline};

/// A WASIp2 request: a fresh instance in a store of its own, run until the deadline; the response
/// as soon as the guest sets it (its remaining work goes on in the background, `after_response`).
pub(super) async fn execute(
    runner: &Runner,
    inflight: &Arc<Inflight>,
    context: &Arc<ComponentContext>,
    pre: ProxyPre<HostState>,
    req: Request<Full<Bytes>>,
) -> Result<Response<HyperOutgoingBody>> {
    let req = req.map(|body| body.map_err(|never| -> ErrorCode { match never {} }));
    let Some(run) = runner.start(context, Some(QUEUE_TIMEOUT)).await? else {
        return Ok(busy());
    };
    // The instance's slot: the request's permit, later swapped for a background one.
    let slot = run.slot;
    let task_slot = slot.clone();
    let (deadline, timeout) = (run.deadline, runner.timeout);
    let mut store = run.store;

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
        let result = until_deadline(deadline, timeout, run).await;
        // Free the instance slot before the permit that stands for it.
        drop(store);
        drop(task_slot.lock().map(|mut p| p.take()));
        result
    });

    match receiver.await {
        Ok(Ok(response)) => {
            let (sent_tx, sent_rx) = oneshot::channel();
            let response = response.map(|body| {
                NotifyOnEnd {
                    inner: body,
                    ended: Some(sent_tx),
                }
                .boxed_unsync()
            });
            let id = context.id.clone();
            let background = runner.background_permits.clone();
            tokio::spawn(after_response(id, sent_rx, task, slot, background));
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

/// Once the client has the whole response (`sent`), the guest's remaining work (if any) is
/// background work: it leaves the request's instance slot to requests, for a background permit,
/// or is stopped when none is free.
async fn after_response(
    id: Arc<str>,
    sent: oneshot::Receiver<()>,
    task: tokio::task::JoinHandle<Result<()>>,
    slot: Slot,
    background: Arc<Semaphore>,
) {
    let _ = sent.await;
    if !task.is_finished() {
        match background.try_acquire_owned() {
            Ok(permit) => {
                let request_permit = slot.lock().ok().and_then(|mut p| p.replace(permit));
                drop(request_permit);
            }
            Err(_) => {
                eprintln!(
                    "receta: component {id}: no background instance free for its work after the \
                     response; stopped (the outbox retries what it had left)"
                );
                task.abort();
            }
        }
    }
    match task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("receta: component {id} failed after responding: {e:#}"),
        Err(e) if e.is_cancelled() => {}
        Err(e) => eprintln!("receta: component {id} task failed after responding: {e}"),
    }
    drop(slot.lock().map(|mut p| p.take()));
}
