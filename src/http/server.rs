//! The HTTP port's connection handling: our own accept loop around hyper's HTTP/1.1
//! connections, because the policy lives here. At most `max_connections` are open (lowered at
//! start to fit the process's file descriptor limit, so the files can always rotate); past it
//! new connections wait in the kernel's backlog instead of costing a descriptor. A failing
//! accept (out of descriptors, out of memory) backs off instead of spinning. Each connection has
//! a header timeout (slowloris), a header size limit, a write timeout and a small kernel send
//! buffer; at shutdown the loop stops accepting and open connections get a short drain.

use super::deadline::WriteDeadline;
use super::HttpCounters;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// A request head must arrive within this (also the idle limit between keep-alive requests).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A write that cannot progress for this long drops the connection.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head accepted (hyper answers 431 past it).
const MAX_HEAD_BYTES: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;
/// The kernel's send buffer per connection: enough for any response here, small enough that a
/// client that stops reading parks little in the kernel before the write timeout cuts it off.
const SEND_BUFFER_BYTES: usize = 64 * 1024;
/// How long open connections get to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(2);
/// Descriptors kept back from the HTTP port for the daemon's own files, sockets and threads.
pub const RESERVED_FDS: u64 = 128;

/// The back-off after failed accepts: doubling from 10 ms to 1 s, reset by a success (pure).
#[derive(Debug, Clone, Default)]
pub struct AcceptBackoff {
    failures: u32,
}

impl AcceptBackoff {
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        Duration::from_millis(10)
            .saturating_mul(1 << (self.failures - 1).min(7))
            .min(Duration::from_secs(1))
    }

    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

/// `max_connections` lowered to what the descriptor limit `nofile` leaves after the reserve.
pub fn connection_cap(max_connections: usize, nofile: u64) -> usize {
    let room = nofile.saturating_sub(RESERVED_FDS).max(1);
    max_connections.min(usize::try_from(room).unwrap_or(usize::MAX))
}

/// Raises the soft descriptor limit to the hard one (the unit sets `LimitNOFILE`; a shell's
/// `ulimit -n` may be lower) and returns the soft limit now in force.
pub fn raise_nofile_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) => {
            if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Err(_) => 1024,
    }
}

pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    cap: usize,
    counters: Arc<HttpCounters>,
    mut shutdown: watch::Receiver<bool>,
) {
    let slots = Arc::new(Semaphore::new(cap));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        .keep_alive(true);
    let mut backoff = AcceptBackoff::default();
    let mut failing = false;
    loop {
        // A slot first: at the cap, connections wait in the kernel's backlog, not in our fds.
        let slot = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => {
                backoff.succeeded();
                if failing {
                    tracing::info!("http accepting again");
                    failing = false;
                }
                stream
            }
            Err(e) => {
                counters.accept_errors.fetch_add(1, Ordering::Relaxed);
                let pause = backoff.failed();
                if !failing {
                    tracing::warn!(error = %e, "http accept failing; backing off (connections wait in the kernel backlog)");
                    failing = true;
                }
                tokio::select! {
                    _ = shutdown.wait_for(|stop| *stop) => break,
                    _ = tokio::time::sleep(pause) => continue,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let _ = nix::sys::socket::setsockopt(
            &stream,
            nix::sys::socket::sockopt::SndBuf,
            &SEND_BUFFER_BYTES,
        );
        counters.connections_total.fetch_add(1, Ordering::Relaxed);
        counters.connections_open.fetch_add(1, Ordering::Relaxed);
        let io = TokioIo::new(WriteDeadline::new(
            stream,
            WRITE_TIMEOUT,
            counters.write_timeouts.clone(),
        ));
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = graceful.watch(http.serve_connection(io, service));
        let counters = counters.clone();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::trace!(error = %e, "http connection ended");
            }
            counters.connections_open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("http connections still open after the drain; closing them");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_failures_back_off_to_a_second_and_a_success_resets() {
        let mut b = AcceptBackoff::default();
        let waits: Vec<u64> = (0..10).map(|_| b.failed().as_millis() as u64).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        // A core spinning on EMFILE retries ~12k times a second; backed off, a minute of
        // failures is at most a few dozen tries.
        let mut b = AcceptBackoff::default();
        let mut elapsed = Duration::ZERO;
        let mut tries = 0;
        while elapsed < Duration::from_secs(60) {
            elapsed += b.failed();
            tries += 1;
        }
        assert!(tries < 70, "{tries}");
        b.succeeded();
        assert_eq!(b.failed(), Duration::from_millis(10));
    }

    #[test]
    fn the_cap_leaves_descriptors_for_the_files() {
        assert_eq!(connection_cap(256, 65_536), 256);
        assert_eq!(connection_cap(4096, 1024), 1024 - RESERVED_FDS as usize);
        assert_eq!(connection_cap(256, 100), 1);
    }
}
