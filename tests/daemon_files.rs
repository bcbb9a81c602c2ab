//! The daemon's files as the service manages them: `reload --pid` (the unit's ExecReload) starts
//! a new receive file and loses no line; retention removes old day folders at start, never the
//! open file, and says what went in a `retention` event.

mod common;

use common::Daemon;
use foxborne_receiver::wire::build::{self, Header};
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn heartbeat(seq: u8) -> Vec<u8> {
    build::v2(
        Header {
            sysid: 7,
            compid: 1,
            seq,
        },
        0,
        &build::heartbeat_payload(2, 3),
    )
}

#[test]
fn reload_verb_starts_a_new_file_and_loses_nothing() {
    let mut d = Daemon::start(
        "reload",
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n",
    );
    let udp = d.udp_addr("radio1");
    d.wait_for("receiver started", WAIT);
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for seq in 0..5u8 {
        tx.send_to(&heartbeat(seq), udp).unwrap();
    }
    assert!(common::eventually(WAIT, || d.receipts().len() == 5));
    let reload = Command::new(common::binary())
        .args(["reload", "--pid", &d.child.id().to_string()])
        .output()
        .unwrap();
    assert!(reload.status.success(), "{reload:?}");
    d.wait_for("SIGHUP: files reopened", WAIT);
    for seq in 5..10u8 {
        tx.send_to(&heartbeat(seq), udp).unwrap();
    }
    assert!(common::eventually(WAIT, || d.receipts().len() == 10));
    assert!(d.stop().success());
    let files = d.receive_files();
    assert_eq!(files.len(), 2, "one file before the reload, one after");
    let seqs: Vec<u64> = files
        .iter()
        .flat_map(|(_, lines)| lines.iter().map(|l| l["seq"].as_u64().unwrap()))
        .collect();
    assert_eq!(seqs, (0..10).collect::<Vec<_>>());

    // Only one process is ever a target: 0 and -1 would signal process groups.
    for pid in ["0", "-1"] {
        let out = Command::new(common::binary())
            .args(["reload", "--pid", pid])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--pid {pid}: {out:?}");
    }
}
