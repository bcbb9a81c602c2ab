//! What the daemon-level benchmarks share: the release daemon started with a fresh config and
//! its addresses read from what it logs, its CPU and memory read from /proc, gap-alert latency
//! read off its SSE stream, and its receive log counted.
#![allow(dead_code)]

#[path = "../../tests/suite/common/net.rs"]
mod net;
#[allow(unused_imports)] // each test or bench uses some of them
pub use net::{connect_from, http_get};

use std::io::{BufRead, BufReader, Lines, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::mpsc;

/// The daemon under test: this build's, or `$FOXBORNE_BENCH_BINARY` (an earlier build, for
/// figures side by side in one run).
pub fn binary() -> PathBuf {
    std::env::var_os("FOXBORNE_BENCH_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_foxborne-receiver")))
}

/// The daemon's `verb` (`run`, `range`) with `config` (`{dir}` standing for its folder) in a
/// fresh folder of its own: the child, the folder and the lines of its stderr.
pub fn spawn_daemon(
    name: &str,
    verb: &str,
    config: &str,
) -> (Child, PathBuf, Lines<BufReader<ChildStderr>>) {
    let dir = std::env::temp_dir().join(format!("foxborne-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = config.replace("{dir}", dir.to_str().unwrap());
    std::fs::write(dir.join("receiver.toml"), config).unwrap();
    let mut child = Command::new(binary())
        .args([verb, "--config"])
        .arg(dir.join("receiver.toml"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    (child, dir, lines)
}

pub struct BenchDaemon {
    pub child: Child,
    pub dir: PathBuf,
    pub udp: SocketAddr,
    pub http: String,
    /// Every UDP link's address by name (`load` included).
    pub links: std::collections::HashMap<String, SocketAddr>,
}

impl BenchDaemon {
    /// Starts the daemon with one UDP link `load` and `extra` appended to its config.
    pub fn start(name: &str, extra: &str) -> BenchDaemon {
        Self::start_full(name, "", extra, &[])
    }

    /// As [`BenchDaemon::start`], waiting also for the UDP links `more` that `extra` adds.
    pub fn start_with_links(name: &str, extra: &str, more: &[&str]) -> BenchDaemon {
        Self::start_full(name, "", extra, more)
    }

    /// As [`BenchDaemon::start`], with `top` (top-level keys, e.g. `fields = "all"`) written
    /// before the config's first table.
    pub fn start_with_top(name: &str, top: &str, extra: &str) -> BenchDaemon {
        Self::start_full(name, top, extra, &[])
    }

    fn start_full(name: &str, top: &str, extra: &str, more: &[&str]) -> BenchDaemon {
        let (child, dir, mut lines) = spawn_daemon(
            name,
            "run",
            &format!(
                "{top}data_dir = \"{{dir}}/data\"\n[[link]]\nname = \"load\"\nudp = \"127.0.0.1:0\"\n[http]\nlisten = \"127.0.0.1:0\"\n{extra}"
            ),
        );
        let (mut udp, mut http) = (None, None);
        let mut links = std::collections::HashMap::new();
        while udp.is_none() || http.is_none() || more.iter().any(|m| !links.contains_key(*m)) {
            let line = lines.next().expect("daemon exited").unwrap();
            let local = line
                .split("local=")
                .nth(1)
                .map(|s| s.split_whitespace().next().unwrap().to_string());
            if let (Some(name), Some(addr)) = (
                line.split("link=")
                    .nth(1)
                    .and_then(|s| s.split_whitespace().next()),
                local.as_ref(),
            ) {
                if line.contains("listening") {
                    links.insert(name.to_string(), addr.parse::<SocketAddr>().unwrap());
                }
            }
            if line.contains("link=load") && line.contains("listening") {
                udp = local;
            } else if line.contains("http listening") {
                http = local;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        BenchDaemon {
            child,
            dir,
            udp: udp.unwrap().parse().unwrap(),
            http: http.unwrap(),
            links,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid() as i32), sig).unwrap();
    }

    /// SIGTERM and wait: the daemon drains and fsyncs before it exits.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        self.signal(nix::sys::signal::Signal::SIGTERM);
        self.child.wait().unwrap()
    }

    /// Receive-log files in name (time) order.
    pub fn receive_files(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.dir.join("data/receive"))
            .unwrap()
            .map(|d| d.unwrap().path())
            .filter(|d| d.is_dir())
            .flat_map(|d| {
                std::fs::read_dir(d)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect::<Vec<_>>()
            })
            .collect();
        paths.sort();
        paths
    }

    pub fn receive_line_count(&self) -> u64 {
        self.receive_files()
            .iter()
            .map(|p| {
                std::fs::read(p)
                    .unwrap()
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count() as u64
            })
            .sum()
    }

    /// Latency (ms) of each telemetry_gap `open` event: see [`gap_alert_latencies`].
    pub fn gap_alert_latencies(&self) -> mpsc::Receiver<f64> {
        gap_alert_latencies(&self.http)
    }
}

/// Latency (ms) of each telemetry_gap `open` event on the SSE stream at `http` (a receiver's or
/// a range's): its arrival minus its deadline.
pub fn gap_alert_latencies(http: &str) -> mpsc::Receiver<f64> {
    open_event_delays(http, "telemetry_gap")
}

/// The delay (ms) of each `open` event of `kind` on the SSE stream at `http`: its arrival minus
/// its `utc`.
pub fn open_event_delays(http: &str, kind: &'static str) -> mpsc::Receiver<f64> {
    let mut sse = TcpStream::connect(http).unwrap();
    sse.write_all(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(sse).lines().map_while(Result::ok) {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let v: serde_json::Value = serde_json::from_str(data).unwrap();
            if v["kind"] == kind && v["state"] == "open" {
                let at =
                    foxborne_receiver::monitor::parse_utc_ns(v["utc"].as_str().unwrap()).unwrap();
                let _ = tx.send((utc_ns() - at) as f64 / 1e6);
            }
        }
    });
    rx
}

/// The numbers among the benchmark's arguments, in order (cargo's `--bench` and other flags
/// are not numbers).
pub fn numeric_args() -> Vec<u64> {
    std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect()
}

impl Drop for BenchDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::env::var_os("FOXBORNE_BENCH_KEEP").is_some() {
            eprintln!("kept {}", self.dir.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

pub fn utc_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// CPU seconds used (user + system), resident KiB, peak resident KiB of a process.
pub fn proc_stat(pid: u32) -> (f64, u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    ((ticks(11) + ticks(12)) / 100.0, kb("VmRSS:"), kb("VmHWM:"))
}

/// Nearest-rank quantile of sorted values.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The rate benches' traffic: 20 systems, each a full cycle of sequence numbers, HEARTBEAT v1
/// and ATTITUDE v2 alternately (one frame per datagram, or back to back on a stream).
pub fn fleet_frames() -> Vec<Vec<u8>> {
    fleet_frames_of(20)
}

/// As [`fleet_frames`], from `systems` systems (sysids 1 to `systems`, at most 250).
pub fn fleet_frames_of(systems: u8) -> Vec<Vec<u8>> {
    use foxborne_receiver::wire::build::{self, Header};
    (0..systems)
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
        .collect()
}
