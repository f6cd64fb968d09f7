//! A minimal HTTP/1.1 client for seeding: keep-alive, `Content-Length` or chunked responses.
//! (The load itself comes from `wrk`; this only creates the data.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// One keep-alive connection to `http://host:port`.
pub struct Client {
    authority: String,
    conn: Option<BufReader<TcpStream>>,
}

/// A response: status and body.
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body).with_context(|| {
            format!(
                "status {}, body is not JSON: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// Fails unless the status is `want`.
    pub fn expect(self, want: u16, what: &str) -> Result<Reply> {
        if self.status != want {
            bail!(
                "{what}: status {} (expected {want}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            );
        }
        Ok(self)
    }
}

impl Client {
    /// A client for `base` (`http://127.0.0.1:3000`).
    pub fn new(base: &str) -> Result<Client> {
        let authority = base
            .strip_prefix("http://")
            .with_context(|| format!("not an http:// URL: {base}"))?
            .trim_end_matches('/')
            .to_string();
        Ok(Client {
            authority,
            conn: None,
        })
    }

    fn connect(&self) -> Result<BufReader<TcpStream>> {
        let stream = TcpStream::connect(&self.authority)
            .with_context(|| format!("connect {}", self.authority))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(BufReader::new(stream))
    }

    /// Sends one request (JSON body when given) and reads the whole response.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> Result<Reply> {
        self.send_keyed(method, path, token, body, None)
    }

    /// A create as a careful integrator sends it: with an `Idempotency-Key`, and sent again (same
    /// key, so it is never created twice) when the answer is a 5xx or never came, up to `tries`
    /// times in all, 200 ms apart. The reply, and how many times it was sent again.
    pub fn create(
        &mut self,
        path: &str,
        token: &str,
        body: &[u8],
        key: &str,
        tries: u32,
    ) -> Result<(Reply, u32)> {
        let mut again = 0;
        loop {
            let reply = self.send_keyed("POST", path, Some(token), Some(body), Some(key));
            match reply {
                Ok(r) if r.status < 500 => return Ok((r, again)),
                Ok(_) | Err(_) if again + 1 < tries => {
                    self.conn = None;
                    again += 1;
                    std::thread::sleep(Duration::from_millis(200));
                }
                other => return other.map(|r| (r, again)),
            }
        }
    }

    fn send_keyed(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
        idempotency_key: Option<&str>,
    ) -> Result<Reply> {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.authority);
        if let Some(token) = token {
            head.push_str(&format!("Authorization: Token {token}\r\n"));
        }
        if let Some(key) = idempotency_key {
            head.push_str(&format!("Idempotency-Key: {key}\r\n"));
        }
        if let Some(body) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        let mut message = head.into_bytes();
        message.extend_from_slice(body.unwrap_or_default());
        // A kept-alive connection the server closed in the meantime fails before any byte of a
        // response: retry once on a fresh connection.
        let reused = self.conn.is_some();
        match self.exchange(&message) {
            Ok(reply) => Ok(reply),
            Err(_) if reused => {
                self.conn = None;
                self.exchange(&message)
            }
            Err(e) => Err(e),
        }
        .with_context(|| format!("{method} {path}"))
    }

    fn exchange(&mut self, message: &[u8]) -> Result<Reply> {
        if self.conn.is_none() {
            self.conn = Some(self.connect()?);
        }
        let conn = self.conn.as_mut().expect("connected");
        let result = (|| {
            conn.get_mut().write_all(message)?;
            read_response(conn)
        })();
        match result {
            Ok((reply, keep)) => {
                if !keep {
                    self.conn = None;
                }
                Ok(reply)
            }
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }
}

/// Reads one response; also says whether the connection may be reused.
fn read_response(conn: &mut BufReader<TcpStream>) -> Result<(Reply, bool)> {
    let mut line = String::new();
    if conn.read_line(&mut line)? == 0 {
        bail!("connection closed");
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {line:?}"))?;
    let mut length = None;
    let mut chunked = false;
    let mut keep = true;
    loop {
        line.clear();
        if conn.read_line(&mut line)? == 0 {
            bail!("connection closed in the headers");
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let value = value.trim();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = Some(value.parse::<usize>()?),
                "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
                "connection" => keep = !value.eq_ignore_ascii_case("close"),
                _ => {}
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line)?;
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .with_context(|| format!("bad chunk size {line:?}"))?;
            if size == 0 {
                // Trailers, then the empty line.
                loop {
                    line.clear();
                    conn.read_line(&mut line)?;
                    if line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            conn.read_exact(&mut body[start..])?;
            let mut crlf = [0u8; 2];
            conn.read_exact(&mut crlf)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        conn.read_exact(&mut body)?;
    } else if status != 204 && status != 304 {
        conn.read_to_end(&mut body)?;
        keep = false;
    }
    Ok((Reply { status, body }, keep))
}
