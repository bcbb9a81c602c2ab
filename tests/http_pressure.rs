//! The HTTP port under pressure (issue 11), with receiving going on: 300 `/events` clients that
//! never read and 300 slowloris connections must not stop `/healthz` answering, lose a receipt
//! at 20,000 frames a second, or delay a gap alert; and with the descriptor limit at 1,024 and
//! 1,100 connections knocking, the daemon must neither spin on failing accepts nor lose the
//! descriptors it needs to rotate its files on SIGHUP. Figures (latencies under this load) are
//! in BENCHMARKS.md; here only what must hold.

mod common;

use common::{Daemon, SseClient};
use foxborne_receiver::wire::build::{self, Header};
use std::io::Write;
use std::net::{TcpStream, UdpSocket};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);

fn hb(sysid: u8, seq: u8) -> Vec<u8> {
    build::v2(
        Header {
            sysid,
            compid: 1,
            seq,
        },
        0,
        &build::heartbeat_payload(2, 3),
    )
}

fn utc_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

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

#[test]
fn silent_event_clients_and_slowloris_do_not_stop_health_receipts_or_alerts() {
    common::raise_own_nofile();
    let mut d = Daemon::start(
        "pressure",
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 1.0\n[http]\nlisten = \"127.0.0.1:0\"\nmax_connections = 1024\n",
    );
    let udp = d.udp_addr("radio1");
    let http = d.http_addr();
    d.wait_for("receiver started", WAIT);

    // 300 event-stream clients that never read a byte.
    let mut silent = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(&http).unwrap();
        s.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .unwrap();
        silent.push(s);
    }
    // 300 slowloris connections: a request head begun and never finished.
    let mut slow = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(&http).unwrap();
        s.write_all(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .unwrap();
        slow.push(s);
    }
    // The event clients are all attached before the load starts.
    assert!(common::eventually(WAIT, || {
        let status: serde_json::Value =
            serde_json::from_str(&common::http_get(&http, "/status")).unwrap();
        status["http"]["event_clients"].as_u64() >= Some(300)
    }));

    let watcher = SseClient::connect(&http, None);
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
    let mut probes: Vec<Duration> = (0..20)
        .map(|_| {
            let took = healthz(&http);
            std::thread::sleep(Duration::from_millis(100)); // pacing the probes, not waiting on anything
            took
        })
        .collect();
    let sent = sender.join().unwrap();

    let open = watcher.next(WAIT, |e| {
        let v = e.json();
        v["kind"] == "telemetry_gap" && v["sysid"] == 50 && v["state"] == "open"
    });
    let due =
        foxborne_receiver::monitor::parse_utc_ns(open.json()["due_utc"].as_str().unwrap()).unwrap();
    let open_at =
        foxborne_receiver::monitor::parse_utc_ns(open.json()["utc"].as_str().unwrap()).unwrap();
    assert!(
        open_at - due < 1_000_000_000 && utc_ns() > due,
        "the gap opened {} ms after it was due",
        (open_at - due) / 1_000_000
    );

    probes.sort();
    let median = probes[probes.len() / 2];
    assert!(
        median < Duration::from_millis(100),
        "healthz median {median:?} ({probes:?})"
    );
    assert!(
        probes.iter().all(|p| *p < Duration::from_secs(2)),
        "{probes:?}"
    );

    // Every frame sent is a receipt (plus sysid 50's one heartbeat).
    assert!(
        common::eventually(WAIT, || d.receipts().len() as u64 == sent + 1),
        "{} receipts of {}",
        d.receipts().len(),
        sent + 1
    );
    assert_eq!(common::receiver_dropped(&http), 0);
    let status: serde_json::Value =
        serde_json::from_str(&common::http_get(&http, "/status")).unwrap();
    assert!(
        status["http"]["connections_open"].as_u64() >= Some(300),
        "{}",
        status["http"]
    );
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
