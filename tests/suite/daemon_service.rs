//! Running as a service: the systemd notify protocol (READY, STATUS, WATCHDOG from the pipeline
//! loop, STOPPING), the `status` table from a running daemon, and `check-config` on good and bad
//! configs.

use crate::common;

use common::notify::NotifySocket;
use common::Daemon;
use foxborne_receiver::wire::build::{self, Header};
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn base_config() -> &'static str {
    "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[gap]\nvehicles = { 7 = \"UAS-07\" }\n"
}

#[test]
fn notify_protocol_ready_status_watchdog_and_stopping() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let socket = NotifySocket::bind(dir);
    let stall = dir.join("stall");
    let mut env = socket.env("2000000");
    env.push(("FOXBORNE_TEST_STALL_FILE", stall.to_str().unwrap()));
    let mut d = Daemon::start_with_env("notify", base_config(), &env);
    assert_eq!(socket.wait("READY=1", WAIT).trim_end(), "READY=1");
    let status = socket.wait("STATUS=", WAIT);
    assert!(
        status.starts_with("STATUS=links up 1/1, vehicles heard 0, open gaps "),
        "{status}"
    );
    socket.wait("WATCHDOG=1", WAIT);
    socket.wait("WATCHDOG=1", WAIT);

    // Wedge the pipeline: the pings stop (the watchdog would fire after 2 s).
    std::fs::write(&stall, b"").unwrap();
    socket.assert_silent_for(Duration::from_millis(1500));
    std::fs::remove_file(&stall).unwrap();
    socket.wait("WATCHDOG=1", WAIT);

    // A vehicle heard shows in STATUS=.
    let udp = d.udp_addr("radio1");
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    tx.send_to(
        &build::v2(
            Header {
                sysid: 7,
                compid: 1,
                seq: 0,
            },
            0,
            &build::heartbeat_payload(2, 3),
        ),
        udp,
    )
    .unwrap();
    let status = socket.wait("STATUS=links up 1/1, vehicles heard 1", WAIT);
    assert!(status.contains("receipts 1"), "{status}");

    d.signal(nix::sys::signal::Signal::SIGTERM);
    socket.wait("STOPPING=1", WAIT);
    assert!(d.child.wait().unwrap().success());
}

#[test]
fn status_prints_vehicles_and_links_of_a_running_daemon() {
    let mut d = Daemon::start("status", base_config());
    let udp = d.udp_addr("radio1");
    let http = d.http_addr();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for seq in [0u8, 1, 5] {
        tx.send_to(
            &build::v2(
                Header {
                    sysid: 7,
                    compid: 1,
                    seq,
                },
                0,
                &build::heartbeat_payload(2, 3),
            ),
            udp,
        )
        .unwrap();
    }
    let run = || {
        Command::new(common::binary())
            .args(["status", "--addr", &http])
            .output()
            .unwrap()
    };
    // Published on the daemon's housekeeping tick: wait until it shows all three frames.
    assert!(common::eventually(WAIT, || String::from_utf8_lossy(
        &run().stdout
    )
    .contains("50.0 %")));
    let out = run();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let vehicle = text.lines().find(|l| l.contains("UAS-07")).unwrap();
    // Three frames, seq 0, 1, 5: three lost of six sent.
    assert!(
        vehicle.contains("radio1") && vehicle.contains("50.0 %"),
        "{text}"
    );
    let link = text
        .lines()
        .find(|l| l.trim_start().starts_with("radio1"))
        .unwrap();
    assert!(link.contains("listening") && link.contains(" 3 "), "{text}");
    let json = Command::new(common::binary())
        .args(["status", "--json", "--addr", &http])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["links"][0]["seq_lost"], 3);
    assert!(d.stop().success());

    // No daemon: a clear error, exit 1.
    let out = Command::new(common::binary())
        .args(["status", "--addr", &http])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no daemon answering"));
}

#[test]
fn check_config_prints_settings_or_names_the_key() {
    let (code, out, _) = common::check_config(base_config());
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["gap"]["vehicles"]["7"], "UAS-07");
    assert_eq!(v["gap"]["threshold_s"], 3.0);

    common::assert_config_refused(
        "data_dir = \"x\"\ncolour = 1\n[[link]]\nname = \"a\"\nudp = \"127.0.0.1:1\"\n",
        &["colour", "receiver.toml: line 2"],
    );

    common::assert_config_refused(
        "[[link]]\nname = \"a\"\nudp = \"127.0.0.1:70000\"\n",
        &["link[0].udp"],
    );

    // A serial path that is not a device: an error. A missing one: the daemon waits for it.
    common::assert_config_refused(
        "data_dir = \"{dir}/data\"\n[[link]]\nname = \"usb0\"\nserial = \"{dir}\"\n",
        &["link[0].serial", "not a character device"],
    );
    let (code, _, err) = common::check_config("data_dir = \"{dir}/data\"\n[[link]]\nname = \"usb0\"\nserial = \"/dev/serial/by-id/usb-missing\"\n");
    assert_eq!(code, Some(0));
    assert!(
        err.contains("warning") && err.contains("does not exist"),
        "{err}"
    );
}
