//! A `nats-server -js` of its own (a free port, its own store), killed on drop: `common::nats`
//! for the tests, and included by path in `benches/range_nats.rs`, so it uses nothing else of
//! `common`.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A TCP port free on the loopback address when asked.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct Nats {
    child: Child,
    port: u16,
    store: PathBuf,
}

impl Nats {
    /// On `port`, its JetStream store in `store`; returns once the server says it is ready
    /// (and panics if it does not within 20 s).
    pub fn start_on(store: &Path, port: u16) -> Nats {
        let mut child = Command::new("nats-server")
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(store)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nats-server (apt install nats-server)");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Server is ready") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("nats-server did not become ready");
        Nats {
            child,
            port,
            store: store.to_path_buf(),
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stopped and started again on the same port and store.
    pub fn restart(&mut self) {
        self.stop();
        *self = Nats::start_on(&self.store.clone(), self.port);
    }
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.stop();
    }
}
