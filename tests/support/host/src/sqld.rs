//! A plain libSQL server (`sqld`, no authentication) on a free loopback port, for the host's own
//! tests of its libSQL backend; killed when dropped. (The black-box suite's servers, with JWT
//! authentication and replicas, are `tests/api/sqld.rs`.)

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `sqld`.
pub struct Sqld {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Sqld {
    /// `binary` keeping its data in `dir`, once it accepts connections (at most 20 s).
    pub fn start(binary: &Path, dir: &Path) -> Sqld {
        let port = crate::free_port();
        let child = Command::new(binary)
            .arg("--db-path")
            .arg(dir.join("data.sqld"))
            .args([
                "--http-listen-addr",
                &format!("127.0.0.1:{port}"),
                "--no-welcome",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sqld starts");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(20), "sqld not up");
            std::thread::sleep(Duration::from_millis(50));
        }
        Sqld {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Sqld {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
