//! The processes under test: start one, learn its address from its banner, wait until it answers,
//! read its memory from `/proc`, stop it. Plus a tiny HTTP/1.1 GET for readiness and start-up time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::project::Result;

/// A running server, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub url: String,
    pub log: PathBuf,
}

/// Where the server prints `… http://<addr>` when it listens.
#[derive(Clone, Copy, PartialEq)]
pub enum Banner {
    Stdout,
    Stderr,
}

impl Server {
    /// Starts `cmd`, whose banner line (`Serving http://…`) on `banner` gives its address; the
    /// other stream goes to `log`. Waits until `GET ready_path` answers 200.
    pub fn start(
        mut cmd: Command,
        banner: Banner,
        log: &Path,
        ready_path: &str,
        ready_headers: &[(&str, &str)],
    ) -> Result<Server> {
        let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
        let (piped, other) = (Stdio::piped(), Stdio::from(file));
        match banner {
            Banner::Stdout => cmd.stdout(piped).stderr(other),
            Banner::Stderr => cmd.stderr(piped).stdout(other),
        };
        let shown = format!("{cmd:?}");
        let mut child = cmd
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {shown}: {e}"))?;
        let stream: Box<dyn Read + Send> = match banner {
            Banner::Stdout => Box::new(child.stdout.take().expect("piped")),
            Banner::Stderr => Box::new(child.stderr.take().expect("piped")),
        };
        let (tx, rx) = mpsc::channel();
        let copy = log.with_extension("banner.log");
        std::thread::spawn(move || {
            // Keep draining, so the server never blocks on a full pipe.
            let mut out = std::fs::File::create(copy).ok();
            let mut sent = false;
            for line in BufReader::new(stream).lines().map_while(|l| l.ok()) {
                if let Some(out) = out.as_mut() {
                    let _ = writeln!(out, "{line}");
                }
                // Our servers print `Serving http://…`, gunicorn `Listening at: http://…`.
                if !sent
                    && (line.contains("Serving") || line.contains("Listening at"))
                    && let Some(i) = line.find("http://")
                {
                    let url = line[i..].split_whitespace().next().unwrap_or("");
                    let _ = tx.send(url.trim_end_matches('/').to_string());
                    sent = true;
                }
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(url) => url,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{shown} did not announce its address; see {}",
                    log.display()
                ));
            }
        };
        let server = Server {
            child,
            url,
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match get(&server.url, ready_path, ready_headers) {
                Ok((200, _)) => return Ok(server),
                _ if Instant::now() > deadline => {
                    return Err(format!(
                        "{shown} never answered 200 on {ready_path}; see {}",
                        log.display()
                    ));
                }
                _ => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident memory since start or since the last `reset_peak`, MiB.
    pub fn peak_mib(&self) -> f64 {
        proc_status_kib(self.pid(), "VmHWM") as f64 / 1024.0
    }

    /// Anonymous resident memory now (`RssAnon`: the heap, not the mapped database file), MiB.
    pub fn rss_anon_mib(&self) -> f64 {
        proc_status_kib(self.pid(), "RssAnon") as f64 / 1024.0
    }

    /// Resident memory now of the process and its children (gunicorn's master and workers), MiB.
    pub fn tree_rss_mib(&self) -> f64 {
        let pid = self.pid();
        let kib: u64 = std::iter::once(pid)
            .chain(children(pid))
            .map(|p| proc_status_kib(p, "VmRSS"))
            .sum();
        kib as f64 / 1024.0
    }

    /// Resets the peak (`VmHWM`) to the current RSS (Linux: `5` into `/proc/<pid>/clear_refs`).
    pub fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5");
    }

    /// Stops the server (SIGKILL: nothing of it is measured after this).
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        // A server started as its own process group (real Spin, whose triggers are child
        // processes) is stopped with its whole group.
        let pid = self.pid();
        if process_group(pid) == Some(pid) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The process group of `pid` (`/proc/<pid>/stat`, the field after the parent).
fn process_group(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(2)?
        .parse()
        .ok()
}

/// The direct children of `pid` (Linux: `/proc/<pid>/task/<pid>/children`).
pub fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.parse().ok())
        .collect()
}

/// A `/proc/<pid>/status` field in KiB (0 when unreadable).
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':').map(str::to_string))
        })
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// One `GET` on a fresh connection (`Connection: close`): status and body.
pub fn get(base: &str, path: &str, headers: &[(&str, &str)]) -> Result<(u16, Vec<u8>)> {
    send(base, "GET", path, headers, None)
}

/// One request on a fresh connection (`Connection: close`), a JSON body if any: status and body.
pub fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Result<(u16, Vec<u8>)> {
    let authority = base.strip_prefix("http://").unwrap_or(base);
    let mut stream = TcpStream::connect(authority).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or(""));
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).map_err(|e| e.to_string())?;
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("bad status line")?;
    let body = raw[split + 4..].to_vec();
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(&body)?
    } else {
        body
    };
    Ok((status, body))
}

/// `req` sent to `server` with its token: an error naming the answer unless it is a 2xx.
pub fn sent_ok(server: &Server, req: &super::scripts::Req) -> Result {
    let token = format!("Token {}", req.token);
    let (status, body) = send(
        &server.url,
        req.method,
        &req.path,
        &[("Authorization", &token)],
        req.body.as_deref(),
    )?;
    if !(200..300).contains(&status) {
        return Err(format!(
            "{} {} answered {status}: {}",
            req.method,
            req.path,
            String::from_utf8_lossy(&body)
        ));
    }
    Ok(())
}

fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("bad chunk")?;
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&raw[..eol])
                .split(';')
                .next()
                .unwrap_or("")
                .trim(),
            16,
        )
        .map_err(|e| format!("bad chunk size: {e}"))?;
        raw = &raw[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        out.extend_from_slice(raw.get(..size).ok_or("short chunk")?);
        raw = raw.get(size + 2..).ok_or("short chunk")?;
    }
}

/// A port that was free a moment ago.
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Process start to the first `200` of `GET path` on `port`, polling every millisecond. Returns
/// the time and the child (still running).
pub fn time_to_first_200(
    mut cmd: Command,
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    log: &Path,
) -> Result<(Duration, Child)> {
    let file = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    let base = format!("http://127.0.0.1:{port}");
    loop {
        if let Ok((200, _)) = get(&base, path, headers) {
            return Ok((started.elapsed(), child));
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no 200 within 300 s; see {}", log.display()));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited with {status}; see {}", log.display()));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks() {
        assert_eq!(
            dechunk(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n").unwrap(),
            b"hello world"
        );
    }
}
