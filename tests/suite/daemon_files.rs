//! The daemon's files as the service manages them: `reload --pid` (the unit's ExecReload) starts
//! a new receive file and loses no line; retention removes old day folders at start, never the
//! open file, and says what went in a `retention` event.

use crate::common;

use common::Daemon;
use foxborne_receiver::wire::build;
use std::process::Command;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn heartbeat(seq: u8) -> Vec<u8> {
    build::heartbeat_v2(7, seq)
}

#[test]
fn reload_verb_starts_a_new_file_and_loses_nothing() {
    let (mut d, udp) = Daemon::start_radio1(
        "reload",
        "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n",
    );
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for seq in 0..5u8 {
        tx.send_to(&heartbeat(seq), udp).unwrap();
    }
    assert!(common::eventually(WAIT, || d.receipts().len() == 5));
    common::run_ok(
        Command::new(common::binary()).args(["reload", "--pid", &d.child.id().to_string()]),
        "reload",
    );
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

#[test]
fn retention_removes_old_day_folders_at_start_with_their_event() {
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let old = [
        (
            "receive",
            "2020-01-01",
            "receive-20200101T000000Z.jsonl",
            300,
        ),
        ("events", "2020-01-02", "events-20200102T000000Z.jsonl", 200),
        ("tlog", "2020-01-03", "receive-20200103T000000Z.tlog", 100),
    ];
    let config = "data_dir = \"{dir}/data\"\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n[retention]\nmax_age_days = 30\n";
    let mut d = Daemon::start_prepared("retention", config, |dir| {
        let data = dir.join("data");
        for (stream, day, file, len) in old {
            std::fs::create_dir_all(data.join(stream).join(day)).unwrap();
            std::fs::write(data.join(stream).join(day).join(file), vec![b'x'; len]).unwrap();
        }
        let kept = data.join("receive").join(&yesterday);
        std::fs::create_dir_all(&kept).unwrap();
        std::fs::write(kept.join("receive-kept.jsonl"), b"{}\n").unwrap();
        std::fs::create_dir_all(data.join("receive/notes")).unwrap();
    });
    let line = d.wait_for("retention: removed", WAIT);
    assert!(line.contains("removed 3 day folders (600 bytes)"), "{line}");
    let data = d.dir.join("data");
    for (stream, day, _, _) in old {
        assert!(!data.join(stream).join(day).exists(), "{stream}/{day}");
    }
    assert!(
        data.join("receive")
            .join(&yesterday)
            .join("receive-kept.jsonl")
            .exists(),
        "yesterday stays"
    );
    assert!(data.join("receive/notes").exists(), "not a day folder");

    // The event is in the events file: the folders oldest first, with what each held.
    assert!(
        common::eventually(WAIT, || retention_event(&data).is_some()),
        "no retention event in the events file"
    );
    let event = retention_event(&data).unwrap();
    assert!(d.stop().success());
    let removed: Vec<(String, u64, String)> = event["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["folder"].as_str().unwrap().to_string(),
                f["bytes"].as_u64().unwrap(),
                f["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        removed,
        vec![
            ("receive/2020-01-01".into(), 300, "max_age_days".into()),
            ("events/2020-01-02".into(), 200, "max_age_days".into()),
            ("tlog/2020-01-03".into(), 100, "max_age_days".into()),
        ]
    );
    assert_eq!(event["max_age_days"], 30);
    assert!(event["max_total_mb"].is_null());
}

/// The first `retention` event in `<data>/events/*/*.jsonl`.
fn retention_event(data: &std::path::Path) -> Option<serde_json::Value> {
    let days = std::fs::read_dir(data.join("events")).ok()?;
    for day in days.flatten().filter(|e| e.path().is_dir()) {
        for file in std::fs::read_dir(day.path()).ok()?.flatten() {
            let text = std::fs::read_to_string(file.path()).ok()?;
            for line in text.lines() {
                let value: serde_json::Value = serde_json::from_str(line).ok()?;
                if value["kind"] == "retention" {
                    return Some(value);
                }
            }
        }
    }
    None
}
