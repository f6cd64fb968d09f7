//! Kept-alive outbound connections: a request to a host this process has talked to lately reuses an
//! idle HTTP/1.1 connection to it instead of opening one, as Spin's outbound HTTP does by default
//! (`connection_pooling`, on in Spin 3.x and 4.x). With the database over HTTP every statement is
//! a request (issue 87): a new connection per request cost one more round trip each (a detail
//! with the database 20 ms away: 96 ms on this host, 54 ms on Spin 4.0.2, before this).
//!
//! A connection goes back to the pool once its response has been read to the end (hyper's
//! `ready`); one whose response was dropped unread, or that the server closed, is not kept. A
//! request sent on a kept connection the server had closed meanwhile is sent again on a new one
//! (hyper hands the unsent request back).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::client::conn::http1::SendRequest;
use tokio::net::TcpStream;
use tokio::time::timeout;
use wasmtime_wasi_http::p2::bindings::http::types::{DnsErrorPayload, ErrorCode};
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::p2::hyper_request_error;
use wasmtime_wasi_http::p2::types::{IncomingResponse, OutgoingRequestConfig};

/// How long an idle connection is kept (hyper's pooled client's default).
const IDLE_FOR: Duration = Duration::from_secs(90);
/// Idle connections kept per host.
const IDLE_MAX: usize = 64;

/// Where a connection goes: `host:port` and whether over TLS.
type Key = (String, bool);
type Sender = SendRequest<HyperOutgoingBody>;
/// Idle connections by where they go, each with when it went idle.
type Idle = HashMap<Key, Vec<(Sender, Instant)>>;

/// The process's idle connections.
static IDLE: LazyLock<Mutex<Idle>> = LazyLock::new(Default::default);

/// Sends `request` on a kept connection to its host, or a new one; the response as
/// `wasi:http` hands it to the guest.
pub async fn send(
    mut request: http::Request<HyperOutgoingBody>,
    config: OutgoingRequestConfig,
) -> Result<IncomingResponse, ErrorCode> {
    let key = key(request.uri(), config.use_tls)?;
    // On the wire the request names only its path (the host is in `Host`).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::try_from(path).map_err(|_| ErrorCode::HttpRequestUriInvalid)?;
    while let Some(mut sender) = take(&key) {
        let sent = timeout(config.first_byte_timeout, sender.try_send_request(request))
            .await
            .map_err(|_| ErrorCode::ConnectionReadTimeout)?;
        match sent {
            Ok(response) => return Ok(answer(key, sender, response, &config)),
            Err(mut refused) => match refused.take_message() {
                // Never sent: the connection had closed. Another one, or a new one.
                Some(unsent) => request = unsent,
                None => return Err(hyper_request_error(refused.into_error())),
            },
        }
    }
    let mut sender = connect(&key, config.connect_timeout).await?;
    let response = timeout(config.first_byte_timeout, sender.send_request(request))
        .await
        .map_err(|_| ErrorCode::ConnectionReadTimeout)?
        .map_err(hyper_request_error)?;
    Ok(answer(key, sender, response, &config))
}

/// The response for the guest; its connection goes back to the pool once the response is read.
fn answer(
    key: Key,
    mut sender: Sender,
    response: http::Response<hyper::body::Incoming>,
    config: &OutgoingRequestConfig,
) -> IncomingResponse {
    tokio::spawn(async move {
        if sender.ready().await.is_ok() {
            put(key, sender);
        }
    });
    IncomingResponse {
        resp: response.map(|body| body.map_err(hyper_request_error).boxed_unsync()),
        // The connection's task is the pool's, not this response's.
        worker: None,
        between_bytes_timeout: config.between_bytes_timeout,
    }
}

/// An idle, open connection to `key`, if one is kept.
fn take(key: &Key) -> Option<Sender> {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    let kept = idle.get_mut(key)?;
    while let Some((sender, since)) = kept.pop() {
        if since.elapsed() < IDLE_FOR && !sender.is_closed() {
            return Some(sender);
        }
    }
    None
}

fn put(key: Key, sender: Sender) {
    let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
    let kept = idle.entry(key).or_default();
    kept.retain(|(s, since)| since.elapsed() < IDLE_FOR && !s.is_closed());
    if kept.len() < IDLE_MAX {
        kept.push((sender, Instant::now()));
    }
}

/// `host:port` of `uri` (the scheme's port when it names none).
fn key(uri: &http::Uri, tls: bool) -> Result<Key, ErrorCode> {
    let authority = uri.authority().ok_or(ErrorCode::HttpRequestUriInvalid)?;
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    Ok((format!("{}:{port}", authority.host()), tls))
}

/// A new HTTP/1.1 connection to `key`, TLS checked against the web's roots when asked.
async fn connect((authority, tls): &Key, connect_timeout: Duration) -> Result<Sender, ErrorCode> {
    let tcp = timeout(connect_timeout, TcpStream::connect(authority))
        .await
        .map_err(|_| ErrorCode::ConnectionTimeout)?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrNotAvailable => dns_error("address not available"),
            _ if e.to_string().starts_with("failed to lookup address") => {
                dns_error("address not available")
            }
            _ => ErrorCode::ConnectionRefused,
        })?;
    let _ = tcp.set_nodelay(true);
    if !tls {
        return handshake(hyper_util::rt::TokioIo::new(tcp), connect_timeout).await;
    }
    let host = authority
        .rsplit_once(':')
        .map_or(authority.as_str(), |(h, _)| h);
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|_| dns_error("invalid dns name"))?;
    let stream = timeout(connect_timeout, tls_config().connect(name, tcp))
        .await
        .map_err(|_| ErrorCode::ConnectionTimeout)?
        .map_err(|_| ErrorCode::TlsProtocolError)?;
    handshake(hyper_util::rt::TokioIo::new(stream), connect_timeout).await
}

/// HTTP/1.1 over `io`; the connection's task runs until the connection closes.
async fn handshake<T>(io: T, connect_timeout: Duration) -> Result<Sender, ErrorCode>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = timeout(connect_timeout, hyper::client::conn::http1::handshake(io))
        .await
        .map_err(|_| ErrorCode::ConnectionTimeout)?
        .map_err(hyper_request_error)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// The TLS client: the web's root certificates (as `wasi:http`'s default sender).
fn tls_config() -> tokio_rustls::TlsConnector {
    static CONFIG: LazyLock<Arc<rustls::ClientConfig>> = LazyLock::new(|| {
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.into(),
        };
        Arc::new(
            rustls::ClientConfig::builder()
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    });
    tokio_rustls::TlsConnector::from(CONFIG.clone())
}

fn dns_error(rcode: &str) -> ErrorCode {
    ErrorCode::DnsError(DnsErrorPayload {
        rcode: Some(rcode.to_string()),
        info_code: Some(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A server answering `hello` to each request, keeping each connection open for `kept`
    /// requests; how many connections it accepted.
    fn server(kept: usize) -> (String, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    for _ in 0..kept {
                        let mut line = String::new();
                        // The head, up to its blank line (the requests carry no body).
                        loop {
                            line.clear();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
                        if stream.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, accepted)
    }

    async fn get(url: &str) -> Vec<u8> {
        let body = http_body_util::Empty::new()
            .map_err(|never| match never {})
            .boxed_unsync();
        let request = http::Request::get(url)
            .header("host", "localhost")
            .body(body)
            .unwrap();
        let config = OutgoingRequestConfig {
            use_tls: false,
            connect_timeout: Duration::from_secs(5),
            first_byte_timeout: Duration::from_secs(5),
            between_bytes_timeout: Duration::from_secs(5),
        };
        let answer = send(request, config).await.unwrap();
        let body = answer.resp.into_body().collect().await.unwrap();
        body.to_bytes().to_vec()
    }

    #[tokio::test]
    async fn a_connection_is_kept_for_the_next_request_and_replaced_once_closed() {
        let (url, accepted) = server(usize::MAX);
        for _ in 0..3 {
            assert_eq!(get(&url).await, b"hello");
            // The connection goes back to the pool once its answer is read.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "one connection for three"
        );

        // A server that closes each connection after one answer: each request gets a new one.
        let (url, accepted) = server(1);
        for _ in 0..3 {
            assert_eq!(get(&url).await, b"hello");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }
}
