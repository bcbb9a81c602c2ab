//! Plain sockets to a daemon: a GET on its HTTP port, a connection from another loopback
//! address. `common::net` for the tests, and included by path in the benchmarks' harness, so
//! it uses nothing else of `common`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A plain HTTP GET to the daemon's local port (answered within 10 s): the body.
pub fn http_get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// A TCP connection to `to` from the loopback address `from`: another peer, as far as the
/// daemon can tell (the whole of 127.0.0.0/8 is this host).
pub fn connect_from(from: [u8; 4], to: &str) -> std::io::Result<TcpStream> {
    use nix::sys::socket::{bind, connect, socket, AddressFamily, SockFlag, SockType, SockaddrIn};
    use std::os::fd::AsRawFd;
    let to: std::net::SocketAddrV4 = to.parse().expect("an IPv4 address:port");
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    let [a, b, c, d] = from;
    bind(fd.as_raw_fd(), &SockaddrIn::new(a, b, c, d, 0))?;
    connect(fd.as_raw_fd(), &SockaddrIn::from(to))?;
    Ok(TcpStream::from(fd))
}
