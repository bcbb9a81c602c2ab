//! A UDP link: one socket, every datagram stamped on arrival and handed to the pipeline whole.

use super::clock;
use super::input::LinkInput;
use crate::link::LinkId;
use crate::receipt::json_string;
use ipnet::IpNet;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, watch};

/// Binds the link's socket, asking for a large receive buffer so bursts wait in the kernel
/// rather than being dropped there.
pub fn bind(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = std::net::UdpSocket::bind(addr)?;
    socket.set_nonblocking(true)?;
    let _ = nix::sys::socket::setsockopt(&socket, nix::sys::socket::sockopt::RcvBuf, &(8 << 20));
    UdpSocket::from_std(socket)
}

pub async fn run(
    link: LinkId,
    name: String,
    socket: UdpSocket,
    allow: Vec<IpNet>,
    tx: mpsc::Sender<LinkInput>,
    mut shutdown: watch::Receiver<bool>,
) {
    let local = socket
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let up = LinkInput::Up {
        link,
        at: clock::stamp(),
        detail: format!("listening on udp {local}"),
    };
    if tx.send(up).await.is_err() {
        return;
    }
    let mut buf = vec![0u8; 65_536];
    let mut last_peer: Option<(SocketAddr, Arc<str>)> = None;
    let mut stopping = false;
    loop {
        let received = if stopping {
            // Stopping: what the kernel already holds was received before the stop, so it is
            // recorded; then the link ends.
            match socket.try_recv_from(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                r => r,
            }
        } else {
            tokio::select! {
                biased;
                _ = shutdown.changed() => {
                    stopping = true;
                    continue;
                }
                r = socket.recv_from(&mut buf) => r,
            }
        };
        let at = clock::stamp();
        let (n, peer) = match received {
            Ok(r) => r,
            Err(e) => {
                // ICMP errors and the like: nothing was received, the socket is still good.
                tracing::debug!(link = %name, error = %e, "recv_from");
                continue;
            }
        };
        if !allow.is_empty()
            && !allow
                .iter()
                .any(|net| crate::config::network_contains(net, peer.ip()))
        {
            if tx
                .send(LinkInput::Denied {
                    link,
                    peer: peer.to_string(),
                })
                .await
                .is_err()
            {
                break;
            }
            continue;
        }
        let src_json = match &last_peer {
            Some((p, json)) if *p == peer => json.clone(),
            _ => {
                let json: Arc<str> = json_string(&peer.to_string()).into();
                last_peer = Some((peer, json.clone()));
                json
            }
        };
        tracing::trace!(link = %name, bytes = n, %peer, "datagram");
        let input = LinkInput::Datagram {
            link,
            at,
            src_json,
            bytes: buf[..n].to_vec(),
        };
        if tx.send(input).await.is_err() {
            break;
        }
    }
}
