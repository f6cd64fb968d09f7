//! A loopback proxy in front of `sqld` that keeps what it forwards and can cut a transaction.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A loopback proxy to a server that keeps the text of every request it forwards (`sent`, in
/// order), and, once `armed`, cuts the connection of any request whose bytes carry a `COMMIT`
/// instead of forwarding it (counted in `cut`).
pub struct CommitCutter {
    pub url: String,
    pub armed: Arc<AtomicBool>,
    pub cut: Arc<AtomicUsize>,
    sent: Arc<Mutex<Vec<String>>>,
}

impl CommitCutter {
    pub fn to(target: &str) -> CommitCutter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (armed, cut) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let sent = Arc::new(Mutex::new(Vec::<String>::new()));
        let (armed2, cut2, sent2) = (armed.clone(), cut.clone(), sent.clone());
        let target = target.trim_start_matches("http://").to_string();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let (armed, cut, sent) = (armed2.clone(), cut2.clone(), sent2.clone());
                let (mut from_server, mut to_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_server, &mut to_client);
                    let _ = to_client.shutdown(Shutdown::Both);
                });
                std::thread::spawn(move || {
                    let (mut client, mut server) = (client, server);
                    let mut buf = vec![0u8; 256 * 1024];
                    // This connection's request being forwarded: its place in `sent`.
                    let mut current: Option<usize> = None;
                    loop {
                        let n = client.read(&mut buf).unwrap_or(0);
                        let chunk = &buf[..n];
                        let text = String::from_utf8_lossy(chunk);
                        let mut sent = sent.lock().unwrap();
                        match current {
                            Some(i) if !text.starts_with("POST ") => sent[i].push_str(&text),
                            _ if n > 0 => {
                                sent.push(text.into_owned());
                                current = Some(sent.len() - 1);
                            }
                            _ => {}
                        }
                        drop(sent);
                        let commit = chunk.windows(8).any(|w| w == b"\"COMMIT\"");
                        if n == 0 || (commit && armed.load(Ordering::SeqCst)) {
                            if n > 0 {
                                cut.fetch_add(1, Ordering::SeqCst);
                            }
                            let _ = server.shutdown(Shutdown::Both);
                            let _ = client.shutdown(Shutdown::Both);
                            return;
                        }
                        if server.write_all(chunk).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        CommitCutter {
            url,
            armed,
            cut,
            sent,
        }
    }

    /// How many requests it has forwarded so far.
    pub fn mark(&self) -> usize {
        self.sent.lock().unwrap().len()
    }

    /// The requests forwarded since `mark`, but an instance's check of the migrations' ledger
    /// (its first statement: on Spin 4.1 every request is an instance's first).
    pub fn since(&self, mark: usize) -> Vec<String> {
        let sent = self.sent.lock().unwrap();
        sent[mark..]
            .iter()
            .filter(|r| !r.contains("_receta_migrations"))
            .cloned()
            .collect()
    }
}
