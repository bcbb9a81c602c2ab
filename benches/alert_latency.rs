//! Benchmark: telemetry_gap alert latency under load. The release daemon receives `VEHICLES`
//! vehicles over loopback UDP, each with HEARTBEAT at 1 Hz and ATTITUDE at `RATE` Hz; `QUIET` of
//! them stop at staggered times. For each `open` event, the latency is the time it reached the
//! SSE stream (emitted together with the events-file write) minus its deadline (`utc`: last
//! heartbeat + threshold). Both are on this host's UTC clock.
//!
//! cargo bench --bench alert_latency [-- VEHICLES RATE]

use foxborne_receiver::mavlink::build::{self, Header};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn utc_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let vehicles = *args.first().unwrap_or(&200) as u8 as usize;
    let rate = *args.get(1).unwrap_or(&50);
    let quiet = vehicles / 2;
    let dir = std::env::temp_dir().join(format!("foxborne-alert-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("receiver.toml"),
        format!("data_dir = \"{}/data\"\n[[link]]\nname = \"load\"\nudp = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n[gap]\nthreshold_s = 3.0\n", dir.display()),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_foxborne-receiver"))
        .args(["run", "--config"])
        .arg(dir.join("receiver.toml"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut udp, mut http) = (None, None);
    while udp.is_none() || http.is_none() {
        let line = lines.next().expect("daemon exited").unwrap();
        let local = line
            .split("local=")
            .nth(1)
            .map(|s| s.split_whitespace().next().unwrap().to_string());
        if line.contains("link=load") {
            udp = local;
        } else if line.contains("http listening") {
            http = local;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    let udp: std::net::SocketAddr = udp.unwrap().parse().unwrap();
    let mut sse = TcpStream::connect(http.unwrap()).unwrap();
    sse.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(sse).lines().map_while(Result::ok) {
            if let Some(data) = line.strip_prefix("data: ") {
                let v: serde_json::Value = serde_json::from_str(data).unwrap();
                if v["kind"] == "telemetry_gap" && v["state"] == "open" {
                    let deadline =
                        foxborne_receiver::monitor::parse_utc_ns(v["utc"].as_str().unwrap())
                            .unwrap();
                    let _ = tx.send((utc_ns() - deadline) as f64 / 1e6);
                }
            }
        }
    });

    // 8 s warm-up at full load, then vehicle i (i < quiet) stops at 8 s + i * (6 s / quiet).
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let started = Instant::now();
    let total = Duration::from_secs(20);
    let tick = Duration::from_millis(10);
    let mut seq = vec![0u8; vehicles];
    let mut n_tick = 0u64;
    let mut sent = 0u64;
    while started.elapsed() < total {
        let t = started.elapsed();
        for v in 0..vehicles {
            let stop_at = Duration::from_secs(8)
                + Duration::from_millis(6000 * v as u64 / quiet.max(1) as u64);
            if v < quiet && t >= stop_at {
                continue;
            }
            let h = Header {
                sysid: (v + 1) as u8,
                compid: 1,
                seq: seq[v],
            };
            // Heartbeats spread over the second so they do not all land in one tick.
            if (n_tick + v as u64) % 100 == 0 {
                socket
                    .send_to(&build::v2(h, 0, &build::heartbeat_payload(2, 3)), udp)
                    .unwrap();
                seq[v] = seq[v].wrapping_add(1);
                sent += 1;
            }
            let per_tick = rate as f64 / 100.0;
            let due = ((n_tick + 1) as f64 * per_tick) as u64 - (n_tick as f64 * per_tick) as u64;
            for _ in 0..due {
                let h = Header {
                    sysid: (v + 1) as u8,
                    compid: 1,
                    seq: seq[v],
                };
                socket
                    .send_to(
                        &build::v2(h, 30, &build::attitude_payload(n_tick as u32, 0.1)),
                        udp,
                    )
                    .unwrap();
                seq[v] = seq[v].wrapping_add(1);
                sent += 1;
            }
        }
        n_tick += 1;
        if let Some(wait) = (started + tick * n_tick as u32).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
    let mut latencies: Vec<f64> = rx.try_iter().collect();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    child.wait().unwrap();
    latencies.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| latencies[((latencies.len() - 1) as f64 * p).round() as usize];
    println!(
        "{vehicles} vehicles, {rate} msgs/s each + 1 Hz heartbeat ({:.0} frames/s offered, {sent} sent); {} of {quiet} quiet vehicles alerted",
        sent as f64 / total.as_secs_f64(),
        latencies.len()
    );
    if !latencies.is_empty() {
        println!(
            "alert latency (deadline to SSE): p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            q(0.5),
            q(0.99),
            q(1.0)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
