//! Outbound POSTs with timeouts, many at once: `wasi:http/outgoing-handler` with request options
//! (connect, first byte, between bytes) and an overall deadline on the guest side, driven by
//! spin-sdk's executor so several deliveries wait concurrently.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use futures::SinkExt;
use futures::future::{Either, poll_fn, select};
use spin_executor::CancelOnDropToken;
use spin_sdk::http::{Fields, IncomingResponse, Method, OutgoingRequest, Scheme};
use spin_sdk::wit::wasi::http0_2_0::outgoing_handler;
use spin_sdk::wit::wasi::http0_2_0::types::{ErrorCode, FutureIncomingResponse, RequestOptions};
use wasi::clocks::monotonic_clock;

use crate::target::Target;

/// The longest connect timeout, whatever the overall one.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// The overall deadline is the timeout plus this.
const DEADLINE_MARGIN: Duration = Duration::from_millis(500);
/// The largest request body written before the request is handed over: what hosts buffer for a
/// body not yet sent (Wasmtime's default: one chunk of up to 1 MiB).
const WHOLE_BODY_MAX: usize = 512 * 1024;
/// How much of a response body is kept for the delivery record.
const BODY_HEAD: usize = 300;
/// How much of a response body is read at most: a timestamp reply with its certificates is a few KB.
const BODY_MAX: usize = 64 * 1024;

/// What came back.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The body, up to 64 KiB.
    pub body: Vec<u8>,
}

impl Answer {
    /// `None` for a 2xx; otherwise the attempt's error for its record: `HTTP <status>`, then the
    /// start of the body (lossy UTF-8) when there is one.
    pub fn refusal(&self) -> Option<String> {
        if (200..300).contains(&self.status) {
            return None;
        }
        let head = String::from_utf8_lossy(&self.body[..self.body.len().min(BODY_HEAD)]);
        let head = head.trim();
        Some(if head.is_empty() {
            format!("HTTP {}", self.status)
        } else {
            format!("HTTP {}: {head}", self.status)
        })
    }
}

/// Why nothing usable came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The manifest's `allowed_outbound_hosts` does not allow the target.
    Denied,
    /// No answer in time.
    Timeout,
    /// Anything else (connection refused, DNS, protocol error), described.
    Other(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Denied => f.write_str(
                "denied: the manifest's allowed_outbound_hosts does not allow this host",
            ),
            Failure::Timeout => f.write_str("timed out"),
            Failure::Other(s) => f.write_str(s),
        }
    }
}

/// POSTs `body` to `target` and waits at most `timeout` for the answer (status and body, its first
/// 64 KiB).
pub async fn post(
    target: &Target,
    headers: &[(String, Vec<u8>)],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Answer, Failure> {
    post_up_to(target, headers, body, timeout, BODY_MAX).await
}

/// [`post`], keeping up to `body_max` bytes of the answer (a database's answer is its rows).
pub async fn post_up_to(
    target: &Target,
    headers: &[(String, Vec<u8>)],
    body: Vec<u8>,
    timeout: Duration,
    body_max: usize,
) -> Result<Answer, Failure> {
    // The host's own timeouts (request options) normally end a stalled exchange first, with a precise
    // error; this deadline is the backstop (a slow body upload, a host without those options).
    let deadline = monotonic_clock::now().saturating_add(nanos(timeout + DEADLINE_MARGIN));
    let work = std::pin::pin!(exchange(target, headers, body, timeout, body_max));
    let timer = std::pin::pin!(sleep_until(deadline));
    match select(work, timer).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => Err(Failure::Timeout),
    }
}

async fn exchange(
    target: &Target,
    headers: &[(String, Vec<u8>)],
    body: Vec<u8>,
    timeout: Duration,
    body_max: usize,
) -> Result<Answer, Failure> {
    let other = |what: &str| Failure::Other(what.to_string());
    let fields = Fields::from_list(headers).map_err(|e| Failure::Other(format!("{e:?}")))?;
    let request = OutgoingRequest::new(fields);
    request
        .set_method(&Method::Post)
        .map_err(|()| other("bad method"))?;
    let scheme = if target.https {
        Scheme::Https
    } else {
        Scheme::Http
    };
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| other("bad scheme"))?;
    request
        .set_authority(Some(&target.authority))
        .map_err(|()| other("bad host"))?;
    request
        .set_path_with_query(Some(&target.path_with_query))
        .map_err(|()| other("bad path"))?;
    let options = RequestOptions::new();
    // Options a host does not support are left at its defaults.
    let _ = options.set_connect_timeout(Some(nanos(timeout.min(CONNECT_TIMEOUT))));
    let _ = options.set_first_byte_timeout(Some(nanos(timeout)));
    let _ = options.set_between_bytes_timeout(Some(nanos(timeout)));

    // A body the host can hold whole is written and finished before the request is handed over,
    // so the host sends the head and the body in one write: handed over first, the head left
    // alone, and a server's delayed ACK held the body back ~40 ms (Nagle; measured on Spin 4.0.2
    // and `receta` against sqld, p90 ~50 ms for a read of ~5 ms).
    let mut sink = request.take_body();
    let early = body.len() <= WHOLE_BODY_MAX;
    let (pending, sent) = if early {
        let sent = sink.send(body).await;
        drop(sink);
        let pending = outgoing_handler::handle(request, Some(options)).map_err(describe)?;
        (pending, sent)
    } else {
        let pending = outgoing_handler::handle(request, Some(options)).map_err(describe)?;
        let sent = sink.send(body).await;
        drop(sink);
        (pending, sent)
    };
    let response = wait_for(pending).await.map_err(describe)?;
    if let Err(e) = sent {
        return Err(Failure::Other(format!("writing the request body: {e:?}")));
    }
    let status = response.status();
    let body = read_body(&response, body_max).await;
    Ok(Answer { status, body })
}

/// Waits for the response of a sent request. Dropped early (the deadline passed), it releases its
/// pollable before the pending response: a resource must not outlive its children.
fn wait_for(
    pending: FutureIncomingResponse,
) -> impl Future<Output = Result<IncomingResponse, ErrorCode>> {
    struct Waiting {
        registration: Option<CancelOnDropToken>,
        pending: Option<FutureIncomingResponse>,
    }
    impl Drop for Waiting {
        fn drop(&mut self) {
            drop(self.registration.take());
            drop(self.pending.take());
        }
    }
    let mut state = Waiting {
        registration: None,
        pending: Some(pending),
    };
    poll_fn(move |cx| {
        let Some(pending) = state.pending.as_ref() else {
            return Poll::Ready(Err(ErrorCode::InternalError(Some(
                "polled after the end".into(),
            ))));
        };
        match pending.get() {
            Some(Ok(result)) => Poll::Ready(result),
            Some(Err(())) => Poll::Ready(Err(ErrorCode::InternalError(Some(
                "the response was already taken".into(),
            )))),
            None => {
                // Replacing the registration drops the previous one first.
                state.registration = None;
                state.registration = Some(
                    spin_executor::push_waker_and_get_token(
                        pending.subscribe(),
                        cx.waker().clone(),
                    )
                    .into(),
                );
                Poll::Pending
            }
        }
    })
}

/// The body, up to `body_max` bytes; read errors end it quietly.
async fn read_body(response: &IncomingResponse, body_max: usize) -> Vec<u8> {
    use futures::StreamExt;
    let mut stream = std::pin::pin!(response.take_body_stream());
    let mut body = Vec::new();
    while body.len() < body_max {
        match stream.next().await {
            Some(Ok(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(body_max);
    body
}

/// Resolves at `deadline` (monotonic clock, nanoseconds).
fn sleep_until(deadline: u64) -> impl Future<Output = ()> {
    let mut _registration: Option<CancelOnDropToken> = None;
    poll_fn(move |cx| {
        if monotonic_clock::now() >= deadline {
            return Poll::Ready(());
        }
        _registration = Some(
            spin_executor::push_waker_and_get_token(
                monotonic_clock::subscribe_instant(deadline),
                cx.waker().clone(),
            )
            .into(),
        );
        Poll::Pending
    })
}

/// Milliseconds since `start` on the monotonic clock.
pub fn elapsed_ms(start: u64) -> u32 {
    u32::try_from(monotonic_clock::now().saturating_sub(start) / 1_000_000).unwrap_or(u32::MAX)
}

/// Now on the monotonic clock.
pub fn monotonic_now() -> u64 {
    monotonic_clock::now()
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn describe(e: ErrorCode) -> Failure {
    match e {
        ErrorCode::HttpRequestDenied => Failure::Denied,
        ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout
        | ErrorCode::HttpResponseTimeout => Failure::Timeout,
        ErrorCode::ConnectionRefused => Failure::Other("connection refused".into()),
        ErrorCode::DnsError(d) => Failure::Other(format!(
            "DNS error: {}",
            d.rcode.unwrap_or_else(|| "no answer".into())
        )),
        other => Failure::Other(format!("{other:?}")),
    }
}
