//! hyper's own answers in the API's error shape.
//!
//! hyper answers some requests itself, before the host or any component sees them: a head it
//! cannot parse (400), a request target past its 64 KiB limit (414), more than 100 headers or a
//! head past its buffer (431). It writes them with an empty body and no `Content-Type`, and closes
//! the connection. hyper has no hook for these, so the connection's writer recognises such a bare
//! error response (status 400, 414 or 431, `content-length: 0`, no `content-type`, nothing after
//! the head: the host and the components always send a type and a body with an error) and sends it
//! as `{"message": "..."}` JSON instead. The limits are hyper's, unchanged.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection whose bare error responses are rewritten (`rewrite`).
pub struct JsonErrors<IO> {
    inner: IO,
    /// A rewritten response being written: its bytes, how many went out, and how many bytes of
    /// hyper's buffer it stands for (reported once it is all out).
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<IO> JsonErrors<IO> {
    pub fn new(inner: IO) -> Self {
        JsonErrors {
            inner,
            pending: None,
        }
    }
}

/// The message for each status hyper answers by itself.
fn message(status: &str) -> Option<&'static str> {
    match status {
        "400" => Some("The request could not be parsed as HTTP/1.1."),
        "414" => Some("The request target is too long."),
        "431" => Some("The request headers are too large."),
        _ => None,
    }
}

/// `buf` as a JSON error response, when it is exactly one bare error response of hyper's.
pub fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    let head = buf.strip_suffix(b"\r\n\r\n")?;
    let head = std::str::from_utf8(head).ok()?;
    if head.contains("\r\n\r\n") {
        return None;
    }
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status = status_line.strip_prefix("HTTP/1.1 ")?.get(..3)?;
    let message = message(status)?;
    let mut kept = Vec::new();
    let mut empty = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-type" | "transfer-encoding" => return None,
            "content-length" => empty = value.trim() == "0",
            _ => kept.push(line),
        }
    }
    if !empty {
        return None;
    }
    let body = format!("{{\"message\":\"{message}\"}}");
    let mut out = format!("{status_line}\r\n");
    for line in kept {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("content-type: application/json\r\n");
    out.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    Some(out.into_bytes())
}

impl<IO: AsyncWrite + Unpin> JsonErrors<IO> {
    /// Writes the pending rewritten response out; then reports the bytes of hyper's it replaced.
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, _)) = self.pending.as_mut()
            && *written < bytes.len()
        {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *written += n;
        }
        let replaced = self.pending.take().map_or(0, |(_, _, replaced)| replaced);
        Poll::Ready(Ok(replaced))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for JsonErrors<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // While a rewrite is under way hyper offers the same buffer again: keep writing ours.
        if self.pending.is_none() {
            match rewrite(buf) {
                Some(bytes) => self.pending = Some((bytes, 0, buf.len())),
                None => return Pin::new(&mut self.inner).poll_write(cx, buf),
            }
        }
        self.drive(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.pending.is_none() {
            let mut filled = bufs.iter().filter(|b| !b.is_empty());
            if let (Some(only), None) = (filled.next(), filled.next())
                && let Some(bytes) = rewrite(only)
            {
                self.pending = Some((bytes, 0, only.len()));
            }
        }
        if self.pending.is_some() {
            return self.drive(cx);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for JsonErrors<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn bare_errors_get_the_json_shape() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\
            date: Wed, 25 Nov 2026 10:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite(bare).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("\r\ndate: Wed, 25 Nov 2026 10:00:00 GMT"));
        assert!(head.contains("\r\ncontent-type: application/json"));
        assert!(head.contains(&format!("\r\ncontent-length: {}", body.len())));
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["message"], "The request headers are too large.");
        let bare = b"HTTP/1.1 414 URI Too Long\r\nContent-Length: 0\r\n\r\n";
        assert!(
            String::from_utf8(rewrite(bare).unwrap())
                .unwrap()
                .contains("too long")
        );
    }

    #[test]
    fn answers_with_a_type_or_a_body_or_another_status_pass_unchanged() {
        let typed = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
            content-length: 0\r\n\r\n";
        assert_eq!(rewrite(typed), None);
        let with_body = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(rewrite(with_body), None);
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(rewrite(ok), None);
        let two = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 400 X\r\n\r\n";
        assert_eq!(rewrite(two), None);
    }
}
