//! The HTTP port's connection handling: our own accept loop around hyper's HTTP/1.1
//! connections, because the policy lives here. Who may hold a connection, and who gives way
//! when the port is full, is [`super::connections`] (at most `max_connections`, lowered at start
//! to fit the process's file descriptor limit so the files can always rotate; event streams on
//! a budget of their own; limits per peer); this loop carries out its answers, closing the
//! connections it names. Only when every slot is answering a request or streaming do new
//! connections wait in the kernel's backlog. A failing accept (out of descriptors, out of
//! memory) backs off instead of spinning. Each connection has a header timeout (slowloris), a
//! header size limit, a write timeout and a small kernel send buffer; at shutdown the loop stops
//! accepting and open connections get a short drain.

use super::connections::{Admission, ConnectionId, ConnectionTable, Eviction, StreamAdmission};
use super::deadline::WriteDeadline;
use super::HttpCounters;
use crate::backoff::Backoff;
use crate::config::{ConnectionLimits, HttpSettings};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

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

/// The back-off after failed accepts: doubling from 10 ms to 1 s, reset by a success.
fn accept_backoff() -> Backoff {
    crate::backoff::accept_backoff()
}

/// `max_connections` lowered to what the descriptor limit `nofile` leaves after the reserve.
pub fn connection_cap(max_connections: usize, nofile: u64) -> usize {
    let room = nofile.saturating_sub(HttpSettings::RESERVED_FDS).max(1);
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

/// The connection table, with a way to close each connection it names.
pub struct Connections {
    state: Mutex<TableState>,
    /// Signalled whenever a connection ends: the accept loop may have room again.
    room: Notify,
    counters: Arc<HttpCounters>,
}

struct TableState {
    table: ConnectionTable,
    /// Each open connection's closer: notified, its task drops the connection.
    closers: HashMap<ConnectionId, Arc<Notify>>,
    /// Connections told to close whose tasks have not ended yet: their sockets still hold
    /// descriptors, so they count against the cap until then.
    closing: std::collections::HashSet<ConnectionId>,
}

impl TableState {
    fn close(&mut self, id: ConnectionId) {
        if let Some(closer) = self.closers.remove(&id) {
            // A stored permit: the task sees it even if it is not waiting yet.
            closer.notify_one();
            self.closing.insert(id);
        }
    }
}

impl Connections {
    pub fn new(limits: ConnectionLimits, counters: Arc<HttpCounters>) -> Arc<Self> {
        let c = |n: usize| n as u64;
        counters
            .connections_max
            .store(c(limits.max_connections), Ordering::Relaxed);
        counters
            .event_clients_max
            .store(c(limits.max_streams), Ordering::Relaxed);
        Arc::new(Self {
            state: Mutex::new(TableState {
                table: ConnectionTable::new(limits),
                closers: HashMap::new(),
                closing: Default::default(),
            }),
            room: Notify::new(),
            counters,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TableState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until a new connection can be taken (see [`ConnectionTable::has_room`]).
    async fn wait_for_room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let room = {
                let state = self.lock();
                state.table.has_room(state.closing.len())
            };
            if room {
                return;
            }
            notified.await;
        }
    }

    /// A connection from `peer`: its handle and closer, or `None` when it must be closed.
    fn admit(self: &Arc<Self>, peer: std::net::IpAddr) -> Option<(ConnectionHandle, Arc<Notify>)> {
        let mut state = self.lock();
        match state.table.admit(peer) {
            Admission::Refuse => {
                self.counters
                    .connections_refused
                    .fetch_add(1, Ordering::Relaxed);
                None
            }
            Admission::Admit { id, evict } => {
                if let Some((old, why)) = evict {
                    state.close(old);
                    let counter = match why {
                        Eviction::PeerLimit => &self.counters.connections_closed_peer_limit,
                        Eviction::Cap => &self.counters.connections_closed_cap,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                let closer = Arc::new(Notify::new());
                state.closers.insert(id, closer.clone());
                Some((
                    ConnectionHandle {
                        id,
                        connections: self.clone(),
                    },
                    closer,
                ))
            }
        }
    }

    fn ended(&self, id: ConnectionId) {
        let mut state = self.lock();
        state.closers.remove(&id);
        state.closing.remove(&id);
        state.table.closed(id);
        drop(state);
        self.room.notify_waiters();
    }
}

/// One connection's place in the table, carried in each of its requests' extensions so the
/// handlers can say what they are (a request being answered, an event stream).
#[derive(Clone)]
pub struct ConnectionHandle {
    id: ConnectionId,
    connections: Arc<Connections>,
}

impl ConnectionHandle {
    /// Marks the connection as answering a request until the guard is dropped.
    pub fn request(&self) -> RequestGuard {
        self.connections.lock().table.request_started(self.id);
        RequestGuard(self.clone())
    }

    /// Asks for an event stream on this connection: a guard that holds the stream's place
    /// until dropped, or `None` (answer 503) when the stream budget is spent.
    pub fn open_stream(&self) -> Option<StreamGuard> {
        let mut state = self.connections.lock();
        match state.table.open_stream(self.id) {
            StreamAdmission::Gone => None,
            StreamAdmission::Refuse => {
                self.connections
                    .counters
                    .event_clients_refused
                    .fetch_add(1, Ordering::Relaxed);
                None
            }
            StreamAdmission::Open { close } => {
                if let Some(old) = close {
                    state.close(old);
                    self.connections
                        .counters
                        .event_clients_closed_peer_limit
                        .fetch_add(1, Ordering::Relaxed);
                }
                Some(StreamGuard(self.clone()))
            }
        }
    }
}

pub struct RequestGuard(ConnectionHandle);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.connections.lock().table.request_ended(self.0.id);
    }
}

pub struct StreamGuard(ConnectionHandle);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.connections.lock().table.stream_ended(self.0.id);
    }
}

pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    connections: Arc<Connections>,
    mut shutdown: watch::Receiver<bool>,
) {
    let counters = connections.counters.clone();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_HEAD_BYTES)
        .max_headers(MAX_HEADERS)
        .keep_alive(true);
    let mut backoff = accept_backoff();
    let mut failing = false;
    loop {
        // Room first: with every slot answering or streaming, connections wait in the kernel's
        // backlog, not in our descriptors.
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            _ = connections.wait_for_room() => {}
        }
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff.succeeded();
                if failing {
                    tracing::info!("http accepting again");
                    failing = false;
                }
                accepted
            }
            Err(e) => {
                counters.accept_errors.fetch_add(1, Ordering::Relaxed);
                let pause = backoff.failed(0.0);
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
        counters.connections_total.fetch_add(1, Ordering::Relaxed);
        let Some((handle, closer)) = connections.admit(peer.ip()) else {
            tracing::trace!(%peer, "http connection refused: its peer's connections are all busy");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = nix::sys::socket::setsockopt(
            &stream,
            nix::sys::socket::sockopt::SndBuf,
            &SEND_BUFFER_BYTES,
        );
        counters.connections_open.fetch_add(1, Ordering::Relaxed);
        let io = TokioIo::new(WriteDeadline::new(
            stream,
            WRITE_TIMEOUT,
            counters.write_timeouts.clone(),
        ));
        let id = handle.id;
        let tagged = tower::ServiceExt::map_request(
            app.clone(),
            move |mut request: axum::http::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(handle.clone());
                request
            },
        );
        let service = hyper_util::service::TowerToHyperService::new(tagged);
        let connection = graceful.watch(http.serve_connection(io, service));
        let (counters, connections) = (counters.clone(), connections.clone());
        tokio::spawn(async move {
            tokio::select! {
                ended = connection => if let Err(e) = ended {
                    tracing::trace!(error = %e, "http connection ended");
                },
                // Dropping the connection closes its socket.
                _ = closer.notified() => tracing::trace!("http connection closed to make room"),
            }
            counters.connections_open.fetch_sub(1, Ordering::Relaxed);
            connections.ended(id);
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
    fn the_cap_leaves_descriptors_for_the_files() {
        assert_eq!(connection_cap(256, 65_536), 256);
        assert_eq!(
            connection_cap(4096, 1024),
            1024 - HttpSettings::RESERVED_FDS as usize
        );
        assert_eq!(connection_cap(256, 100), 1);
    }
}
