//! The authority over HTTP/1.1 on 127.0.0.1, one thread per connection, as a PSC answers:
//! `POST` with `Content-Type: application/timestamp-query`, answer `application/timestamp-reply`.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use der::Decode;

use crate::authority::Authority;

/// How the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A timestamp of the request.
    Stamp,
    /// 503, as an authority that is down.
    Down,
    /// A valid timestamp of another digest.
    OtherDigest,
    /// A valid timestamp of the request's digest with another nonce.
    OtherNonce,
    /// A timestamp of the request made in-process (`fast.rs`: no OpenSSL process): the bench's.
    Fast,
}

/// One request the server received.
pub type Received = receta_test_host::Incoming;

struct Shared {
    authority: Authority,
    fast: crate::fast::Fast,
    mode: Mutex<Mode>,
    received: Mutex<Vec<Received>>,
    stop: AtomicBool,
}

/// A TSA listening on 127.0.0.1; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// A new authority on an ephemeral port.
    pub fn start() -> Server {
        Self::on(
            TcpListener::bind("127.0.0.1:0").expect("bind"),
            Authority::new(),
        )
    }

    /// `authority` on `listener` (a port the app already knows, to bring a down TSA up).
    pub fn on(listener: TcpListener, authority: Authority) -> Server {
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            fast: authority.fast(),
            authority,
            mode: Mutex::new(Mode::Stamp),
            received: Mutex::default(),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                std::thread::spawn(move || serve(stream, &s));
            }
        });
        Server {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:<port><path>`
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `http://127.0.0.1:<port>`: its `allowed_outbound_hosts` entry.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn authority(&self) -> &Authority {
        &self.shared.authority
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// The requests received so far, oldest first.
    pub fn requests(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let Some(request) = receta_test_host::read_request(&mut BufReader::new(clone)) else {
        return;
    };
    shared.received.lock().unwrap().push(request.clone());
    let mode = *shared.mode.lock().unwrap();
    let authority = &shared.authority;
    let (status, body) = match (mode, digest_of(&request.body)) {
        (Mode::Down, _) => (503, b"down for maintenance".to_vec()),
        (_, None) => (400, b"not a TimeStampReq".to_vec()),
        (Mode::Stamp, Some(_)) => (200, authority.reply(&request.body)),
        (Mode::OtherDigest, Some(_)) => (200, authority.reply_for_digest(&"ab".repeat(32))),
        (Mode::OtherNonce, Some(digest)) => (200, authority.reply_for_digest(&digest)),
        (Mode::Fast, Some(_)) => match shared.fast.reply(&request.body) {
            Some(reply) => (200, reply),
            None => (500, b"could not sign".to_vec()),
        },
    };
    let kind = if status == 200 {
        "application/timestamp-reply"
    } else {
        "text/plain"
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
    let _ = stream.flush();
}

/// The SHA-256 imprint of a `TimeStampReq`, hex.
fn digest_of(query: &[u8]) -> Option<String> {
    let req = x509_tsp::TimeStampReq::from_der(query).ok()?;
    let bytes = req.message_imprint.hashed_message.as_bytes();
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
