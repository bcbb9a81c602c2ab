//! What a new user tripped on (issue 9), through the built binary: files of the wrong kind are
//! refused with a sentence naming what they look like, a closed pipe is a clean exit, `status`
//! says which address it asked, a UDP link reports `up`, and `simulate` feeds a daemon.

use crate::common;

use common::{eventually, Daemon};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(common::binary()).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A small valid `.tlog`: `n` heartbeats a second apart, made with the test frame builder.
fn tlog(n: u32) -> Vec<u8> {
    use foxborne_receiver::wire::build::{self, Header};
    let mut bytes = Vec::new();
    for i in 0..n {
        let stamp = 1_790_000_000_000_000u64 + i as u64 * 1_000_000;
        bytes.extend_from_slice(&stamp.to_be_bytes());
        let header = Header {
            sysid: 1,
            compid: 1,
            seq: i as u8,
        };
        bytes.extend_from_slice(&build::v2(header, 0, &build::heartbeat_payload(2, 3)));
    }
    bytes
}

#[test]
fn files_of_the_wrong_kind_are_refused_naming_what_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let ulg = dir.path().join("flight.ulg");
    std::fs::write(
        &ulg,
        b"ULog\x01\x12\x35\x01\x00\x00\x00\x00\x00\x00\x00\x00",
    )
    .unwrap();
    let readme = dir.path().join("README.md");
    std::fs::write(
        &readme,
        "# notes\n\nA receipt line has \"recv_utc\" first:\n{\"recv_utc\":\"x\"}\n",
    )
    .unwrap();
    let raw = dir.path().join("capture.raw");
    let mut bytes = tlog(3);
    bytes.drain(..8); // a frame first, no timestamp: a raw capture
    std::fs::write(&raw, bytes).unwrap();

    let (code, out, err) = run(&["tlog", "convert", ulg.to_str().unwrap()]);
    assert_eq!(code, Some(4), "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("flight.ulg") && err.contains("not a .tlog") && err.contains("PX4 ULog"),
        "{err}"
    );

    let (code, _, err) = run(&["analyze", ulg.to_str().unwrap()]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("PX4 ULog"), "{err}");

    let (code, out, err) = run(&["analyze", readme.to_str().unwrap()]);
    assert_eq!(code, Some(4), "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("README.md") && err.contains("text file") && err.contains("# notes"),
        "{err}"
    );

    let (code, _, err) = run(&["tlog", "convert", raw.to_str().unwrap()]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("raw capture"), "{err}");

    let (code, _, err) = run(&["analyze"]);
    assert_eq!(code, Some(2), "{err}");
}

#[test]
fn a_closed_output_pipe_is_a_clean_exit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.tlog");
    // Far more output than a pipe buffer holds, so the writer meets the closed pipe.
    std::fs::write(&path, tlog(20_000)).unwrap();
    let mut child = Command::new(common::binary())
        .args(["tlog", "convert"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"recv_utc\":"), "{first}");
    // The reader (`head -n 1`) has gone: stdout was dropped with the BufReader.
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}: {err}");
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn status_without_a_config_asks_the_default_address_and_says_so() {
    let (code, _, err) = run(&["status", "--config", "/nonexistent/receiver.toml"]);
    // Nothing listens there in a test run; the point is which address was asked, and why.
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("127.0.0.1:9137") && err.contains("the default; no config at /nonexistent"),
        "{err}"
    );
}

#[test]
fn a_udp_link_reports_up_and_simulate_feeds_it() {
    let config = "data_dir = \"{dir}/data\"\nfsync_interval_s = 0.05\n[http]\nlisten = \"127.0.0.1:0\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:0\"\n";
    let (mut d, udp) = Daemon::start_radio1("newuser", config);
    let events = d.dir.join("data/events/current.jsonl");
    let link_up = || {
        std::fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["kind"] == "link" && e["state"] == "up")
    };
    assert!(eventually(WAIT, || link_up().is_some()));
    let up = link_up().unwrap();
    assert_eq!(up["link"], "radio1");
    assert!(
        up["reason"].as_str().unwrap().contains(&udp.to_string()),
        "{up}"
    );

    common::run_ok(
        Command::new(common::binary())
            .args(["simulate", "--to", &udp.to_string(), "--vehicles", "2"])
            .args([
                "--first-sysid",
                "41",
                "--interval-s",
                "0.1",
                "--duration-s",
                "0.5",
            ]),
        "simulate",
    );
    assert!(eventually(WAIT, || {
        let receipts = d.receipts();
        [41, 42].iter().all(|sysid| {
            ["HEARTBEAT", "SYSTEM_TIME"].iter().all(|msg| {
                receipts
                    .iter()
                    .any(|r| r["sysid"] == *sysid && r["msg"] == *msg)
            })
        })
    }));
    assert!(d.stop().success());
}

#[test]
fn the_help_says_what_each_argument_is() {
    for verb in [&["run"][..], &["analyze"], &["tlog", "convert"]] {
        let mut args = verb.to_vec();
        args.push("--help");
        let (code, out, _) = run(&args);
        assert_eq!(code, Some(0));
        for line in out
            .lines()
            .filter(|l| l.trim_start().starts_with("--config"))
        {
            assert!(line.split_whitespace().count() > 2, "blank help: {line}");
        }
        if verb[0] != "run" {
            let files = out
                .lines()
                .find(|l| {
                    l.trim_start().starts_with("[FILE") || l.trim_start().starts_with("<FILE")
                })
                .unwrap_or_else(|| panic!("no FILE argument in {out}"));
            assert!(files.split_whitespace().count() > 1, "blank help: {files}");
        }
    }
}
