//! Benchmark (issue 29): TCP links and forward outputs against the UDP path, in one run.
//!
//! 1. Loss-free rate, UDP and TCP side by side: for each rate the release daemon is started
//!    afresh with a UDP link and a TCP server link; one sender sends the same frames
//!    (HEARTBEAT v1 and ATTITUDE v2 from 20 sysids) paced in 1 ms bursts for `SECONDS`, once as
//!    one datagram per frame, once as a TCP byte stream; the daemon is stopped with SIGTERM and
//!    the receive log counted per link. TCP cannot lose (a receiver behind holds the sender
//!    back), so its figure is the rate the sender achieved with every frame recorded.
//! 2. The cost of one forward output at 200,000 frames/s over UDP: the daemon's CPU seconds
//!    (from /proc) for the same load with no forward, one UDP forward (to a socket read by
//!    this process) and one TCP forward (a reading peer), and what each forward sent and
//!    dropped.
//!
//! cargo bench --bench tcp_forward [-- SECONDS] [forward]     (`forward`: part 2 only)

#[path = "harness/mod.rs"]
mod harness;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sends `rate` frames/s for `seconds` in 1 ms bursts through `send` (a burst of frames at a
/// time); the rate achieved.
fn paced(
    rate: u64,
    seconds: u64,
    frames: &[Vec<u8>],
    mut send: impl FnMut(&[Vec<u8>], usize, usize),
) -> f64 {
    let per_ms = (rate / 1000).max(1) as usize;
    let total = (rate * seconds) as usize;
    let started = Instant::now();
    let (mut sent, mut tick) = (0usize, 0u64);
    while sent < total {
        let n = per_ms.min(total - sent);
        send(frames, sent, n);
        sent += n;
        tick += 1;
        if let Some(wait) =
            (started + Duration::from_millis(tick)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
    total as f64 / started.elapsed().as_secs_f64()
}

/// Lines of the receive log per link.
fn lines_by_link(daemon: &harness::BenchDaemon) -> std::collections::HashMap<String, u64> {
    let mut by = std::collections::HashMap::new();
    for file in daemon.receive_files() {
        for line in std::fs::read_to_string(file).unwrap().lines() {
            let link = line
                .split("\"link\":\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or("?");
            *by.entry(link.to_string()).or_insert(0) += 1;
        }
    }
    by
}

struct RateRow {
    sent: u64,
    received: u64,
    achieved: f64,
    cpu_s: f64,
}

fn udp_rate(rate: u64, seconds: u64, frames: &[Vec<u8>]) -> RateRow {
    let mut daemon = harness::BenchDaemon::start(&format!("tcp-fwd-udp-{rate}"), "");
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = daemon.udp;
    let cpu0 = harness::proc_stat(daemon.pid()).0;
    let achieved = paced(rate, seconds, frames, |f, at, n| {
        for i in at..at + n {
            tx.send_to(&f[i % f.len()], to).unwrap();
        }
    });
    let cpu_s = harness::proc_stat(daemon.pid()).0 - cpu0;
    daemon.stop();
    RateRow {
        sent: rate * seconds,
        received: lines_by_link(&daemon).get("load").copied().unwrap_or(0),
        achieved,
        cpu_s,
    }
}

fn tcp_rate(rate: u64, seconds: u64, frames: &[Vec<u8>]) -> RateRow {
    let mut daemon = harness::BenchDaemon::start_with_links(
        &format!("tcp-fwd-tcp-{rate}"),
        "[[link]]\nname = \"tcp\"\ntcp_listen = \"127.0.0.1:0\"\n",
        &["tcp"],
    );
    let mut stream = TcpStream::connect(daemon.links["tcp"]).unwrap();
    let cpu0 = harness::proc_stat(daemon.pid()).0;
    let mut burst = Vec::new();
    let achieved = paced(rate, seconds, frames, |f, at, n| {
        burst.clear();
        for i in at..at + n {
            burst.extend_from_slice(&f[i % f.len()]);
        }
        stream.write_all(&burst).unwrap();
    });
    drop(stream);
    let sent = rate * seconds;
    // Everything sent is in the daemon's socket or queue: wait for the log to have it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && received_by_status(&daemon.http, "tcp") < sent {
        std::thread::sleep(Duration::from_millis(50));
    }
    let cpu_s = harness::proc_stat(daemon.pid()).0 - cpu0;
    daemon.stop();
    RateRow {
        sent,
        received: lines_by_link(&daemon).get("tcp").copied().unwrap_or(0),
        achieved,
        cpu_s,
    }
}

fn received_by_status(http: &str, link: &str) -> u64 {
    let status: serde_json::Value =
        serde_json::from_str(&harness::http_get(http, "/status")).unwrap_or_default();
    status["links"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == link)
        .and_then(|l| l["receipts"].as_u64())
        .unwrap_or(0)
}

struct ForwardRow {
    received: u64,
    cpu_s: f64,
    forward: serde_json::Value,
    read_by_peer: u64,
}

/// 200,000 frames/s over UDP with `forward` (a `[[forward]]` table, or none).
fn forward_cost(
    label: &str,
    rate: u64,
    seconds: u64,
    frames: &[Vec<u8>],
    forward: Option<&str>,
) -> ForwardRow {
    // The forward's far end: a UDP socket or a TCP peer, read by a thread here.
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Room for bursts at the far end (as root the buffer may pass rmem_max).
    let room = 32usize << 20;
    if nix::sys::socket::setsockopt(&sink, nix::sys::socket::sockopt::RcvBufForce, &room).is_err() {
        let _ = nix::sys::socket::setsockopt(&sink, nix::sys::socket::sockopt::RcvBuf, &room);
    }
    let sink_addr = sink.local_addr().unwrap();
    let tcp_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let extra = match forward {
        Some("udp") => format!("[[forward]]\nname = \"out\"\nudp = \"{sink_addr}\"\n"),
        Some(_) => format!("[[forward]]\nname = \"out\"\ntcp_listen = \"127.0.0.1:{tcp_port}\"\n"),
        None => String::new(),
    };
    let mut daemon = harness::BenchDaemon::start(&format!("tcp-fwd-cost-{label}"), &extra);
    let read = Arc::new(AtomicU64::new(0));
    let reading = Arc::new(AtomicBool::new(true));
    let reader = {
        let (read, reading) = (read.clone(), reading.clone());
        let mut tcp = (forward == Some("tcp")).then(|| {
            let addr: SocketAddr = ([127, 0, 0, 1], tcp_port).into();
            let s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            s
        });
        sink.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while reading.load(Ordering::Relaxed) {
                let n = match tcp.as_mut() {
                    Some(s) => s.read(&mut buf).unwrap_or(0),
                    None => sink.recv(&mut buf).map(|_| 1).unwrap_or(0),
                };
                read.fetch_add(n as u64, Ordering::Relaxed);
            }
        })
    };
    if forward == Some("tcp") {
        // The peer is connected before the load starts.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && forward_status(&daemon.http)["peers"] != 1 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let to = daemon.udp;
    let cpu0 = harness::proc_stat(daemon.pid()).0;
    paced(rate, seconds, frames, |f, at, n| {
        for i in at..at + n {
            tx.send_to(&f[i % f.len()], to).unwrap();
        }
    });
    // Until everything sent has been scanned (and so offered to the forward).
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && received_by_status(&daemon.http, "load") < rate * seconds {
        std::thread::sleep(Duration::from_millis(50));
    }
    let cpu_s = harness::proc_stat(daemon.pid()).0 - cpu0;
    let forward_now = if forward.is_some() {
        forward_status(&daemon.http)
    } else {
        serde_json::Value::Null
    };
    reading.store(false, Ordering::Relaxed);
    daemon.stop();
    let _ = reader.join();
    ForwardRow {
        received: lines_by_link(&daemon).get("load").copied().unwrap_or(0),
        cpu_s,
        forward: forward_now,
        read_by_peer: read.load(Ordering::Relaxed),
    }
}

fn forward_status(http: &str) -> serde_json::Value {
    let status: serde_json::Value =
        serde_json::from_str(&harness::http_get(http, "/status")).unwrap_or_default();
    status["forwards"][0].clone()
}

fn main() {
    let seconds = harness::numeric_args().first().copied().unwrap_or(5);
    // `-- SECONDS forward`: the forward's cost only.
    let forward_only = std::env::args().any(|a| a == "forward");
    let frames = harness::fleet_frames();
    if !forward_only {
        rates(seconds, &frames);
    }
    forwards(seconds, &frames);
}

fn rates(seconds: u64, frames: &[Vec<u8>]) {
    println!("## Loss-free rate, UDP and TCP links side by side ({seconds} s per rate)\n");
    println!("| rate asked (frames/s) | UDP received / sent | UDP achieved | UDP daemon CPU | TCP received / sent | TCP achieved | TCP daemon CPU | TCP CPU / UDP CPU |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let (mut best_udp, mut best_tcp) = (0, 0);
    // Loss-free, and the sender not held back (within 2 % of the rate asked).
    let kept_up =
        |row: &RateRow, rate: u64| row.received == row.sent && row.achieved >= rate as f64 * 0.98;
    for rate in [
        50_000u64, 100_000, 200_000, 300_000, 400_000, 600_000, 1_000_000,
    ] {
        // One sender process sends at most about 220,000 datagrams/s here: UDP stops at 400,000.
        let u = (rate <= 400_000).then(|| udp_rate(rate, seconds, frames));
        let t = tcp_rate(rate, seconds, frames);
        let udp_cells = match &u {
            Some(u) => format!(
                "{} / {} | {:.0} | {:.2} s",
                u.received, u.sent, u.achieved, u.cpu_s
            ),
            None => "- | - | -".to_string(),
        };
        let ratio = u
            .as_ref()
            .map(|u| format!("{:.2}", t.cpu_s / u.cpu_s.max(1e-9)))
            .unwrap_or_else(|| "-".into());
        println!(
            "| {rate} | {udp_cells} | {} / {} | {:.0} | {:.2} s | {ratio} |",
            t.received, t.sent, t.achieved, t.cpu_s
        );
        if u.as_ref().is_some_and(|u| kept_up(u, rate)) {
            best_udp = best_udp.max(rate);
        }
        if kept_up(&t, rate) {
            best_tcp = best_tcp.max(rate);
        }
    }
    println!("\nhighest rate tried with every frame recorded and the sender not held back: UDP {best_udp} frames/s, TCP {best_tcp} frames/s\n");
}

fn forwards(seconds: u64, frames: &[Vec<u8>]) {
    let rate = 200_000;
    println!("## One forward output at {rate} frames/s over UDP ({seconds} s, two rounds)\n");
    println!("| round | forward | received / sent | daemon CPU | CPU / no forward (same round) | forward frames | sent | dropped | read by the far end |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for round in 1..=2 {
        let none = forward_cost("none", rate, seconds, frames, None);
        for (label, kind) in [("none", None), ("udp", Some("udp")), ("tcp", Some("tcp"))] {
            let row = match kind {
                None => ForwardRow {
                    received: none.received,
                    cpu_s: none.cpu_s,
                    forward: serde_json::Value::Null,
                    read_by_peer: 0,
                },
                Some(_) => forward_cost(label, rate, seconds, frames, kind),
            };
            let dropped: u64 = row.forward["dropped"]
                .as_object()
                .map(|d| d.values().filter_map(|v| v.as_u64()).sum())
                .unwrap_or(0);
            let far_end = match kind {
                Some("udp") => format!("{} datagrams", row.read_by_peer),
                Some(_) => format!("{} bytes", row.read_by_peer),
                None => "-".into(),
            };
            println!(
                "| {round} | {label} | {} / {} | {:.2} s | {:.2} | {} | {} | {dropped} | {far_end} |",
                row.received,
                rate * seconds,
                row.cpu_s,
                row.cpu_s / none.cpu_s.max(1e-9),
                row.forward["frames"],
                row.forward["sent_frames"],
            );
        }
    }
}
