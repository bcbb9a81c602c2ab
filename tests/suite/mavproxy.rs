//! MAVProxy (the Python ground station's `mavproxy.py`) as a real peer serving TCP
//! (`--out tcpin:`), our TCP client link connected to it. MAVProxy 1.8 cannot replay a `.tlog`
//! itself, so pymavlink replays a corpus tlog into MAVProxy's master (tests/mavproxy_replay.py;
//! over TCP, `--master tcpin:`, so a busy MAVProxy slows the replay instead of losing
//! datagrams, which made the comparison flaky over UDP) and MAVProxy forwards each frame to its
//! TCP client. The two tests run one at a time: two MAVProxies at once are too much for a
//! two-core machine. Shown: every
//! frame recorded once, byte for byte and in order, equal to pymavlink's reading of the file;
//! and MAVProxy killed mid-stream and started again: link down and up, and every frame it wrote
//! before it died recorded, none twice, the frames after the restart following in order.

use crate::common;

use common::{eventually, status_entry, Daemon};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
/// v1 and v2 frames from a vehicle and a ground station, 18,951 of them.
const TLOG: &str = "olivieri_2021-12-08-14-59-44.tlog";
/// The replay's warm-up and end markers come from these system ids (none in the log).
const WARM_UP: u8 = 251;
const END: u8 = 252;
/// Frames per second into MAVProxy: a pace its Python loop keeps up with.
const RATE: u32 = 3000;

/// The tests take turns (see the module's documentation).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Two ports nobody listens on now (MAVProxy's master and its TCP output).
fn free_tcp_ports() -> (u16, u16) {
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (a, b) = (bind(), bind());
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

/// One MAVProxy process: a master in and outputs, everything forwarded as received.
struct MavProxy(Child);

impl MavProxy {
    /// TCP master in, TCP server out (and a UDP output for an observer).
    fn start(dir: &Path, master: u16, tcp: u16, observer: Option<u16>, run: u32) -> MavProxy {
        let mut links = vec![
            format!("--master=tcpin:127.0.0.1:{master}"),
            format!("--out=tcpin:127.0.0.1:{tcp}"),
        ];
        if let Some(port) = observer {
            // After the TCP output: MAVProxy writes each frame to its outputs in this order.
            links.push(format!("--out=udpout:127.0.0.1:{port}"));
        }
        Self::spawn(dir, &links, false, run)
    }

    /// MAVProxy with these `--master`/`--out` options, in `dir`. With `telemetry_log`, it keeps
    /// its own telemetry log of what its master received, `dir/mav.tlog` (its default name),
    /// instead of `--no-state`.
    fn spawn(dir: &Path, links: &[String], telemetry_log: bool, run: u32) -> MavProxy {
        let (python, script) = common::mavproxy();
        let log = std::fs::File::create(dir.join(format!("mavproxy-{run}.log"))).unwrap();
        let mut command = Command::new(python);
        command.arg(script).args(links);
        // Forward everything as received: no holding back "delayed" packets, and the ground
        // station's REQUEST_DATA_STREAM in the log too.
        let mut settings = "set checkdelay 0; set mavfwd_rate 1".to_string();
        if telemetry_log {
            // Its log writer flushes after each batch (otherwise the last few KiB wait in
            // Python's buffer for more).
            settings += "; set flushlogs 1";
        } else {
            command.arg("--no-state");
        }
        command
            .args([
                "--daemon",
                "--non-interactive",
                "--nowait",
                "--mav20",
                "--default-modules=link",
            ])
            .arg(format!("--cmd={settings}"))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        MavProxy(command.spawn().unwrap())
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for MavProxy {
    fn drop(&mut self) {
        self.kill();
    }
}

/// pymavlink replaying the tlog into MAVProxy's master (tests/mavproxy_replay.py).
struct Replay {
    child: Child,
    lines: BufReader<std::process::ChildStdout>,
    sent_file: PathBuf,
}

impl Replay {
    fn start(dir: &Path, tlog: &Path, master: u16) -> Replay {
        let (python, _) = common::mavproxy();
        let sent_file = dir.join("sent.hex");
        let mut child = common::spawn_talking(
            common::python_script(&python, "mavproxy_replay.py")
                .arg(tlog)
                .arg(format!("127.0.0.1:{master}"))
                .arg(RATE.to_string())
                .arg(&sent_file),
        );
        let lines = BufReader::new(child.stdout.take().unwrap());
        Replay {
            child,
            lines,
            sent_file,
        }
    }

    /// Ends the warm-up: the log's frames follow.
    fn go(&mut self) {
        writeln!(self.child.stdin.as_mut().unwrap(), "go").unwrap();
    }

    /// Waits until every frame was sent; then what it sent, in order.
    fn sent(&mut self) -> Vec<Vec<u8>> {
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        assert!(line.starts_with("sent "), "replay said {line:?}");
        std::fs::read_to_string(&self.sent_file)
            .unwrap()
            .lines()
            .map(unhex)
            .collect()
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

/// The system id in a frame's header.
fn sysid(frame: &[u8]) -> u8 {
    if frame[0] == 0xFD {
        frame[5]
    } else {
        frame[3]
    }
}

/// Whether the receiver has recorded a frame from `sysid` (per `/status`).
fn heard(http: &str, sysid: u8) -> bool {
    common::status(http)["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["sysid"] == sysid)
}

/// Every frame the daemon recorded, as received (from its raw `.tlog`), in order, without the
/// replay's markers.
fn recorded(d: &Daemon) -> Vec<Vec<u8>> {
    let mut frames = d.recorded_frames();
    frames.retain(|f| sysid(f) != WARM_UP && sysid(f) != END);
    frames
}

fn daemon(name: &str, tcp: u16) -> Daemon {
    Daemon::start(
        name,
        &format!(
            "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\ntlog = true\nfields = \"all\"\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"mavproxy\"\ntcp = \"127.0.0.1:{tcp}\"\n"
        ),
    )
}

#[test]
#[cfg_attr(
    any(foxborne_no_corpus, foxborne_no_mavproxy),
    ignore = "needs the corpus and MAVProxy (README)"
)]
fn mavproxy_serving_tcp_gives_every_frame_of_a_tlog_once() {
    let scratch = common::scratch("mavproxy-replay");
    let tlog = common::corpus_file("tlog", TLOG);
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (master, tcp) = free_tcp_ports();
    let mut d = daemon("mavproxy-replay", tcp);
    // Nobody serves the port yet: the link starts down, then MAVProxy comes.
    d.wait_for("tcp link down", WAIT);
    let _mavproxy = MavProxy::start(&scratch, master, tcp, None, 1);
    d.wait_for("link up", WAIT);
    let http = d.http_addr();
    let mut replay = Replay::start(&scratch, &tlog, master);
    assert!(eventually(WAIT, || heard(&http, WARM_UP)));
    replay.go();
    let sent = replay.sent();
    assert!(eventually(WAIT, || heard(&http, END)));
    drop(replay);
    assert!(d.stop().success());

    let frames = recorded(&d);
    assert_eq!(frames.len(), sent.len());
    assert!(
        frames == sent,
        "every frame once, byte for byte, in order (first difference at {:?})",
        frames.iter().zip(&sent).position(|(a, b)| a != b)
    );
    // The same as pymavlink's reading of the file (the corpus oracle).
    let expected = common::pymavlink_expected(&tlog);
    let receipts: Vec<serde_json::Value> = d
        .receipts()
        .into_iter()
        .filter(|r| r["sysid"] != WARM_UP && r["sysid"] != END)
        .collect();
    assert_eq!(
        receipts.len() as u64,
        expected["messages"].as_u64().unwrap()
    );
    let mut by_message: BTreeMap<String, u64> = BTreeMap::new();
    let mut by_source: BTreeMap<String, u64> = BTreeMap::new();
    for r in &receipts {
        *by_message
            .entry(r["msg"].as_str().unwrap().to_string())
            .or_default() += 1;
        *by_source
            .entry(format!("{}:{}", r["sysid"], r["compid"]))
            .or_default() += 1;
    }
    let as_map = |v: &serde_json::Value| -> BTreeMap<String, u64> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
            .collect()
    };
    assert_eq!(by_message, as_map(&expected["by_message"]));
    assert_eq!(by_source, as_map(&expected["by_source"]));
    assert_eq!(d.link_states("mavproxy"), ["down", "up"]);
}

#[test]
#[cfg_attr(
    any(foxborne_no_corpus, foxborne_no_mavproxy),
    ignore = "needs the corpus and MAVProxy (README)"
)]
fn mavproxy_killed_and_restarted_mid_stream_loses_and_doubles_nothing_before_the_drop() {
    let scratch = common::scratch("mavproxy-restart");
    let tlog = common::corpus_file("tlog", TLOG);
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (master, tcp) = free_tcp_ports();
    // Sees what MAVProxy wrote just after each frame it wrote to us.
    let observer = UdpSocket::bind("127.0.0.1:0").unwrap();
    let observer_port = observer.local_addr().unwrap().port();
    observer
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let observed = {
        let watching = watching.clone();
        std::thread::spawn(move || {
            let mut seen: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
            let mut buf = [0u8; 512];
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok((n, from)) = observer.recv_from(&mut buf) {
                    seen.push((from, buf[..n].to_vec()));
                }
            }
            seen
        })
    };
    let mut d = daemon("mavproxy-restart", tcp);
    d.wait_for("tcp link down", WAIT);
    let mut first = MavProxy::start(&scratch, master, tcp, Some(observer_port), 1);
    d.wait_for("link up", WAIT);
    let http = d.http_addr();
    let mut replay = Replay::start(&scratch, &tlog, master);
    assert!(eventually(WAIT, || heard(&http, WARM_UP)));
    replay.go();
    // A fifth of the way in, MAVProxy dies; the replay goes on.
    assert!(eventually(WAIT, || status_entry(
        &http, "links", "mavproxy"
    )["receipts"]
        .as_u64()
        .unwrap()
        >= 4000));
    first.kill();
    d.wait_for("tcp link down", WAIT);
    let _second = MavProxy::start(&scratch, master, tcp, Some(observer_port), 2);
    d.wait_for("link up", WAIT);
    let sent = replay.sent();
    assert!(eventually(WAIT, || heard(&http, END)));
    drop(replay);
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    let observed = observed.join().unwrap();
    assert!(d.stop().success());

    let frames = recorded(&d);
    // What was recorded is the log up to the drop, then the log from some later frame to its
    // end: one hole (what MAVProxy held or was sent while down), nothing twice, nothing
    // reordered.
    let before = frames.iter().zip(&sent).take_while(|(a, b)| a == b).count();
    let after = frames.len() - before;
    assert!(
        before >= 4000 && after > 0 && before + after < sent.len(),
        "recorded {before} frames before the drop and {after} after, of {}",
        sent.len()
    );
    assert!(
        frames[before..] == sent[sent.len() - after..],
        "after the restart, the log's frames in order to its end"
    );
    // Every frame the first MAVProxy wrote to us before it died was recorded: it wrote each one
    // to our TCP link before its UDP output, so the observer's frames from it are no more.
    let first_source = observed
        .iter()
        .find(|(_, f)| sysid(f) != WARM_UP)
        .map(|(from, _)| *from)
        .unwrap();
    let from_first: Vec<&Vec<u8>> = observed
        .iter()
        .filter(|(from, f)| *from == first_source && sysid(f) != WARM_UP && sysid(f) != END)
        .map(|(_, f)| f)
        .collect();
    assert!(!from_first.is_empty());
    assert!(
        from_first.iter().zip(&sent).all(|(a, b)| *a == b),
        "the observer saw the log's first frames"
    );
    assert!(
        from_first.len() <= before,
        "MAVProxy wrote {} frames before it died; {before} recorded",
        from_first.len()
    );
    assert_eq!(d.link_states("mavproxy"), ["down", "up", "down", "up"]);
}

/// What MAVProxy's telemetry log (`mav.tlog`) says its master received (the records whose two
/// low stamp bits, MAVProxy's link number, are 0; its own sendings are link 3), leaving out
/// `except`'s frames. A record still being written at the end is not counted.
fn master_received(log: &Path, except: u8) -> Vec<Vec<u8>> {
    use foxborne_receiver::tlog::TlogReader;
    use foxborne_receiver::wire::signing::SigningKeys;
    use foxborne_receiver::wire::ScanItem;
    let bytes = std::fs::read(log).unwrap_or_default();
    let keys = SigningKeys::new(Vec::new(), false);
    TlogReader::new(&bytes, &keys)
        .filter(|r| r.link_bits == 0)
        .filter_map(|r| match r.item {
            ScanItem::Frame(f) if f.sysid != except => Some(f.bytes.to_vec()),
            _ => None,
        })
        .collect()
}

/// A corpus tlog of 155 s and 3,590 frames: at 10x, 231 frames a second into MAVProxy's UDP
/// master for 15.5 s, a pace its Python loop keeps up with (a UDP master has no flow control).
const REPLAYED_TLOG: &str = "olivieri_20211125-124019.tlog";

/// `replay` into MAVProxy as a ground station given a vehicle's UDP stream
/// (`--master udpin:`): MAVProxy's own telemetry log of its master holds every frame of the
/// file, once, byte for byte, in order (issue 43).
#[test]
#[cfg_attr(
    any(foxborne_no_corpus, foxborne_no_mavproxy),
    ignore = "needs the corpus and MAVProxy (README)"
)]
fn replay_into_mavproxy_as_its_udp_master_gives_it_every_frame_once() {
    let scratch = common::scratch("mavproxy-udpin");
    let tlog = common::corpus_file("tlog", REPLAYED_TLOG);
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _mavproxy = MavProxy::spawn(
        &scratch,
        &[format!("--master=udpin:127.0.0.1:{port}")],
        true,
        1,
    );
    // Until MAVProxy reads its master and logs what comes: a heartbeat from a system the file
    // does not hold, every 100 ms, until MAVProxy's log has one.
    let log = scratch.join("mav.tlog");
    let warm_up = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seq = 0u8;
    let ready = eventually(WAIT, || {
        seq = seq.wrapping_add(1);
        let _ = warm_up.send_to(
            &foxborne_receiver::wire::build::heartbeat_v2(WARM_UP, seq),
            ("127.0.0.1", port),
        );
        std::thread::sleep(Duration::from_millis(100));
        std::fs::read(&log).is_ok_and(|b| {
            foxborne_receiver::tlog::TlogReader::new(
                &b,
                &foxborne_receiver::wire::signing::SigningKeys::new(Vec::new(), false),
            )
            .any(|r| matches!(r.item, foxborne_receiver::wire::ScanItem::Frame(f) if f.sysid == WARM_UP))
        })
    });
    assert!(ready, "MAVProxy never logged a frame of its master");

    let out = common::run_ok(
        Command::new(common::binary())
            .arg("replay")
            .arg(&tlog)
            .arg("--to")
            .arg(format!("udp:127.0.0.1:{port}"))
            .args(["--speed", "10"]),
        "replay",
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    let expected = common::tlog_frames(&tlog);
    assert_eq!(
        expected.len() as u64,
        common::pymavlink_expected(&tlog)["messages"]
            .as_u64()
            .unwrap()
    );
    assert!(
        summary.starts_with(&format!("replay: sent {} frames", expected.len())),
        "{summary}"
    );
    let all_there = eventually(WAIT, || {
        master_received(&log, WARM_UP).len() >= expected.len()
    });
    let received = master_received(&log, WARM_UP);
    assert!(
        all_there,
        "MAVProxy logged {} of the {} frames sent",
        received.len(),
        expected.len()
    );
    assert_eq!(received.len(), expected.len(), "no frame twice");
    assert!(
        received == expected,
        "byte for byte and in order (first difference at {:?})",
        received.iter().zip(&expected).position(|(a, b)| a != b)
    );
}
