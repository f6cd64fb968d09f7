//! A real RFC 3161 timestamp authority for tests, built on the `openssl` command (OpenSSL's own
//! `test/recipes/80-test_tsa.t` configuration): [`Authority`] makes a test CA (RSA) and a TSA
//! certificate under it (P-256, critical extended key usage `timeStamping`) and answers
//! `TimeStampReq`s with `openssl ts -reply`; [`Server`] serves it over HTTP on 127.0.0.1 the way
//! a PSC does (`POST` `application/timestamp-query` → `application/timestamp-reply`), and can be
//! told to misbehave; [`verify`] is the independent check, `openssl ts -verify`.

use std::path::Path;
use std::process::Command;

mod authority;
mod fast;
mod server;

pub use authority::{Authority, TSA_NAME, issue_signer, make_ca, openssl};
pub use server::{Mode, Server};

/// `openssl ts -verify -digest <digest_hex> -in <reply> -CAfile <ca>`: `Ok` when OpenSSL accepts
/// the reply as a timestamp of that digest by a TSA chaining to `ca`, else what it printed.
pub fn verify(reply: &[u8], digest_hex: &str, ca: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("reply.tsr");
    std::fs::write(&file, reply).unwrap();
    let out = Command::new("openssl")
        .args(["ts", "-verify", "-digest", digest_hex, "-in"])
        .arg(&file)
        .arg("-CAfile")
        .arg(ca)
        .output()
        .expect("run openssl");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && said.contains("Verification: OK") {
        Ok(())
    } else {
        Err(said)
    }
}
