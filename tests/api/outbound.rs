//! Real HTTP listeners on 127.0.0.1 standing in for the email relay and webhook receivers, and the
//! fixtures the notification tests share (a medic with a hospital and a patient, a prescription).
//!
//! The listener speaks just enough HTTP/1.1: it reads a request (Content-Length or chunked, as
//! spin-sdk sends it), records it, answers what the test's `reply` says, and closes the connection.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{TestApp, TestMedic};
use crate::patients::{create_patient, patient_body};

/// One request a listener received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Lowercase names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the whole request had arrived.
    pub at: Instant,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "request body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Whether this is the registration's test POST rather than an event.
    pub fn is_ping(&self) -> bool {
        self.body.windows(12).any(|w| w == b"webhook.ping")
    }
}

/// What a listener answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    Status(u16),
    /// Read the request, then answer nothing until the listener is dropped.
    Hang,
    /// Answers with the status after a while (a slow receiver).
    After(Duration, u16),
}

type ReplyFn = dyn Fn(usize, &Received) -> Reply + Send + Sync;

/// A listener on 127.0.0.1; stops when dropped.
pub struct Listener {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Listener {
    /// Listens on an ephemeral port; `reply(n, request)` decides the answer to the n-th request (0-based).
    pub fn start(reply: impl Fn(usize, &Received) -> Reply + Send + Sync + 'static) -> Listener {
        Self::bind(
            TcpListener::bind("127.0.0.1:0").expect("bind"),
            Arc::new(reply),
        )
    }

    /// Answers 200 to everything.
    pub fn ok() -> Listener {
        Self::start(|_, _| Reply::Status(200))
    }

    /// Listens on a given port (to bring a "down" receiver up where the app expects it).
    pub fn on_port(
        port: u16,
        reply: impl Fn(usize, &Received) -> Reply + Send + Sync + 'static,
    ) -> Listener {
        Self::bind(
            TcpListener::bind(("127.0.0.1", port)).expect("bind the port again"),
            Arc::new(reply),
        )
    }

    fn bind(listener: TcpListener, reply: Arc<ReplyFn>) -> Listener {
        let addr = listener.local_addr().unwrap();
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopped) = (received.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (log, reply, stopped) = (log.clone(), reply.clone(), stopped.clone());
                std::thread::spawn(move || serve(stream, &log, &*reply, &stopped));
            }
        });
        Listener {
            addr,
            received,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:<port><path>`
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Everything received so far.
    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The requests that are not registration pings.
    pub fn events(&self) -> Vec<Received> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_ping())
            .collect()
    }

    /// Waits until at least `n` events (non-ping requests) arrived; panics after `within`.
    pub fn wait_for_events(&self, n: usize, within: Duration) -> Vec<Received> {
        let deadline = Instant::now() + within;
        loop {
            let events = self.events();
            if events.len() >= n {
                return events;
            }
            assert!(
                Instant::now() < deadline,
                "expected {n} requests within {within:?}, got {}: {:?}",
                events.len(),
                events
                    .iter()
                    .map(|e| String::from_utf8_lossy(&e.body)
                        .chars()
                        .take(200)
                        .collect::<String>())
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag, and wait until the port is released.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Received>>, reply: &ReplyFn, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let answer = {
        let mut log = log.lock().unwrap();
        let n = log.len();
        let answer = reply(n, &request);
        log.push(request);
        answer
    };
    let mut stream = stream;
    let answer = match answer {
        Reply::After(wait, status) => {
            let until = Instant::now() + wait;
            while Instant::now() < until && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            Reply::Status(status)
        }
        other => other,
    };
    match answer {
        Reply::After(..) => {}
        Reply::Status(status) => {
            let body = format!("{{\"status\":{status}}}");
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.flush();
        }
        Reply::Hang => {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let r = receta_test_host::read_request(reader)?;
    Some(Received {
        method: r.method,
        path: r.path,
        headers: r.headers,
        body: r.body,
        at: Instant::now(),
    })
}

/// Polls `check` every 50 ms until it returns `Some`; panics with `what` after `within`.
pub fn eventually<T>(what: &str, within: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `eventually`, with the host's log in the panic message.
pub fn eventually_in<T>(
    app: &TestApp,
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; the host's log:\n{}",
            app.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A verified medic with a hospital (ADMIN membership) and a patient with an email address.
pub struct Practice {
    pub medic: TestMedic,
    pub hospital: i64,
    pub patient: Value,
}

impl Practice {
    pub fn new(app: &TestApp, email: &str, hospital_name: &str) -> Practice {
        let (medic, hospital) = app.medic_admin_of_new_hospital(email, hospital_name);
        let mut body = patient_body("Juan Pérez");
        body["email"] = json!(format!("paciente.{email}"));
        let patient = create_patient(app, &medic, &body);
        Practice {
            medic,
            hospital,
            patient,
        }
    }

    pub fn patient_email(&self) -> &str {
        self.patient["email"].as_str().unwrap()
    }

    /// Issues a prescription at this practice's hospital and returns the create response.
    pub fn prescribe(&self, app: &TestApp) -> Value {
        let body = json!({
            "hospital": self.hospital,
            "patient": {"uid": self.patient["uid"]},
            "diagnosis": "Faringitis aguda",
            "medications": [{"presentation": "Paracetamol 500 mg tabletas", "instructions": "1 cada 8 horas si hay dolor"}],
        });
        let resp = app.post("/api/v2/rx-endpoint/", self.medic.token(), &body);
        assert_eq!(resp.status, 200, "creating a prescription: {}", resp.text());
        resp.json()
    }
}

/// The database of a running app, read-only.
pub fn db(app: &TestApp) -> rusqlite::Connection {
    let path = app.database_file();
    rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open the app's database")
}
