//! The HTTP port under pressure (issues 11, 23), with receiving going on and the shipped config's
//! limits: 300 `/events` clients that never read and 300 slowloris connections from one peer
//! must not stop `/healthz`, `/status`, `/metrics` or a new board client, lose a receipt at 20,000
//! frames a second, or keep a gap alert from the clients that read; and with the descriptor limit at 1,024 and
//! 1,100 connections knocking, the daemon must neither spin on failing accepts nor lose the
//! descriptors it needs to rotate its files on SIGHUP. Figures (latencies under this load) are
//! in BENCHMARKS.md; here only what must hold.

use crate::common;

use common::{Daemon, SseClient};
use foxborne_receiver::wire::build::heartbeat_v2 as hb;
use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);

/// GET /healthz on a fresh connection: how long until the whole answer was read.
fn healthz(http: &str) -> Duration {
    let started = Instant::now();
    let answer = common::http_raw(
        http,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    started.elapsed()
}

/// How many of `sockets` the far end still holds open: each is read without blocking until it
/// would block (open) or ends (closed by the daemon).
fn held_open(sockets: &mut [TcpStream]) -> usize {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    sockets
        .iter_mut()
        .filter(|s| {
            let mut s: &TcpStream = s;
            s.set_nonblocking(true).unwrap();
            loop {
                match s.read(&mut buf) {
                    Ok(0) => return false,
                    Ok(_) => continue,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                    Err(_) => return false,
                }
            }
        })
        .count()
}

/// The shipped `config/receiver.toml`, as is but for its addresses and data folder.
fn shipped_config() -> String {
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/receiver.toml"))
            .unwrap();
    let config = shipped
        .replace("data_dir = \"./data\"", "data_dir = \"{dir}/data\"")
        .replace("udp = \"0.0.0.0:14550\"", "udp = \"127.0.0.1:0\"")
        .replace("listen = \"127.0.0.1:9137\"", "listen = \"127.0.0.1:0\"");
    assert!(
        config.contains("{dir}/data") && config.matches("127.0.0.1:0").count() == 2,
        "config/receiver.toml changed its addresses: {config}"
    );
    assert!(
        !config.contains("\nmax_connections"),
        "the shipped config sets max_connections"
    );
    config
}

#[test]
fn a_peer_holding_streams_and_slowloris_leaves_room_for_short_requests_and_alerts() {
    common::raise_own_nofile();
    let mut d = Daemon::start("pressure", &shipped_config());
    let udp = d.udp_addr("udp14550");
    let http = d.http_addr();
    d.wait_for("receiver started", WAIT);
    // A client that reads, there before the pressure.
    let watcher = SseClient::connect(&http, None);

    // From one other peer: 300 event-stream clients that never read a byte, then 300 slowloris
    // connections (a request head begun and never finished).
    let hostile = [127, 0, 0, 2];
    let mut silent = Vec::new();
    for _ in 0..300 {
        let mut s = common::connect_from(hostile, &http).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        silent.push(s);
    }
    let mut slow = Vec::new();
    for _ in 0..300 {
        let mut s = common::connect_from(hostile, &http).unwrap();
        s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .unwrap();
        slow.push(s);
    }
    let http_status = |http: &str| -> serde_json::Value { common::status(http)["http"].clone() };
    // The peer's streams past its limit were closed for its newer ones: of its 300, the daemon
    // holds at most its 16 open; its idle connections past its limit went for newer ones too.
    assert!(
        common::eventually(WAIT, || held_open(&mut silent) <= 16),
        "{} streams held; {}",
        held_open(&mut silent),
        http_status(&http)
    );
    let h = http_status(&http);
    assert!(
        h["event_clients_dropped"]["peer_limit"].as_u64() > Some(0),
        "{h}"
    );
    assert!(
        h["connections_closed"]["peer_limit"].as_u64() > Some(0),
        "{h}"
    );
    assert!(h["event_clients"].as_u64() <= Some(16 + 1), "{h}");
    assert!(h["connections_open"].as_u64() < Some(256), "{h}");
    assert_eq!(h["event_clients_max"], 64, "{h}");

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Sysid 50 is heard once and then goes quiet: its gap must open on time under load.
    sock.send_to(&hb(50, 0), udp).unwrap();
    let sender = std::thread::spawn(move || {
        // 20,000 heartbeats a second from sysids 1..=4 for 2 s, in 1 ms steps of 20.
        let started = Instant::now();
        let mut sent = 0u64;
        for step in 0..2_000u64 {
            let due = started + Duration::from_millis(step);
            while Instant::now() < due {
                std::hint::spin_loop();
            }
            for k in 0..20u64 {
                let n = step * 20 + k;
                sock.send_to(&hb(1 + (n % 4) as u8, n as u8), udp).unwrap();
                sent += 1;
            }
        }
        sent
    });
    // Every short request is answered (figures under this load are in BENCHMARKS.md).
    for _ in 0..20 {
        let took = healthz(&http);
        assert!(took < Duration::from_secs(2), "healthz took {took:?}");
    }
    for path in ["/status", "/metrics"] {
        let answer = common::http_raw(
            &http,
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(common::status_code(&answer), 200, "{path}: {answer:.300}");
    }
    let metrics = common::http_get(&http, "/metrics");
    assert!(
        metrics.contains("foxborne_event_clients_dropped_total{reason=\"peer_limit\"}"),
        "{metrics:.2000}"
    );
    // A new board client gets its page and its stream.
    let page = common::http_raw(
        &http,
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(common::status_code(&page), 200);
    let board = SseClient::connect(&http, None);
    let sent = sender.join().unwrap();

    // The alert reaches both clients that read.
    for client in [&watcher, &board] {
        let open = client.next(WAIT, |e| {
            let v = e.json();
            v["kind"] == "telemetry_gap" && v["sysid"] == 50 && v["state"] == "open"
        });
        let v = open.json();
        let at =
            |key: &str| foxborne_receiver::monitor::parse_utc_ns(v[key].as_str().unwrap()).unwrap();
        // It opens once nothing came for the threshold after the last heartbeat.
        let threshold_ns = (v["threshold_s"].as_f64().unwrap() * 1e9) as i64;
        let late_ns = at("utc") - (at("last_recv_utc") + threshold_ns);
        assert!(
            (0..1_000_000_000).contains(&late_ns),
            "the gap opened {} ms after its threshold: {v}",
            late_ns / 1_000_000
        );
    }

    // Every frame sent is a receipt (plus sysid 50's one heartbeat).
    assert!(
        common::eventually(WAIT, || d.receipts().len() as u64 == sent + 1),
        "{} receipts of {}",
        d.receipts().len(),
        sent + 1
    );
    assert_eq!(common::receiver_dropped(&http), 0);
    drop(silent);
    drop(slow);
    assert!(d.stop().success());
}

#[test]
fn out_of_descriptors_the_daemon_neither_spins_nor_loses_rotation() {
    use std::os::unix::process::CommandExt;
    common::raise_own_nofile();
    let mut d = Daemon::start_customized(
        "fdlimit",
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\nmax_connections = 4096\n",
        &[],
        |command| {
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                command.pre_exec(|| {
                    use nix::sys::resource::{setrlimit, Resource};
                    setrlimit(Resource::RLIMIT_NOFILE, 1024, 1024)
                        .map_err(|e| std::io::Error::from_raw_os_error(e as i32))
                });
            }
        },
    );
    let udp = d.udp_addr("radio1");
    let http = d.http_addr();
    d.wait_for("lowered to fit the file descriptor limit", WAIT);
    d.wait_for("receiver started", WAIT);
    let pid = d.child.id();

    let addr: std::net::SocketAddr = http.parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..1_100 {
        if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
            held.push(s);
        }
    }
    assert!(held.len() >= 1_024, "only {} connections made", held.len());

    // A spinning accept loop burns a whole core: here the daemon must be nearly idle.
    let before = common::cpu_seconds(pid);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(2)); // the measurement window itself
    let used = common::cpu_seconds(pid) - before;
    let elapsed = window.elapsed().as_secs_f64();
    assert!(
        used < 0.25 * elapsed,
        "the daemon used {used:.2} s of CPU in {elapsed:.2} s with every connection slot taken"
    );

    // Rotation still has descriptors: what comes before and after SIGHUP is all there, in two
    // files.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    for seq in 0..50u8 {
        sock.send_to(&hb(1, seq), udp).unwrap();
    }
    assert!(common::eventually(WAIT, || d.receipts().len() == 50));
    d.signal(nix::sys::signal::Signal::SIGHUP);
    d.wait_for("files reopened", WAIT);
    for seq in 50..100u8 {
        sock.send_to(&hb(1, seq), udp).unwrap();
    }
    assert!(common::eventually(WAIT, || d.receipts().len() == 100));
    let files = d.receive_files();
    assert_eq!(files.len(), 2, "SIGHUP gave a new file");
    assert!(
        !d.seen.iter().any(|l| l.contains("Too many open files")),
        "{:#?}",
        d.seen
    );
    drop(held);
    assert!(d.stop().success());
}
