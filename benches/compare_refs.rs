//! Side by side with the C and C++ references (issue 44), driven by `benches/compare_refs.sh`.
//!
//! `live ROUTER_BINARY`: the live table. For each rate and fleet size, each of three receivers
//! is started afresh and sent the same UDP traffic from this process (one frame per datagram,
//! HEARTBEAT v1 and ATTITUDE v2 alternately from each vehicle, `sendmmsg` in 1 ms bursts):
//! our release daemon (`run`, one UDP link, writing the JSONL receive log), the same with
//! `tlog = true`, and mavlink-routerd (a UDP server endpoint forwarding to one UDP endpoint,
//! a socket of this process that counts the frames that come out). CPU per frame is the
//! process's own CPU clock (user + system, every thread, read with `clock_getcpuclockid`)
//! from the first frame sent to the end of the drain, over the frames sent; frames lost are
//! those sent that are not in our receive log (after SIGTERM's drain) or not forwarded by the
//! router. The three run in turn, `RUNS` times; the table gives the median and the spread.
//!
//! `derive SOURCE OUT BYTES`: writes a log of about BYTES made by repeating the corpus log
//! SOURCE (`ulog_common::derive_log`) and prints its size.
//!
//! Knobs (environment): `FOXBORNE_REFS_RATES` (frames/s, comma separated, default
//! 2000,20000,100000,300000), `FOXBORNE_REFS_VEHICLES` (default 1,50), `FOXBORNE_REFS_RUNS`
//! (default 5), `FOXBORNE_REFS_SECONDS` (sending time per run, default 2),
//! `FOXBORNE_BENCH_BINARY` (our daemon, default this build's), `FOXBORNE_REFS_BEFORE` (an
//! earlier build of ours, measured in the same runs as a fourth receiver: before and after).

#[path = "harness/mod.rs"]
mod harness;
#[path = "ulog_common/mod.rs"]
mod ulog_common;

use nix::sys::time::TimeValLike;
use nix::time::{clock_gettime, ClockId};
use nix::unistd::Pid;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_list(name: &str, default: &str) -> Vec<u64> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|v| v.trim().parse().expect("a whole number"))
        .collect()
}

fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("derive") if args.len() == 4 => {
            let (size, passes) = ulog_common::derive_log(
                Path::new(&args[1]),
                Path::new(&args[2]),
                args[3].parse().expect("BYTES"),
            );
            println!("{size} bytes, {passes} passes");
        }
        Some("live") if args.len() == 2 => live(Path::new(&args[1])),
        _ => {
            eprintln!("usage: compare_refs live ROUTER_BINARY | derive SOURCE OUT BYTES");
            std::process::exit(2);
        }
    }
}

/// CPU seconds (user + system, all threads, living and ended) of process `pid` so far.
fn cpu_seconds(clock: ClockId) -> f64 {
    let t = clock_gettime(clock).expect("the process's CPU clock");
    t.num_nanoseconds() as f64 / 1e9
}

/// Sends `frames` to `to` at `rate` frames/s for `seconds`, in 1 ms bursts of `sendmmsg`;
/// returns the frames sent and the rate achieved.
fn send_paced(tx: &UdpSocket, frames: &[Vec<u8>], rate: u64, seconds: f64) -> (u64, f64) {
    let total = (rate as f64 * seconds) as u64;
    let started = Instant::now();
    let mut sent = 0u64;
    let mut tick = 0u64;
    let mut iovs: Vec<nix::libc::iovec> = Vec::new();
    let mut headers: Vec<nix::libc::mmsghdr> = Vec::new();
    while sent < total {
        tick += 1;
        // Frames due by the end of this millisecond.
        let due = (rate * tick / 1000).min(total);
        while sent < due {
            let n = ((due - sent) as usize).min(256);
            iovs.clear();
            for k in 0..n {
                let f = &frames[((sent as usize) + k) % frames.len()];
                iovs.push(nix::libc::iovec {
                    iov_base: f.as_ptr() as *mut _,
                    iov_len: f.len(),
                });
            }
            headers.clear();
            for iov in iovs.iter_mut() {
                // SAFETY: an all-zero mmsghdr is a valid empty header; the fields set point
                // into `iovs`, which outlives the call below.
                let mut h: nix::libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_iov = iov;
                h.msg_hdr.msg_iovlen = 1;
                headers.push(h);
            }
            // SAFETY: `headers` holds `n` initialised headers on a connected socket (no
            // address), each pointing at one iovec over a frame that lives in `frames`.
            let rc =
                unsafe { nix::libc::sendmmsg(tx.as_raw_fd(), headers.as_mut_ptr(), n as u32, 0) };
            if rc < 0 {
                let e = std::io::Error::last_os_error();
                // A full send buffer: wait a little and go on; anything else is a bug here.
                assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "sendmmsg: {e}");
                std::thread::yield_now();
                continue;
            }
            sent += rc as u64;
        }
        let next = started + Duration::from_millis(tick);
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    (sent, sent as f64 / started.elapsed().as_secs_f64())
}

/// A socket connected to `to`, for [`send_paced`].
fn sender(to: SocketAddr) -> UdpSocket {
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.connect(to).unwrap();
    tx
}

/// One measured run: CPU per frame (µs), frames lost, peak RSS (MiB), achieved rate.
struct Run {
    us_per_frame: f64,
    lost: u64,
    rss_mib: f64,
    achieved: f64,
}

/// Waits until `count` (what came out of the receiver) reaches `sent`, or stops growing for
/// 300 ms: the receiver has drained what it was sent, or lost the rest.
fn drain(sent: u64, count: impl Fn() -> u64) {
    let mut last = (0, Instant::now());
    loop {
        let n = count();
        if n >= sent || last.1.elapsed() > Duration::from_millis(300) {
            return;
        }
        if n != last.0 {
            last = (n, Instant::now());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ours(label: &str, top: &str, frames: &[Vec<u8>], rate: u64, seconds: f64) -> Run {
    ours_binary(None, label, top, frames, rate, seconds)
}

/// As [`ours`], with the daemon `binary` instead of this build's (an earlier build).
fn ours_binary(
    binary: Option<&Path>,
    label: &str,
    top: &str,
    frames: &[Vec<u8>],
    rate: u64,
    seconds: f64,
) -> Run {
    let mut daemon = match binary {
        Some(binary) => {
            let mine = std::env::var_os("FOXBORNE_BENCH_BINARY");
            std::env::set_var("FOXBORNE_BENCH_BINARY", binary);
            let daemon = harness::BenchDaemon::start_with_top(label, top, "");
            match mine {
                Some(v) => std::env::set_var("FOXBORNE_BENCH_BINARY", v),
                None => std::env::remove_var("FOXBORNE_BENCH_BINARY"),
            }
            daemon
        }
        None => harness::BenchDaemon::start_with_top(label, top, ""),
    };
    let clock = ClockId::pid_cpu_clock_id(Pid::from_raw(daemon.pid() as i32)).unwrap();
    let tx = sender(daemon.udp);
    let cpu0 = cpu_seconds(clock);
    let (sent, achieved) = send_paced(&tx, frames, rate, seconds);
    // The writer's buffered lines reach the file within its flush interval.
    drain(sent, || daemon.receive_line_count());
    let cpu = cpu_seconds(clock) - cpu0;
    let (_, _, hwm) = harness::proc_stat(daemon.pid());
    daemon.stop();
    let received = daemon.receive_line_count();
    Run {
        us_per_frame: cpu * 1e6 / sent as f64,
        lost: sent.saturating_sub(received),
        rss_mib: hwm as f64 / 1024.0,
        achieved,
    }
}

/// MAVLink frames in a datagram (v1 and v2, signed or not), by their length bytes.
fn frames_in(d: &[u8]) -> u64 {
    let (mut i, mut n) = (0, 0);
    while i + 2 < d.len() {
        let len = d[i + 1] as usize;
        i += match d[i] {
            0xFE => len + 8,
            0xFD if i + 2 < d.len() => len + 12 + if d[i + 2] & 1 == 1 { 13 } else { 0 },
            _ => break,
        };
        n += 1;
    }
    n
}

struct Router {
    child: Child,
    listen: SocketAddr,
    forwarded: Arc<AtomicU64>,
}

impl Router {
    fn start(binary: &Path) -> Router {
        let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
        let _ = nix::sys::socket::setsockopt(&sink, nix::sys::socket::sockopt::RcvBuf, &(32 << 20));
        let listen = {
            let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap()
        };
        let child = Command::new(binary)
            .args(["-t", "0", "-e"])
            .arg(sink.local_addr().unwrap().to_string())
            .arg(listen.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
        let forwarded = Arc::new(AtomicU64::new(0));
        let count = forwarded.clone();
        sink.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            loop {
                match sink.recv(&mut buf) {
                    Ok(n) => {
                        count.fetch_add(frames_in(&buf[..n]), Ordering::Relaxed);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => return,
                }
            }
        });
        let router = Router {
            child,
            listen,
            forwarded,
        };
        // Ready when a probe frame comes out the other side.
        let probe = sender(listen);
        let heartbeat = &harness::fleet_frames_of(1)[1];
        let started = Instant::now();
        while router.forwarded.load(Ordering::Relaxed) == 0 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "mavlink-routerd did not forward within 10 s"
            );
            let _ = probe.send(heartbeat);
            std::thread::sleep(Duration::from_millis(20));
        }
        router
    }

    fn run(binary: &Path, frames: &[Vec<u8>], rate: u64, seconds: f64) -> Run {
        let mut router = Router::start(binary);
        let pid = router.child.id();
        let clock = ClockId::pid_cpu_clock_id(Pid::from_raw(pid as i32)).unwrap();
        let tx = sender(router.listen);
        let base = router.forwarded.load(Ordering::Relaxed);
        let cpu0 = cpu_seconds(clock);
        let (sent, achieved) = send_paced(&tx, frames, rate, seconds);
        drain(sent, || router.forwarded.load(Ordering::Relaxed) - base);
        let cpu = cpu_seconds(clock) - cpu0;
        let (_, _, hwm) = harness::proc_stat(pid);
        let forwarded = router.forwarded.load(Ordering::Relaxed) - base;
        let _ = router.child.kill();
        let _ = router.child.wait();
        Run {
            us_per_frame: cpu * 1e6 / sent as f64,
            lost: sent.saturating_sub(forwarded),
            rss_mib: hwm as f64 / 1024.0,
            achieved,
        }
    }
}

/// Median and spread (min to max) of `runs`' figure `f`.
fn summary(runs: &[Run], f: impl Fn(&Run) -> f64) -> (f64, f64, f64) {
    let mut v: Vec<f64> = runs.iter().map(f).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn live(router: &Path) {
    let rates = env_list("FOXBORNE_REFS_RATES", "2000,20000,100000,300000");
    let fleets = env_list("FOXBORNE_REFS_VEHICLES", "1,50");
    let runs = env_num("FOXBORNE_REFS_RUNS", 5.0) as usize;
    let seconds = env_num("FOXBORNE_REFS_SECONDS", 2.0);
    println!("CPU per frame in µs: median of {runs} runs (min to max); each run {seconds} s of sending; the three receivers in turn within each run.");
    println!();
    let before = std::env::var_os("FOXBORNE_REFS_BEFORE").map(std::path::PathBuf::from);
    let (before_head, before_rule) = match &before {
        Some(b) => (
            format!(" ours before ({}) | before / ours |", b.display()),
            " ---: | ---: |",
        ),
        None => (String::new(), ""),
    };
    println!("| frames/s | vehicles | ours | ours, tlog = true | mavlink-routerd | ours / router | ours+tlog / router | frames lost (ours / +tlog / router, worst run) | peak RSS MiB (ours / router) | send rate achieved |{before_head}");
    println!(
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |{before_rule}"
    );
    for &rate in &rates {
        for &vehicles in &fleets {
            let frames = harness::fleet_frames_of(vehicles.clamp(1, 250) as u8);
            let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..runs {
                if let Some(binary) = &before {
                    d.push(ours_binary(
                        Some(binary),
                        "refs-before",
                        "",
                        &frames,
                        rate,
                        seconds,
                    ));
                }
                a.push(ours("refs", "", &frames, rate, seconds));
                b.push(ours("refs-tlog", "tlog = true\n", &frames, rate, seconds));
                c.push(Router::run(router, &frames, rate, seconds));
            }
            let cell = |r: &[Run]| {
                let (m, lo, hi) = summary(r, |x| x.us_per_frame);
                format!("{m:.2} ({lo:.2} to {hi:.2})")
            };
            let med = |r: &[Run]| summary(r, |x| x.us_per_frame).0;
            let lost = |r: &[Run]| r.iter().map(|x| x.lost).max().unwrap();
            let (achieved, _, _) = summary(&c, |x| x.achieved);
            let before_cells = if d.is_empty() {
                String::new()
            } else {
                format!(
                    " {} (lost {}) | {:.2} |",
                    cell(&d),
                    lost(&d),
                    med(&d) / med(&a)
                )
            };
            println!(
                "| {rate} | {vehicles} | {} | {} | {} | {:.2} | {:.2} | {} / {} / {} | {:.1} / {:.1} | {achieved:.0} |{before_cells}",
                cell(&a),
                cell(&b),
                cell(&c),
                med(&a) / med(&c),
                med(&b) / med(&c),
                lost(&a),
                lost(&b),
                lost(&c),
                summary(&a, |x| x.rss_mib).0,
                summary(&c, |x| x.rss_mib).0,
            );
        }
    }
}
