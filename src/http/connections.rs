//! Who holds the HTTP port's connections, and who gives way when the port is full, so that a
//! short request (`/healthz`, `/status`, `/metrics`, the board's page) always has room.
//!
//! Three kinds of holder compete for the `max_connections` slots: long-lived event streams
//! (`/events`, which the board also uses), requests being answered, and connections between
//! requests (just accepted and still sending their head, a slowloris among them, or idle between
//! keep-alive requests). The rules:
//! - Streams have a budget of their own, `max_streams`, below the connection cap, and at most
//!   `max_streams_per_peer` per client address. A peer past its stream limit loses its oldest
//!   stream to the new one (a wall display that reloads without closing its old stream keeps
//!   working); past the whole budget a new stream is refused (503).
//! - A peer holds at most `max_connections_per_peer` connections that are not streams; a new one
//!   past that closes the peer's oldest connection that is between requests.
//! - At the cap, a new connection closes the oldest connection between requests, of any peer.
//!   Only when every slot is a stream or a request being answered does the port stop accepting
//!   (the kernel's backlog holds the rest) until one ends.
//!
//! Pure bookkeeping, no sockets: the server ([`super::server`]) carries out the closings.

use crate::config::ConnectionLimits;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

/// A connection's number, in order of acceptance: a smaller number is an older connection.
pub type ConnectionId = u64;

/// Why a connection was closed to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eviction {
    /// Its peer had reached `max_connections_per_peer` (or, for a stream, its stream limit).
    PeerLimit,
    /// The port was at `max_connections`.
    Cap,
}

/// What to do with a connection just accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// Serve it as `id`, after closing `evict` (when given).
    Admit {
        id: ConnectionId,
        evict: Option<(ConnectionId, Eviction)>,
    },
    /// Close it: its peer's connections are all being answered.
    Refuse,
}

/// What to do with a request for an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamAdmission {
    /// Stream it, after closing the connection of `close` (the peer's oldest stream).
    Open { close: Option<ConnectionId> },
    /// Answer 503: the stream budget is spent by other peers.
    Refuse,
    /// The connection was already closed to make room (between its accept and this request).
    Gone,
}

#[derive(Debug, Clone)]
struct Connection {
    peer: IpAddr,
    /// Requests being answered on it (HTTP/1.1: one at a time, but counted, not assumed).
    requests: u32,
    stream: bool,
}

impl Connection {
    fn between_requests(&self) -> bool {
        self.requests == 0 && !self.stream
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct PeerCounts {
    connections: usize,
    streams: usize,
}

/// The open connections and the admission rules of the module documentation.
#[derive(Debug, Clone)]
pub struct ConnectionTable {
    limits: ConnectionLimits,
    next_id: ConnectionId,
    /// By id, so oldest first.
    open: BTreeMap<ConnectionId, Connection>,
    peers: HashMap<IpAddr, PeerCounts>,
    streams: usize,
}

impl ConnectionTable {
    pub fn new(limits: ConnectionLimits) -> Self {
        Self {
            limits,
            next_id: 0,
            open: BTreeMap::new(),
            peers: HashMap::new(),
            streams: 0,
        }
    }

    /// Whether a new connection can be taken now, with `closing` connections already out of
    /// the table but whose sockets are not closed yet (each still holds a descriptor): below the
    /// cap counting those, or with nothing closing and a connection between requests to close
    /// for it. When not, the server leaves new ones in the kernel's backlog.
    pub fn has_room(&self, closing: usize) -> bool {
        self.open.len() + closing < self.limits.max_connections
            || (closing == 0 && self.open.values().any(Connection::between_requests))
    }

    /// A connection from `peer` was accepted.
    pub fn admit(&mut self, peer: IpAddr) -> Admission {
        let counts = self.peers.get(&peer).copied().unwrap_or_default();
        let mut evict = None;
        if counts.connections - counts.streams >= self.limits.max_connections_per_peer {
            match self.oldest_between_requests(Some(peer)) {
                Some(id) => evict = Some((id, Eviction::PeerLimit)),
                None => return Admission::Refuse,
            }
        } else if self.open.len() >= self.limits.max_connections {
            match self.oldest_between_requests(None) {
                Some(id) => evict = Some((id, Eviction::Cap)),
                None => return Admission::Refuse,
            }
        }
        if let Some((id, _)) = evict {
            self.closed(id);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.open.insert(
            id,
            Connection {
                peer,
                requests: 0,
                stream: false,
            },
        );
        self.peers.entry(peer).or_default().connections += 1;
        Admission::Admit { id, evict }
    }

    pub fn request_started(&mut self, id: ConnectionId) {
        if let Some(c) = self.open.get_mut(&id) {
            c.requests += 1;
        }
    }

    pub fn request_ended(&mut self, id: ConnectionId) {
        if let Some(c) = self.open.get_mut(&id) {
            c.requests = c.requests.saturating_sub(1);
        }
    }

    /// Connection `id` asks for an event stream.
    pub fn open_stream(&mut self, id: ConnectionId) -> StreamAdmission {
        let Some(peer) = self.open.get(&id).map(|c| c.peer) else {
            return StreamAdmission::Gone;
        };
        let counts = self.peers.get(&peer).copied().unwrap_or_default();
        let mut close = None;
        if counts.streams >= self.limits.max_streams_per_peer {
            close = self
                .open
                .iter()
                .find(|(other, c)| **other != id && c.peer == peer && c.stream)
                .map(|(other, _)| *other);
        } else if self.streams >= self.limits.max_streams {
            return StreamAdmission::Refuse;
        }
        if let Some(old) = close {
            self.closed(old);
        } else if counts.streams >= self.limits.max_streams_per_peer {
            return StreamAdmission::Refuse;
        }
        if let Some(c) = self.open.get_mut(&id) {
            if !c.stream {
                c.stream = true;
                self.streams += 1;
                self.peers.entry(peer).or_default().streams += 1;
            }
        }
        StreamAdmission::Open { close }
    }

    /// The stream on connection `id` ended; the connection may serve requests again.
    pub fn stream_ended(&mut self, id: ConnectionId) {
        if let Some(c) = self.open.get_mut(&id).filter(|c| c.stream) {
            c.stream = false;
            self.streams -= 1;
            if let Some(p) = self.peers.get_mut(&c.peer) {
                p.streams -= 1;
            }
        }
    }

    /// Connection `id` is gone (closed by either side, or evicted).
    pub fn closed(&mut self, id: ConnectionId) {
        self.stream_ended(id);
        if let Some(c) = self.open.remove(&id) {
            if let Some(p) = self.peers.get_mut(&c.peer) {
                p.connections -= 1;
                if p.connections == 0 {
                    self.peers.remove(&c.peer);
                }
            }
        }
    }

    fn oldest_between_requests(&self, peer: Option<IpAddr>) -> Option<ConnectionId> {
        self.open
            .iter()
            .find(|(_, c)| c.between_requests() && peer.is_none_or(|p| c.peer == p))
            .map(|(id, _)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: ConnectionLimits = ConnectionLimits {
        max_connections: 10,
        max_connections_per_peer: 4,
        max_streams: 3,
        max_streams_per_peer: 2,
    };

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn admitted(table: &mut ConnectionTable, peer: IpAddr) -> ConnectionId {
        match table.admit(peer) {
            Admission::Admit { id, .. } => id,
            Admission::Refuse => panic!("refused"),
        }
    }

    /// Admitted as `id`, closing `evicted` for room.
    fn evicting(id: ConnectionId, evicted: ConnectionId, why: Eviction) -> Admission {
        Admission::Admit {
            id,
            evict: Some((evicted, why)),
        }
    }

    #[test]
    fn a_peer_past_its_limit_loses_its_oldest_idle_connection_not_others() {
        let mut t = ConnectionTable::new(LIMITS);
        let other = admitted(&mut t, ip(9));
        let first: Vec<_> = (0..4).map(|_| admitted(&mut t, ip(2))).collect();
        // The fifth from the same peer: that peer's oldest goes, never the other peer's.
        assert_eq!(t.admit(ip(2)), evicting(5, first[0], Eviction::PeerLimit));
        assert_eq!(t.open.len(), 5);
        // Being answered, a connection is not closed for room; the next oldest is.
        t.request_started(first[1]);
        assert_eq!(t.admit(ip(2)), evicting(6, first[2], Eviction::PeerLimit));
        t.request_ended(first[1]);
        assert!(t.open.contains_key(&other));
    }

    #[test]
    fn at_the_cap_the_oldest_idle_connection_gives_way() {
        let mut t = ConnectionTable::new(LIMITS);
        let ids: Vec<_> = (0..10u8).map(|k| admitted(&mut t, ip(10 + k))).collect();
        t.request_started(ids[0]);
        assert_eq!(t.admit(ip(99)), evicting(10, ids[1], Eviction::Cap));
        // Every slot answering a request: no room, the port stops accepting.
        for &id in &ids[2..] {
            t.request_started(id);
        }
        t.request_started(10);
        assert!(!t.has_room(0));
        assert_eq!(t.admit(ip(98)), Admission::Refuse);
        t.closed(ids[0]);
        assert!(t.has_room(0));
        // A connection closed to make room holds its descriptor until its socket is closed.
        assert!(!t.has_room(1));
    }

    #[test]
    fn streams_have_their_own_budget_and_a_peer_reloading_keeps_its_newest() {
        let mut t = ConnectionTable::new(LIMITS);
        let a1 = admitted(&mut t, ip(2));
        let a2 = admitted(&mut t, ip(2));
        assert_eq!(t.open_stream(a1), StreamAdmission::Open { close: None });
        assert_eq!(t.open_stream(a2), StreamAdmission::Open { close: None });
        // A third stream from the same peer (a display reloaded): its oldest stream is closed.
        let a3 = admitted(&mut t, ip(2));
        assert_eq!(t.open_stream(a3), StreamAdmission::Open { close: Some(a1) });
        assert_eq!((t.streams, t.open.len()), (2, 2));
        // Another peer takes the last stream of the budget; a third peer is refused.
        let b = admitted(&mut t, ip(3));
        assert_eq!(t.open_stream(b), StreamAdmission::Open { close: None });
        let c = admitted(&mut t, ip(4));
        assert_eq!(t.open_stream(c), StreamAdmission::Refuse);
        // Streams do not count against the peer's connection limit: four more short requests
        // from peer 2 fit beside its two streams without closing anything.
        for _ in 0..4 {
            assert!(matches!(
                t.admit(ip(2)),
                Admission::Admit { evict: None, .. }
            ));
        }
        // A stream that ends frees its place in the budget.
        t.stream_ended(b);
        assert_eq!(t.open_stream(c), StreamAdmission::Open { close: None });
    }

    #[test]
    fn streams_are_never_closed_to_make_room_for_a_connection() {
        let mut t = ConnectionTable::new(ConnectionLimits {
            max_connections: 3,
            max_connections_per_peer: 3,
            max_streams: 3,
            max_streams_per_peer: 3,
        });
        for _ in 0..3 {
            let id = admitted(&mut t, ip(2));
            t.open_stream(id);
        }
        assert!(!t.has_room(0));
        assert_eq!(t.admit(ip(5)), Admission::Refuse);
    }

    #[test]
    fn the_counts_come_back_to_zero() {
        let mut t = ConnectionTable::new(LIMITS);
        let ids: Vec<_> = (0..6u8).map(|k| admitted(&mut t, ip(k % 2))).collect();
        t.open_stream(ids[0]);
        t.open_stream(ids[3]);
        for id in ids {
            t.closed(id);
        }
        assert_eq!((t.open.len(), t.streams), (0, 0));
        assert!(t.peers.is_empty());
    }
}
