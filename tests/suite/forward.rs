//! Forward outputs against the built daemon: ground stations (pymavlink, on UDP and on TCP)
//! read every valid frame byte for byte and in order, a filtered output gets only what its
//! filters name, and what a ground station sends back reaches no link; a ground station that
//! stops reading while 100,000 frames/s arrive loses frames for itself only, counted, and the
//! receive log loses nothing.

use crate::common;

use common::{eventually, header, status_entry, Daemon};
use foxborne_receiver::wire::build;
use foxborne_receiver::wire::{DatagramScanner, ScanItem};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::UdpSocket;
use std::process::Child;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);

/// The `i`th valid frame of the test's stream: v1 and v2, four senders, four messages.
fn frame(i: usize) -> Vec<u8> {
    let seq = (i / 4) as u8;
    match i % 4 {
        0 => build::v2(header(4, seq), 0, &build::heartbeat_payload(2, 3)),
        1 => build::v1(header(4, seq), 30, &build::attitude_payload(i as u32, 0.5)),
        2 => build::v2(header(5, seq), 0, &build::heartbeat_payload(1, 3)),
        _ => build::v2(
            header(6, seq),
            2,
            &build::system_time_payload(1_758_724_323_912_000 + i as u64, i as u32),
        ),
    }
}

/// A pymavlink ground station on a forward (tests/forward_ground_station.py).
struct GroundStation {
    child: Child,
    lines: BufReader<std::process::ChildStdout>,
    out: std::path::PathBuf,
}

impl GroundStation {
    fn start(mode: &str, addr: &str, count: usize, out: std::path::PathBuf) -> GroundStation {
        let python = common::python_with(&["pymavlink"]);
        let mut child = common::spawn_talking(
            common::python_script(&python, "forward_ground_station.py")
                .args([mode, addr, &count.to_string()])
                .arg(&out),
        );
        let lines = BufReader::new(child.stdout.take().unwrap());
        let mut gs = GroundStation { child, lines, out };
        assert_eq!(gs.line(), "ready");
        gs
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    /// Waits until it has read its frames and sent its heartbeat back; the frames it read.
    fn frames(&mut self) -> Vec<String> {
        let said = self.line();
        assert!(said.starts_with("sent"), "ground station said {said:?}");
        std::fs::read_to_string(&self.out)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }
}

impl Drop for GroundStation {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[cfg_attr(foxborne_no_python, ignore = "needs the Python references (README)")]
fn ground_stations_read_every_frame_byte_for_byte_and_send_nothing_to_a_link() {
    let scratch = common::scratch("forward-gs");
    // The UDP ground station's port, and a plain socket for the filtered output.
    let gs_port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let filtered = UdpSocket::bind("127.0.0.1:0").unwrap();
    filtered
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut d = Daemon::start(
        "forward-gs",
        &format!(
            "data_dir = \"{{dir}}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n\
             [[link]]\nname = \"radio\"\nudp = \"127.0.0.1:0\"\n\
             [[forward]]\nname = \"gs-udp\"\nudp = \"127.0.0.1:{gs_port}\"\n\
             [[forward]]\nname = \"gs-tcp\"\ntcp_listen = \"127.0.0.1:0\"\n\
             [[forward]]\nname = \"hb4\"\nudp = \"{}\"\nlinks = [\"radio\"]\nsysids = [4]\nmsgs = [\"HEARTBEAT\"]\n",
            filtered.local_addr().unwrap()
        ),
    );
    let radio = d.udp_addr("radio");
    let tcp = d.forward_addr("gs-tcp");
    let http = d.http_addr();
    let count = 1200;
    let mut udp_gs = GroundStation::start(
        "udp",
        &format!("127.0.0.1:{gs_port}"),
        count,
        scratch.join("udp.hex"),
    );
    let mut tcp_gs = GroundStation::start("tcp", &tcp.to_string(), count, scratch.join("tcp.hex"));
    assert!(eventually(WAIT, || status_entry(
        &http, "forwards", "gs-tcp"
    )["peers"]
        == 1));
    // The filtered output is read as it comes (its socket's buffer holds few datagrams).
    let want: Vec<Vec<u8>> = (0..count).filter(|i| i % 4 == 0).map(frame).collect();
    let wanted = want.len();
    let filtered_reader = std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        (0..wanted)
            .map_while(|_| filtered.recv(&mut buf).ok().map(|n| buf[..n].to_vec()))
            .collect::<Vec<_>>()
    });

    // Valid frames, with junk and a corrupt frame between some of them.
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut expected = Vec::new();
    let started = Instant::now();
    for i in 0..count {
        let mut datagram = Vec::new();
        if i % 10 == 0 {
            datagram.extend_from_slice(b"AT+RSSI?\r\n");
            let mut bad = frame(i);
            bad[8] ^= 0x55;
            datagram.extend_from_slice(&bad);
        }
        datagram.extend_from_slice(&frame(i));
        expected.push(frame(i));
        tx.send_to(&datagram, radio).unwrap();
        // A steady 4,000 frames/s: the Python readers keep up.
        let due = started + Duration::from_micros(250 * (i as u64 + 1));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let hex: Vec<String> = expected.iter().map(|f| hex(f)).collect();
    assert_eq!(
        udp_gs.frames(),
        hex,
        "UDP: every frame, byte for byte, in order"
    );
    assert_eq!(
        tcp_gs.frames(),
        hex,
        "TCP: every frame, byte for byte, in order"
    );

    // The filtered output: sysid 4's heartbeats only, one datagram each.
    assert_eq!(filtered_reader.join().unwrap(), want);

    // What the ground stations sent back was read and discarded, counted on /status.
    assert!(eventually(WAIT, || {
        status_entry(&http, "forwards", "gs-udp")["ignored_datagrams"] == 1
            && status_entry(&http, "forwards", "gs-tcp")["ignored_bytes"]
                .as_u64()
                .unwrap()
                > 0
    }));
    let gs_udp = status_entry(&http, "forwards", "gs-udp");
    assert_eq!(gs_udp["frames"], count);
    assert_eq!(gs_udp["sent_frames"], count);
    let hb4 = status_entry(&http, "forwards", "hb4");
    assert_eq!(hb4["frames"], want.len());
    let metrics = common::http_get(&http, "/metrics");
    assert!(
        metrics.contains(&format!(
            "foxborne_forward_sent_frames_total{{forward=\"gs-tcp\"}} {count}"
        )),
        "{metrics}"
    );
    drop((udp_gs, tcp_gs));
    assert!(d.stop().success());
    // Nothing the ground stations sent reached a link: only the test's frames were received.
    let receipts = d.receipts();
    assert_eq!(receipts.len(), count);
    assert!(receipts
        .iter()
        .all(|r| r["sysid"] != 200 && r["link"] == "radio"));
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A TCP connection whose receive buffer is as small as the kernel allows, that then never
/// reads: a ground station that stalled.
fn stalled_reader(to: std::net::SocketAddr) -> std::net::TcpStream {
    use nix::sys::socket::{
        connect, setsockopt, socket, sockopt, AddressFamily, SockFlag, SockType, SockaddrIn,
    };
    use std::os::fd::AsRawFd;
    let std::net::SocketAddr::V4(to) = to else {
        panic!("IPv4 expected")
    };
    let fd = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .unwrap();
    setsockopt(&fd, sockopt::RcvBuf, &4096).unwrap();
    connect(fd.as_raw_fd(), &SockaddrIn::from(to)).unwrap();
    std::net::TcpStream::from(fd)
}

#[test]
fn a_stalled_ground_station_drops_for_itself_and_the_receive_log_loses_nothing() {
    let mut d = Daemon::start(
        "forward-stall",
        "data_dir = \"{dir}/data\"\n[http]\nlisten = \"127.0.0.1:0\"\n\
         [[link]]\nname = \"router\"\ntcp_listen = \"127.0.0.1:0\"\n\
         [[forward]]\nname = \"gcs\"\ntcp_listen = \"127.0.0.1:0\"\nqueue_kb = 64\n",
    );
    let link = d.udp_addr("router");
    let forward = d.forward_addr("gcs");
    let http = d.http_addr();
    let mut stalled = stalled_reader(forward);
    assert!(eventually(WAIT, || status_entry(&http, "forwards", "gcs")
        ["peers"]
        == 1));

    // 100,000 frames/s for 2 s, in 1 ms bursts, over a TCP link (so the input itself is lossless).
    let total = 200_000usize;
    let frames: Vec<Vec<u8>> = (0..1024).map(frame).collect();
    let mut sender = std::net::TcpStream::connect(link).unwrap();
    let started = Instant::now();
    let mut sent = 0usize;
    let mut tick = 0u64;
    while sent < total {
        let mut burst = Vec::with_capacity(100 * 30);
        for _ in 0..100 {
            burst.extend_from_slice(&frames[sent % frames.len()]);
            sent += 1;
        }
        sender.write_all(&burst).unwrap();
        tick += 1;
        if let Some(wait) =
            (started + Duration::from_millis(tick)).checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
    }
    drop(sender);
    assert!(
        eventually(Duration::from_secs(60), || status_entry(
            &http, "links", "router"
        )["receipts"]
            == total),
        "{}",
        status_entry(&http, "links", "router")
    );
    let gcs = status_entry(&http, "forwards", "gcs");
    assert_eq!(gcs["frames"], total, "{gcs}");
    let dropped = gcs["dropped"]["peer_slow"].as_u64().unwrap()
        + gcs["dropped"]["queue_full"].as_u64().unwrap();
    assert!(dropped > 0, "the stalled peer's drops are counted: {gcs}");
    assert!(gcs["sent_frames"].as_u64().unwrap() < total as u64, "{gcs}");
    assert_eq!(
        common::receiver_dropped(&http),
        0,
        "the link dropped nothing"
    );

    // The stalled ground station wakes up: what it was sent is whole frames, none cut by the
    // drops (the receiver closes it at the stop).
    stalled
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let _ = stalled.read_to_end(&mut got);
        got
    });
    assert!(d.stop().success());
    let got = reader.join().unwrap();
    let keys = foxborne_receiver::wire::signing::SigningKeys::new(Vec::new(), false);
    let (mut valid, mut rejected) = (0usize, Vec::new());
    for item in DatagramScanner::new(&got, &keys) {
        match item {
            ScanItem::Frame(_) => valid += 1,
            ScanItem::Reject(r) => rejected.push(r.reason),
        }
    }
    assert!(valid > 0 && valid < total, "{valid}");
    assert!(
        rejected.is_empty(),
        "frame-aligned despite the drops: {rejected:?}"
    );
    // The receive log has every frame.
    let receipts = d
        .receive_files()
        .into_iter()
        .map(|(_, l)| l.len())
        .sum::<usize>();
    assert_eq!(receipts, total);
}
