//! The corpus's SiK tlogs (`codelever_*`, 2013): the radio's own reports as the receiver
//! decodes them, against pymavlink's reading of the same files (`tests/redundancy_peer.py
//! radio-status`), and `analyze` over them.
//!
//! SiK firmware of that time reports as ArduPilot's RADIO (msgid 166, from sysid 51 compid
//! 68); later firmware as RADIO_STATUS (109). Both carry the same seven fields (rxerrors,
//! fixed, rssi, remrssi, txbuf, noise, remnoise), and the receiver must read both.
//!
//! Needs the corpus and a Python with pymavlink (ignored without them, see
//! `common::corpus_dir` and `common::python_with`).

use crate::common;

use foxborne_receiver::utc::parse_utc_ns;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const TLOGS: [&str; 2] = [
    "codelever_2013-10-13_16-58-51.tlog",
    "codelever_2013-10-13_18-50-10.tlog",
];
const FIELDS: [&str; 7] = [
    "rxerrors", "fixed", "rssi", "remrssi", "txbuf", "noise", "remnoise",
];
const RADIO_STATUS: u64 = 109;
const RADIO: u64 = 166;

/// Every radio report pymavlink reads from `tlog`, in file order.
fn pymavlink_reports(tlog: &Path) -> Vec<Value> {
    let python = common::python_with(&["pymavlink"]);
    let out = common::run_ok(
        common::python_script(&python, "redundancy_peer.py")
            .arg("radio-status")
            .arg(tlog),
        "redundancy_peer.py radio-status",
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["reports"].as_array().unwrap().clone()
}

/// `tlog convert` of `tlog` (with `args`): its radio receipts, in file order.
fn converted_reports(tlog: &Path, args: &[&str]) -> Vec<Value> {
    common::json_lines(
        Command::new(common::binary())
            .args(["tlog", "convert"])
            .args(args)
            .arg(tlog),
    )
    .into_iter()
    .filter(|r| r["msgid"] == RADIO_STATUS || r["msgid"] == RADIO)
    .collect()
}

/// A receipt as the comparison sees it: who sent it, its number and the seven fields (null
/// where the receipt has no `fields`).
fn comparable(r: &Value) -> Value {
    let fields: Value = FIELDS
        .iter()
        .map(|f| (f.to_string(), r["fields"][f].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into();
    json!({
        "msgid": r["msgid"], "sysid": r["sysid"], "compid": r["compid"], "seq": r["seq"],
        "fields": fields,
    })
}

/// Compares the receiver's receipts with pymavlink's reports one by one: the first
/// difference, if any.
fn first_difference(ours: &[Value], theirs: &[Value]) -> Option<String> {
    if ours.len() != theirs.len() {
        return Some(format!(
            "{} radio receipts, pymavlink reads {}",
            ours.len(),
            theirs.len()
        ));
    }
    ours.iter()
        .zip(theirs)
        .enumerate()
        .find(|(_, (o, t))| comparable(o) != comparable(t))
        .map(|(i, (o, t))| format!("report {i}: ours {o}\npymavlink {t}"))
}

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn sik_radio_reports_decode_as_pymavlink_reads_them() {
    for name in TLOGS {
        let tlog = common::corpus_file("tlog", name);
        let theirs = pymavlink_reports(&tlog);
        // The files are the corpus's SiK logs: hundreds of reports, all from the radio's ids.
        assert!(theirs.len() > 100, "{name}: {} radio reports", theirs.len());
        assert!(
            theirs.iter().all(|r| r["sysid"] == 51 && r["compid"] == 68),
            "{name}"
        );
        let ours = converted_reports(&tlog, &["--fields", "RADIO_STATUS,RADIO"]);
        assert_eq!(first_difference(&ours, &theirs), None, "{name}");
        // Not every value the same: the comparison reads real, changing numbers.
        for field in ["rssi", "remrssi", "noise", "remnoise"] {
            let distinct: std::collections::BTreeSet<String> = ours
                .iter()
                .map(|r| r["fields"][field].to_string())
                .collect();
            assert!(distinct.len() > 1, "{name}: {field} never changes");
        }
    }
}

/// The radio's reports are radio reports by default, whichever of the two messages the
/// firmware sends: `tlog convert` carries their fields without being asked (as the receive log
/// does), and a telemetry gap on the radio's link carries its numbers.
///
/// Fails while the receiver knows only RADIO_STATUS (109): these logs' SiK radio sends RADIO
/// (166), which gets no `fields` by default and never reaches the radio monitor, so the gap
/// `analyze` finds in the first log carries no `radio` though the radio was reporting.
#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn sik_radio_reports_are_radio_numbers_by_default() {
    let mut failures = Vec::new();
    for name in TLOGS {
        let tlog = common::corpus_file("tlog", name);
        let theirs = pymavlink_reports(&tlog);
        let ours = converted_reports(&tlog, &[]);
        if let Some(difference) = first_difference(&ours, &theirs) {
            failures.push(format!("{name}, default fields: {difference}"));
        }
        let events = common::json_lines(Command::new(common::binary()).arg("analyze").arg(&tlog));
        for gap in events.iter().filter(|e| e["kind"] == "telemetry_gap") {
            // Whether the radio reported in the 10 s before the vehicle's last heartbeat.
            let Some(last) = gap["last_recv_utc"].as_str().and_then(parse_utc_ns) else {
                continue;
            };
            let reported_before = ours.iter().any(|r| {
                r["recv_utc"]
                    .as_str()
                    .and_then(parse_utc_ns)
                    .is_some_and(|t| t > last - 10_000_000_000 && t <= last)
            });
            if reported_before && gap["radio"].as_array().is_none_or(|r| r.is_empty()) {
                failures.push(format!("{name}: a gap without the radio's numbers: {gap}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn analyze_reads_the_sik_tlogs() {
    for name in TLOGS {
        let tlog = common::corpus_file("tlog", name);
        let events = common::json_lines(Command::new(common::binary()).arg("analyze").arg(&tlog));
        assert!(!events.is_empty(), "{name}: no events");
        assert!(
            events
                .iter()
                .all(|e| e["kind"].is_string() && e["utc"].is_string()),
            "{name}"
        );
    }
}
