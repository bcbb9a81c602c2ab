//! The built daemon on loopback: UDP and pty serial links in, receive log out, compared field by
//! field with what the test sent; SIGHUP rotation, SIGTERM drain, serial unplug and replug, a
//! list of serial speeds with the wrong one first, and the start-up errors an operator meets
//! first.

use crate::common;

use common::{eventually, header, Daemon};
use foxborne_receiver::wire::build;
use nix::sys::signal::Signal;
use std::net::UdpSocket;
use std::os::fd::OwnedFd;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn mono_now() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn udp_config() -> &'static str {
    "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n"
}

/// A link read in windows stamps each datagram with the kernel's arrival, not the read: with a
/// 100 ms window the datagrams after the first wait in the socket for the next read (a backlog
/// of 101, read 32 at a time), yet each of their receipts' `mono_ns` falls inside its own `send_to` call
/// (on loopback the kernel takes the datagram during the sender's system call). A stamp taken
/// at the read would be some 100 ms late.
#[test]
fn a_udp_link_read_in_windows_keeps_each_datagrams_kernel_arrival_stamp() {
    let config = format!("{}read_window_ms = 100\n", udp_config());
    let (mut d, addr) = Daemon::start_radio1("udp-window", &config);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let current = d.dir.join("data/receive/current.jsonl");
    let lines_are = |n: usize| {
        std::fs::read_to_string(&current)
            .map(|t| t.lines().count() == n)
            .unwrap_or(false)
    };
    let mut sent = Vec::new();
    for seq in 1..=102u8 {
        if seq == 2 {
            // The first was read at once and began a window: the next two wait for its end.
            assert!(eventually(WAIT, || lines_are(1)));
        }
        let utc_before = chrono::Utc::now().timestamp_millis();
        let before = mono_now();
        tx.send_to(
            &build::v2(header(4, seq), 0, &build::heartbeat_payload(2, 3)),
            addr,
        )
        .unwrap();
        sent.push((
            before,
            mono_now(),
            utc_before,
            chrono::Utc::now().timestamp_millis(),
        ));
    }
    assert!(eventually(WAIT, || lines_are(102)));
    let lines = d.receipts();
    assert_eq!(lines.len(), 102);
    // The first opens the window and is not judged: the kernel turns its timestamping on a
    // moment after the first socket asks for it, and until then stamps at the read.
    for (line, (before, after, utc_before, utc_after)) in lines.iter().zip(sent).skip(1) {
        let mono = line["mono_ns"].as_u64().unwrap();
        assert!(
            before <= mono && mono <= after,
            "seq {}: mono_ns {mono} outside its send [{before}, {after}] (+{} ns)",
            line["seq"],
            mono.saturating_sub(after)
        );
        let recv = chrono::DateTime::parse_from_rfc3339(line["recv_utc"].as_str().unwrap())
            .unwrap()
            .timestamp_millis();
        // recv_utc is cut to the millisecond; the test's UTC reads bracket the send.
        assert!(
            utc_before <= recv && recv <= utc_after,
            "seq {}: recv_utc {recv} outside [{utc_before}, {utc_after}] ms",
            line["seq"]
        );
    }
    assert!(d.stop().success());
}

#[test]
fn udp_frames_become_receipts_field_by_field_and_sighup_rotates_without_loss() {
    let (mut d, addr) = Daemon::start_radio1("udp", udp_config());
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let src = tx.local_addr().unwrap().to_string();

    let before = mono_now();
    let utc_before = chrono::Utc::now();
    tx.send_to(
        &build::v2(header(4, 17), 0, &build::heartbeat_payload(2, 3)),
        addr,
    )
    .unwrap();
    tx.send_to(
        &build::v1(
            header(22, 200),
            2,
            &build::system_time_payload(1_758_724_323_912_000, 5000),
        ),
        addr,
    )
    .unwrap();
    let mut junk_then_frame = b"AT+RSSI?\r\n".to_vec();
    junk_then_frame.extend_from_slice(&build::v2(
        header(4, 18),
        30,
        &build::attitude_payload(7, 0.5),
    ));
    let mut bad = build::v2(header(4, 19), 0, &build::heartbeat_payload(2, 3));
    bad[12] ^= 0xFF;
    junk_then_frame.extend_from_slice(&bad);
    tx.send_to(&junk_then_frame, addr).unwrap();

    let current = d.dir.join("data/receive/current.jsonl");
    assert!(eventually(WAIT, || std::fs::read_to_string(&current)
        .map(|t| t.lines().count() == 3)
        .unwrap_or(false)));
    let after = mono_now();
    let lines = d.receipts();
    assert_eq!(lines.len(), 3);
    let keys: Vec<&str> = lines[0]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        &keys[..9],
        &["recv_utc", "mono_ns", "link", "sysid", "compid", "msgid", "msg", "seq", "len"]
    );
    let expect = [
        (4, 0, "HEARTBEAT", 17, 9, 2),
        (22, 2, "SYSTEM_TIME", 200, 12, 1),
        (4, 30, "ATTITUDE", 18, 28, 2),
    ];
    for (line, (sysid, msgid, msg, seq, len, ver)) in lines.iter().zip(expect) {
        assert_eq!(line["link"], "radio1");
        assert_eq!(line["sysid"], sysid);
        assert_eq!(line["compid"], 1);
        assert_eq!(line["msgid"], msgid);
        assert_eq!(line["msg"], msg);
        assert_eq!(line["seq"], seq);
        assert_eq!(line["ver"], ver);
        assert_eq!(line["src"], src.as_str());
        // ATTITUDE's payload ends in zeros (yaw and rates), cut by MAVLink 2 and kept as received.
        if msg != "ATTITUDE" {
            assert_eq!(line["len"], len);
        } else {
            assert!(line["len"].as_u64().unwrap() < 28);
        }
        let mono = line["mono_ns"].as_u64().unwrap();
        assert!(
            before <= mono && mono <= after,
            "mono_ns {mono} outside [{before}, {after}]"
        );
        let recv = line["recv_utc"].as_str().unwrap();
        assert_eq!(recv.len(), 24, "{recv}");
        assert!(recv.ends_with('Z'));
        let t = chrono::DateTime::parse_from_rfc3339(recv).unwrap();
        assert!((t.timestamp_millis() - utc_before.timestamp_millis()).abs() < 10_000);
    }
    assert_eq!(lines[0]["fields"]["type"], 2);
    assert_eq!(
        lines[1]["fields"]["time_unix_usec"],
        1_758_724_323_912_000u64
    );
    assert!(lines[2].get("fields").is_none());

    d.signal(Signal::SIGHUP);
    d.wait_for("files reopened", WAIT);
    for seq in 20..22 {
        tx.send_to(
            &build::v2(header(4, seq), 0, &build::heartbeat_payload(2, 3)),
            addr,
        )
        .unwrap();
    }
    assert!(eventually(WAIT, || std::fs::read_to_string(&current)
        .map(|t| t.lines().count() == 2)
        .unwrap_or(false)));
    assert!(d.stop().success());
    let files = d.receive_files();
    assert_eq!(files.len(), 2, "SIGHUP gives a new file");
    assert_eq!(files[0].1.len(), 3);
    assert_eq!(
        files[1]
            .1
            .iter()
            .map(|l| l["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![20, 21]
    );
}

#[test]
fn sigterm_drains_everything_already_received() {
    let (mut d, addr) = Daemon::start_radio1("drain", udp_config());
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = 3000u32;
    for i in 0..sent {
        let sysid = 1 + (i % 50) as u8;
        tx.send_to(
            &build::v2(
                header(sysid, (i / 50) as u8),
                0,
                &build::heartbeat_payload(2, 3),
            ),
            addr,
        )
        .unwrap();
    }
    let status = d.stop();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        d.receipts().len(),
        sent as usize,
        "every datagram sent before SIGTERM is a line"
    );
    assert!(d
        .seen
        .iter()
        .any(|l| l.contains("receiver stopped") && l.contains("lines_written=3000")));
}

fn write_all(fd: &OwnedFd, bytes: &[u8]) {
    let mut done = 0;
    while done < bytes.len() {
        done += nix::unistd::write(fd, &bytes[done..]).unwrap();
    }
}

#[test]
fn serial_link_survives_a_missing_device_and_unplug_and_replug() {
    let dir_marker = "{dir}";
    let config = format!(
        "data_dir = \"{dir_marker}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"usb0\"\nserial = \"{dir_marker}/ttyV0\"\nbaud = 57600\n"
    );
    let mut d = Daemon::start("serial", &config);
    // Missing at start: reported down, not fatal.
    let (up, down) = (
        common::link_event("up", "usb0"),
        common::link_event("down", "usb0"),
    );
    d.wait_for(&down, WAIT);
    let tty = d.dir.join("ttyV0");
    let current = d.dir.join("data/receive/current.jsonl");
    let mut seq = 0u8;
    for round in 0..3 {
        let master = common::pty_at(&tty);
        d.wait_for(&up, WAIT);
        // A frame split across two writes, then a whole one.
        let f1 = build::v1(header(7, seq), 0, &build::heartbeat_payload(2, 3));
        write_all(&master, &f1[..5]);
        write_all(&master, &f1[5..]);
        let f2 = build::v2(
            header(7, seq + 1),
            2,
            &build::system_time_payload(1_758_724_323_912_000, 99),
        );
        write_all(&master, &f2);
        seq += 2;
        let want = 2 * (round + 1);
        assert!(
            eventually(WAIT, || std::fs::read_to_string(&current)
                .map(|t| t.lines().count() >= 1)
                .unwrap_or(false)
                && d.receipts().len() == want),
            "round {round}: receipts {}",
            d.receipts().len()
        );
        drop(master);
        d.wait_for(&down, WAIT);
    }
    assert!(d.stop().success());
    let lines = d.receipts();
    assert_eq!(
        lines
            .iter()
            .map(|l| l["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        (0..6).collect::<Vec<_>>()
    );
    assert!(lines.iter().all(|l| l["link"] == "usb0" && l["sysid"] == 7));
    assert_eq!(d.seen.iter().filter(|l| l.contains("link up")).count(), 3);
}

#[test]
fn a_port_in_use_is_a_clear_error_and_a_bad_config_exits_78() {
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut d = Daemon::start("inuse", &format!("data_dir = \"{{dir}}/data\"\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:{port}\"\n"));
    let status = d.child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
    d.wait_for(
        &format!("link radio1: cannot listen on udp 127.0.0.1:{port}"),
        WAIT,
    );

    let mut d = Daemon::start(
        "badcfg",
        "data_dir = \"{dir}/data\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:99999\"\n",
    );
    assert_eq!(d.child.wait().unwrap().code(), Some(78));
    let line = d.wait_for("link[0].udp", WAIT);
    assert!(line.contains("receiver.toml"), "{line}");
}

nix::ioctl_read_bad!(tcgets2, nix::libc::TCGETS2, nix::libc::termios2);

/// The speed the far end of the pty set (a pty's master reads its slave's settings).
fn pty_speed(master: &OwnedFd) -> u32 {
    use std::os::fd::AsRawFd;
    // SAFETY: termios2 is plain data; the kernel fills it.
    let mut t: nix::libc::termios2 = unsafe { std::mem::zeroed() };
    // SAFETY: `t` is a writable termios2 for TCGETS2 to fill.
    unsafe { tcgets2(master.as_raw_fd(), &mut t) }.unwrap();
    t.c_ospeed
}

#[test]
fn a_serial_speed_list_finds_the_speed_that_gives_frames() {
    let dir_marker = "{dir}";
    let config = format!(
        "data_dir = \"{dir_marker}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"usb0\"\nserial = \"{dir_marker}/ttyV0\"\nbaud = [57600, 115200, 921600]\n"
    );
    let mut radio_end = None;
    let mut d = Daemon::start_prepared("serial-bauds", &config, |dir| {
        // A radio at 115200 baud behind the pty, there before the daemon starts.
        let master = common::pty_at(&dir.join("ttyV0"));
        nix::fcntl::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(&master),
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
        )
        .unwrap();
        radio_end = Some(master);
    });
    let master = radio_end.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let radio = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seq = 0u8;
            let mut wrong = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let frame = build::v2(header(9, seq), 0, &build::heartbeat_payload(2, 3));
                // At the radio's speed the frame arrives as sent; at any other the UART makes
                // bytes of it that are no frame at all.
                let bytes: Vec<u8> = if pty_speed(&master) == 115_200 {
                    seq = seq.wrapping_add(1);
                    frame
                } else {
                    wrong += 1;
                    frame.iter().map(|b| b & 0x7F).collect()
                };
                let _ = nix::unistd::write(&master, &bytes);
                // The radio's own pace: a frame every 10 ms.
                std::thread::sleep(Duration::from_millis(10));
            }
            wrong
        })
    };
    let up = d.wait_for("link up", WAIT);
    assert!(
        up.contains("at 115200 baud") && up.contains("tried in turn: 57600, 115200, 921600"),
        "{up}"
    );
    assert!(
        up.contains("low latency not supported by the driver"),
        "a pty has no serial settings: {up}"
    );
    let http = d.http_addr();
    assert!(eventually(WAIT, || {
        common::status_entry(&http, "links", "usb0")["receipts"]
            .as_u64()
            .unwrap()
            >= 5
    }));
    let link = common::status_entry(&http, "links", "usb0");
    assert!(
        link["rejects"]["junk"].as_u64().unwrap() > 0,
        "what arrived at 57600 is counted as junk: {link}"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let wrong = radio.join().unwrap();
    assert!(wrong > 0, "the first speed tried was the wrong one");
    assert!(d.stop().success());
    let up_events: Vec<serde_json::Value> = d
        .events()
        .into_iter()
        .filter(|e| e["kind"] == "link" && e["state"] == "up")
        .collect();
    assert_eq!(up_events.len(), 1, "{up_events:?}");
    assert!(d.receipts().iter().all(|r| r["sysid"] == 9));
}
