//! The patient landing in a real browser: headless Chromium (Debian's `chromium`, which
//! `cargo xtask test` installs when missing), driven over the DevTools protocol. It opens the
//! `cta_link` of a freshly issued prescription at a phone's size, checks the visible text and that
//! the style sheet passed the CSP, clicks the PDF download and compares the file with the stored PDF,
//! and saves a screenshot (`landing-phone.png` in the test's temporary target directory; with
//! `RECETA_SCREENSHOTS=docs` also `docs/landing-phone.png`, the one the README shows).

use std::io::{BufRead, BufReader, ErrorKind};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

use crate::fixtures::{MEDIC_NAME, create_campaign, issue, medications};
use crate::helpers::{ADMIN_TOKEN, repo_root, spawn_app_at_own_base_url};

/// A phone's viewport (CSS pixels) and pixel ratio.
const PHONE: (u32, u32, u32) = (390, 844, 2);
/// How long any one browser step may take.
const STEP: Duration = Duration::from_secs(60);

/// The browser binary: `$CHROMIUM`, else `chromium` (Debian) or `chromium-browser` on the PATH.
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return PathBuf::from(path);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "headless Chromium is needed for this test: `cargo xtask test` installs Debian's `chromium` \
         package when it is missing (or `apt-get install chromium`, or set CHROMIUM=/path/to/it)"
    );
}

/// A headless Chromium with its own profile, killed when dropped.
struct Browser {
    child: Child,
    _profile: tempfile::TempDir,
    /// `ws://127.0.0.1:<port>/devtools/browser/<id>`
    endpoint: String,
}

impl Browser {
    fn launch() -> Browser {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--hide-scrollbars",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start chromium");
        // Chromium prints `DevTools listening on ws://…` on stderr once it accepts connections.
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.trim().strip_prefix("DevTools listening on ") {
                    let _ = tx.send(Ok(url.to_string()));
                }
                lines.push(line);
                if lines.len() > 200 {
                    lines.remove(0);
                }
            }
            let _ = tx.send(Err(lines.join("\n")));
        });
        let endpoint = match rx.recv_timeout(STEP) {
            Ok(Ok(url)) => url,
            Ok(Err(log)) => {
                let _ = child.kill();
                panic!("chromium exited before listening:\n{log}");
            }
            Err(_) => {
                let _ = child.kill();
                panic!("chromium did not start within {STEP:?}");
            }
        };
        Browser {
            child,
            _profile: profile,
            endpoint,
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A DevTools protocol connection (browser target; page commands go to a flat session).
struct Cdp {
    ws: WebSocket<TcpStream>,
    next_id: u64,
    /// Events received while waiting for something else, in order.
    events: Vec<Value>,
}

impl Cdp {
    fn connect(endpoint: &str) -> Cdp {
        let authority = endpoint
            .strip_prefix("ws://")
            .and_then(|rest| rest.split('/').next())
            .expect("a ws:// endpoint");
        let stream = TcpStream::connect(authority).expect("connect to DevTools");
        // The handshake blocks (up to a step); afterwards reads wake up often, so waits can time out.
        stream.set_read_timeout(Some(STEP)).unwrap();
        let (ws, _) = tungstenite::client(endpoint, stream)
            .unwrap_or_else(|e| panic!("DevTools handshake with {endpoint}: {e}"));
        ws.get_ref()
            .set_read_timeout(Some(Duration::from_millis(250)))
            .unwrap();
        Cdp {
            ws,
            next_id: 1,
            events: Vec::new(),
        }
    }

    /// The next message, or `None` when nothing arrived within the read timeout.
    fn read(&mut self) -> Option<Value> {
        match self.ws.read() {
            Ok(Message::Text(text)) => {
                Some(serde_json::from_str(text.as_str()).expect("DevTools sends JSON"))
            }
            Ok(_) => None,
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                None
            }
            Err(e) => panic!("DevTools connection: {e}"),
        }
    }

    /// Sends a command (to `session` when given) and returns its `result`; panics on an error.
    fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.ws
            .send(Message::text(message.to_string()))
            .expect("send to DevTools");
        let deadline = Instant::now() + STEP;
        while Instant::now() < deadline {
            let Some(msg) = self.read() else { continue };
            if msg["id"] == id {
                if let Some(error) = msg.get("error") {
                    panic!("{method} failed: {error}");
                }
                return msg["result"].clone();
            }
            if msg.get("method").is_some() {
                self.events.push(msg);
            }
        }
        panic!("{method}: no answer within {STEP:?}");
    }

    /// Waits for the first event (already received or coming) that `matches`, and removes it.
    fn wait_event(&mut self, what: &str, matches: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + STEP;
        loop {
            if let Some(i) = self.events.iter().position(&matches) {
                return self.events.remove(i);
            }
            assert!(Instant::now() < deadline, "no {what} within {STEP:?}");
            if let Some(msg) = self.read()
                && msg.get("method").is_some()
            {
                self.events.push(msg);
            }
        }
    }

    /// Evaluates `expression` in the page and returns its value.
    fn eval(&mut self, session: &str, expression: &str) -> Value {
        let result = self.call(
            Some(session),
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression}: {exception}");
        }
        result["result"]["value"].clone()
    }
}

fn wait_for_file(dir: &Path) -> PathBuf {
    let deadline = Instant::now() + STEP;
    loop {
        let files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.to_string_lossy().ends_with(".crdownload"))
            .collect();
        if let [file] = files.as_slice() {
            return file.clone();
        }
        assert!(Instant::now() < deadline, "no downloaded file in {dir:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_patient_opens_the_link_on_a_phone_and_downloads_the_pdf() {
    let app = spawn_app_at_own_base_url();
    // Two pharmacies: the default one (recommended) and another, with branches.
    create_campaign(
        &app,
        &json!({
            "short_name": "ahorro",
            "display_name": "Farmacias del Ahorro",
            "display_phone": "55 5000 1234",
            "display_contact": "Abierto todos los días de 7:00 a 23:00",
            "cta_link": "https://www.ahorro.example.mx/surtir",
            "main_site_redirect": "https://www.ahorro.example.mx/",
            "is_default": true,
            "branches": [
                {"Determinante": 1012, "name": "Roma Norte", "Formato": "Farmacia", "Estado": "Ciudad de México", "address": "Av. Álvaro Obregón 120, Roma Nte."},
                {"Determinante": 2024, "name": "Condesa", "Formato": "Express", "Estado": "Ciudad de México", "address": "Av. Tamaulipas 45, Condesa"},
            ],
        }),
    );
    create_campaign(
        &app,
        &json!({
            "short_name": "benavides",
            "display_name": "Farmacias Benavides",
            "display_phone": "81 8000 0000",
            "cta_link": "https://www.benavides.example.mx/receta",
            "branches": [{"Determinante": 77, "name": "Del Valle", "Estado": "Ciudad de México", "address": "Insurgentes Sur 1234"}],
        }),
    );
    let issued = issue(&app, "browser@example.mx", medications());
    let signature = issued.signature().to_string();
    let link = issued.rx["cta_link"].as_str().unwrap().to_string();
    assert_eq!(
        link,
        app.url(&format!("/rx/{signature}")),
        "cta_link is this app's page"
    );
    let stored_pdf = {
        let resp = app.get(&format!("/api/v2/rx/pdf/{signature}/"), Some(ADMIN_TOKEN));
        BASE64.decode(resp.json()["pdf"].as_str().unwrap()).unwrap()
    };

    let browser = Browser::launch();
    let mut cdp = Cdp::connect(&browser.endpoint);
    let downloads = tempfile::tempdir().unwrap();
    cdp.call(
        None,
        "Browser.setDownloadBehavior",
        json!({"behavior": "allowAndName", "downloadPath": downloads.path(), "eventsEnabled": true}),
    );
    let target = cdp.call(None, "Target.createTarget", json!({"url": "about:blank"}));
    let session = cdp.call(
        None,
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let s = Some(session.as_str());
    for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
        cdp.call(s, domain, json!({}));
    }
    let (width, height, ratio) = PHONE;
    cdp.call(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": height, "deviceScaleFactor": ratio, "mobile": true}),
    );

    // Open the link as the patient would.
    let navigation = cdp.call(s, "Page.navigate", json!({"url": link}));
    assert!(navigation.get("errorText").is_none(), "{navigation}");
    cdp.wait_event("Page.loadEventFired", |e| {
        e["method"] == "Page.loadEventFired" && e["sessionId"] == session.as_str()
    });
    assert_eq!(cdp.eval(&session, "document.title"), "Tu receta médica");
    assert_eq!(cdp.eval(&session, "document.documentElement.lang"), "es-MX");

    // The visible text (innerText is what is rendered) has the medications, quantities and
    // instructions, the medic and the pharmacies.
    let text = cdp.eval(&session, "document.body.innerText");
    let text = text.as_str().unwrap();
    for expected in [
        "Hola, Mariana",
        MEDIC_NAME,
        "Amoxicilina cápsulas 500 mg",
        "3 cajas",
        "1 cápsula cada 8 horas durante 7 días",
        "Paracetamol 500 mg tabletas",
        "1 tableta cada 8 horas si hay fiebre o dolor",
        "Descargar receta",
        "Farmacias del Ahorro",
        "Farmacias Benavides",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} not visible in:\n{text}"
        );
    }
    // The style sheet was allowed by the CSP (the download button is styled), and nothing was
    // refused: no CSP report in the console.
    let background = cdp.eval(
        &session,
        "getComputedStyle(document.getElementById('descargar')).backgroundColor",
    );
    assert_eq!(
        background, "rgb(11, 110, 110)",
        "the inline style sheet did not apply"
    );
    let overflow = cdp.eval(
        &session,
        "document.documentElement.scrollWidth <= window.innerWidth",
    );
    assert_eq!(overflow, true, "the page is wider than the phone");
    let refused: Vec<&Value> = cdp
        .events
        .iter()
        .filter(|e| e.to_string().contains("Content Security Policy"))
        .collect();
    assert!(refused.is_empty(), "CSP violations: {refused:?}");

    // A screenshot of the whole page at the phone's width.
    let shot = cdp.call(
        s,
        "Page.captureScreenshot",
        json!({"format": "png", "captureBeyondViewport": true}),
    );
    let png = BASE64.decode(shot["data"].as_str().unwrap()).unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let saved = Path::new(env!("CARGO_TARGET_TMPDIR")).join("landing-phone.png");
    std::fs::write(&saved, &png).unwrap();
    if std::env::var("RECETA_SCREENSHOTS").as_deref() == Ok("docs") {
        std::fs::write(repo_root().join("docs/landing-phone.png"), &png).unwrap();
    }
    eprintln!("screenshot: {}", saved.display());

    // Click the download button as a finger would: scroll it into view, press and release at its
    // centre.
    let rect = cdp.eval(
        &session,
        "(() => { const b = document.getElementById('descargar'); b.scrollIntoView({block: 'center'}); \
         const r = b.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; })()",
    );
    for kind in ["mousePressed", "mouseReleased"] {
        cdp.call(
            s,
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": rect["x"], "y": rect["y"], "button": "left", "clickCount": 1}),
        );
    }
    let begin = cdp.wait_event("Browser.downloadWillBegin", |e| {
        e["method"] == "Browser.downloadWillBegin"
    });
    assert_eq!(
        begin["params"]["suggestedFilename"],
        format!("receta-{}.pdf", &signature[..8])
    );
    let guid = begin["params"]["guid"].clone();
    let done = cdp.wait_event("a finished download", |e| {
        e["method"] == "Browser.downloadProgress"
            && e["params"]["guid"] == guid
            && e["params"]["state"] != "inProgress"
    });
    assert_eq!(done["params"]["state"], "completed", "{done}");
    let file = wait_for_file(downloads.path());
    let downloaded = std::fs::read(&file).unwrap();
    assert!(downloaded.starts_with(b"%PDF-"));
    assert_eq!(
        downloaded, stored_pdf,
        "the download is the PDF stored at issue"
    );

    let _ = cdp.call(None, "Browser.close", json!({}));
}
