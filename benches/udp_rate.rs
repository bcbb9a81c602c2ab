//! Benchmark: the highest loss-free UDP receive rate on loopback. For each rate the release
//! daemon is started afresh, one process sends HEARTBEAT/ATTITUDE frames (one per datagram,
//! v1 and v2 mixed, 20 senders) paced in 1 ms bursts for `SECONDS`, the daemon is stopped with
//! SIGTERM, and the receive log's lines are counted against what was sent.
//!
//! cargo bench --bench udp_rate [-- SECONDS]

use foxborne_receiver::mavlink::build::{self, Header};
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run_rate(rate: u64, seconds: u64) -> (u64, u64, f64) {
    let dir = std::env::temp_dir().join(format!("foxborne-udp-rate-{}-{rate}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("receiver.toml"),
        format!("data_dir = \"{}/data\"\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"load\"\nudp = \"127.0.0.1:0\"\n", dir.display()),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_foxborne-receiver"))
        .args(["run", "--config"])
        .arg(dir.join("receiver.toml"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("daemon exited").unwrap();
        if let Some(a) = line
            .rsplit("local=")
            .next()
            .filter(|_| line.contains("local="))
        {
            break a.trim().parse::<std::net::SocketAddr>().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});

    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let frames: Vec<Vec<u8>> = (0..20u8)
        .flat_map(|s| {
            (0..=255u8).map(move |seq| {
                let h = Header {
                    sysid: s + 1,
                    compid: 1,
                    seq,
                };
                if seq % 2 == 0 {
                    build::v2(h, 30, &build::attitude_payload(seq as u32, 0.1))
                } else {
                    build::v1(h, 0, &build::heartbeat_payload(2, 3))
                }
            })
        })
        .collect();
    let per_ms = (rate / 1000).max(1);
    let total = rate * seconds;
    let started = Instant::now();
    let mut sent = 0u64;
    let mut tick = 0u64;
    while sent < total {
        for _ in 0..per_ms.min(total - sent) {
            tx.send_to(&frames[(sent as usize) % frames.len()], addr)
                .unwrap();
            sent += 1;
        }
        tick += 1;
        let next = started + Duration::from_millis(tick);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let send_secs = started.elapsed().as_secs_f64();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    child.wait().unwrap();
    let mut received = 0u64;
    for day in std::fs::read_dir(dir.join("data/receive")).unwrap() {
        let day = day.unwrap().path();
        if day.is_dir() {
            for f in std::fs::read_dir(day).unwrap() {
                received += std::fs::read(f.unwrap().path())
                    .unwrap()
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count() as u64;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    (sent, received, sent as f64 / send_secs)
}

fn main() {
    let seconds: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    println!("rate (frames/s) | sent | received | lost | achieved send rate");
    let mut best = 0;
    for rate in [
        10_000u64, 20_000, 50_000, 100_000, 150_000, 200_000, 300_000,
    ] {
        let (sent, received, achieved) = run_rate(rate, seconds);
        println!(
            "{rate} | {sent} | {received} | {} | {achieved:.0}",
            sent - received
        );
        if received == sent {
            best = rate;
        } else {
            break;
        }
    }
    println!("highest loss-free rate tried: {best} frames/s for {seconds} s");
}
