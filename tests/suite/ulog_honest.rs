//! Honest status and whole evidence (issue 15), on damaged copies of corpus logs made here:
//! a log without data is not complete; a log both malformed and truncated keeps its malformed
//! messages; `ulog record` shows a malformed message the report cites; garbage is called garbage
//! and only a clean cut is blamed on a power loss; a damaged type byte is a finding; one sample
//! with a far-future timestamp is one finding, not dozens of stalls; topics PX4 publishes on
//! events (`event`, commands) get none.

use crate::common;

use foxborne_receiver::cmd::Exit;
use foxborne_receiver::ulog::display::grouped;
use foxborne_receiver::ulog::ingest::ingest_reader;
use foxborne_receiver::ulog::report::{Report, Status};
use foxborne_receiver::ulog::writer::UlogWriter;
use foxborne_receiver::ulog::SliceReader;
use std::process::Command;

const POWER: &str = "most likely when power was cut during logging";

fn ingest(bytes: &[u8]) -> Report {
    ingest_reader(bytes, "test.ulg", bytes.len() as u64, None, None).unwrap()
}

/// (message, offset, size, type, msg_id of a data message) for every message of a clean log.
fn messages(bytes: &[u8]) -> Vec<(u64, usize, usize, u8, Option<u16>)> {
    let mut reader = SliceReader::new(bytes);
    let mut out = Vec::new();
    while let Some(item) = reader.next_record() {
        let r = item.expect("corpus log reads cleanly");
        if r.message == 0 {
            continue;
        }
        let msg_id = (r.msg_type == b'D').then(|| u16::from_le_bytes([r.bytes[3], r.bytes[4]]));
        out.push((
            r.message,
            r.offset as usize,
            r.size as usize,
            r.msg_type,
            msg_id,
        ));
    }
    out
}

fn corpus(name: &str) -> Vec<u8> {
    std::fs::read(common::corpus_log(name)).unwrap()
}

fn scratch(name: &str) -> common::Scratch {
    common::scratch(name)
}

/// A deterministic byte stream (xorshift), for garbage.
fn garbage(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_log_without_data_is_quarantined_not_complete() {
    let bytes = corpus("pyulog_sample.ulg");
    // The 16-byte header alone.
    let r = ingest(&bytes[..16]);
    assert_eq!(r.status, Status::Quarantined, "{:?}", r.reason);
    assert_eq!(Exit::from(r.status).code(), 3);
    let reason = r.reason.unwrap();
    assert!(reason.contains("has no data"), "{reason}");
    assert!(reason.contains("after its file header"), "{reason}");
    assert!(r.topics.is_empty() && r.findings.is_empty());

    // Cut right where the definitions end (the first subscription or logged string).
    let msgs = messages(&bytes);
    let data_at = msgs
        .iter()
        .find(|m| matches!(m.3, b'A' | b'L' | b'C' | b'D' | b'O' | b'R'))
        .unwrap()
        .1;
    let r = ingest(&bytes[..data_at]);
    assert_eq!(r.status, Status::Quarantined, "{:?}", r.reason);
    let reason = r.reason.unwrap();
    assert!(reason.contains("after its definitions at"), "{reason}");
    assert!(
        r.truncation.is_none(),
        "a cut on a boundary is no truncation"
    );

    // Definitions and subscriptions, but not one sample.
    let first_d = msgs.iter().find(|m| m.3 == b'D').unwrap().1;
    let r = ingest(&bytes[..first_d]);
    assert_eq!(r.status, Status::Quarantined);
    assert!(r.reason.unwrap().contains("before any logged sample"));

    // The binary agrees: exit 3.
    let dir = scratch("nodata");
    let path = dir.join("header_only.ulg");
    std::fs::write(&path, &bytes[..16]).unwrap();
    common::assert_exit(&common::ulog_ingest(&path, &dir).output().unwrap(), 3);
}

/// A corpus log with one data message pointed at a msg_id nobody subscribed, then cut inside a
/// later data message: (bytes, the malformed message's number and offset).
fn malformed_and_truncated(bytes: &[u8]) -> (Vec<u8>, u64, usize) {
    let msgs = messages(bytes);
    let data: Vec<_> = msgs.iter().filter(|m| m.3 == b'D').collect();
    let victim = data[data.len() / 3];
    let cut_in = data[data.len() * 2 / 3];
    let mut damaged = bytes[..cut_in.1 + cut_in.2 / 2].to_vec();
    damaged[victim.1 + 3..victim.1 + 5].copy_from_slice(&0xFFFEu16.to_le_bytes());
    (damaged, victim.0, victim.1)
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_malformed_and_truncated_log_keeps_its_malformed_messages() {
    let bytes = corpus("pyulog_sample.ulg");
    let (damaged, message, offset) = malformed_and_truncated(&bytes);
    let r = ingest(&damaged);
    assert_eq!(r.status, Status::Quarantined);
    let t = r.truncation.as_ref().expect("truncation is reported");
    assert_eq!(t.inside, "data_message");
    assert_eq!(r.malformed.len(), 1, "{:?}", r.malformed);
    assert_eq!(
        (r.malformed[0].message, r.malformed[0].offset),
        (message, offset as u64)
    );
    assert!(r.malformed[0]
        .detail
        .contains("no subscription for msg_id 65534"));
    let reason = r.reason.unwrap();
    assert!(reason.contains(POWER), "a clean cut: {reason}");
    assert!(
        reason.contains("1 malformed message, the first at byte"),
        "{reason}"
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn ulog_record_shows_the_malformed_message_a_report_cites() {
    let bytes = corpus("pyulog_sample.ulg");
    let (damaged, message, offset) = malformed_and_truncated(&bytes);
    let dir = scratch("record");
    let path = dir.join("damaged.ulg");
    std::fs::write(&path, &damaged).unwrap();
    for args in [
        vec!["--message".to_string(), message.to_string()],
        vec!["--offset".to_string(), (offset + 5).to_string()],
    ] {
        let out = Command::new(common::binary())
            .args(["ulog", "record"])
            .arg(&path)
            .args(&args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("MALFORMED"), "{args:?}: {text}");
        assert!(text.contains("no subscription for msg_id 65534"), "{text}");
        assert!(text.contains("msg_id       65534"), "{text}");
        assert!(
            text.contains(&format!("offset       byte {}", grouped(offset as u64))),
            "{text}"
        );
        assert!(text.contains("bytes"), "a hex dump: {text}");
    }
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn garbage_is_called_garbage_and_only_a_clean_cut_a_power_loss() {
    let bytes = corpus("pyulog_sample.ulg");
    let msgs = messages(&bytes);
    let first_d = msgs.iter().find(|m| m.3 == b'D').unwrap().1;
    let mut garbage_seen = 0;
    for seed in 1..=40u64 {
        // Garbage after a good header, and after good definitions and subscriptions.
        for prefix in [16, first_d] {
            let mut damaged = bytes[..prefix].to_vec();
            damaged.extend(garbage(seed, 3000));
            let r = ingest(&damaged);
            assert_ne!(r.status, Status::Complete, "seed {seed}");
            let reason = r.reason.unwrap_or_default();
            assert!(
                !reason.contains(POWER),
                "seed {seed} prefix {prefix}: {reason}"
            );
            if reason.contains("That is garbage in the file") {
                garbage_seen += 1;
                assert_eq!(r.truncation.as_ref().unwrap().inside, "garbage");
            }
        }
    }
    assert!(
        garbage_seen >= 60,
        "garbage named in {garbage_seen} of 80 cases"
    );

    // A cut inside the last message is what a power loss leaves: said so.
    let last = msgs.last().unwrap();
    let r = ingest(&bytes[..last.1 + last.2 - 1]);
    assert!(r.reason.unwrap().contains(POWER));
    // So is a tail of zeros the logger never filled.
    let mut zeros = bytes.clone();
    zeros.extend(std::iter::repeat_n(0u8, 4096));
    let r = ingest(&zeros);
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("a run of zero bytes") && reason.contains(POWER),
        "{reason}"
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_data_message_with_a_damaged_type_byte_is_a_finding() {
    let bytes = corpus("pyulog_sample.ulg");
    let clean = ingest(&bytes);
    let msgs = messages(&bytes);
    let victim = msgs.iter().filter(|m| m.3 == b'D').nth(500).unwrap();
    let mut damaged = bytes.clone();
    damaged[victim.1 + 2] = b'X';
    let r = ingest(&damaged);
    assert_eq!(r.status, Status::Complete, "{:?}", r.reason);
    let unknown = common::found(&r, "unknown_message_type");
    assert_eq!(unknown.len(), 1, "{:?}", r.findings);
    let f = unknown[0];
    assert_eq!((f.message, f.offset), (victim.0, victim.1 as u64));
    assert!(f.title.contains("'X'"), "{}", f.title);
    // The finding names the topic the sample belonged to, and that topic lost one sample.
    let topic = f.topic.clone().expect("the msg_id and size fit a topic");
    assert!(f.title.contains("a sample is probably lost"), "{}", f.title);
    let count = |r: &Report| {
        r.topics
            .iter()
            .find(|t| {
                Some(t.topic.as_str()) == Some(topic.as_str()) && Some(t.multi_id) == f.multi_id
            })
            .unwrap()
            .samples
    };
    assert_eq!(count(&r) + 1, count(&clean));
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn one_far_future_sample_is_one_outlier_finding_not_dozens_of_stalls() {
    let bytes = corpus("pyulog_sample_log_small.ulg");
    let r = ingest(&bytes);
    assert_eq!(r.status, Status::Complete);
    let outliers = common::found(&r, "timestamp_outlier");
    assert_eq!(outliers.len(), 1, "{:?}", r.findings);
    assert_eq!(outliers[0].topic.as_deref(), Some("mission"));
    assert_eq!(outliers[0].timestamp, 1_194_367_328);
    let long_stalls: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.kind == "topic_stall" && f.duration_ms > 10_000.0)
        .map(|f| &f.title)
        .collect();
    assert!(long_stalls.is_empty(), "{long_stalls:#?}");
}

/// A synthetic 30 s log with three topics at 10 Hz.
fn three_topics(extra: impl Fn(&mut UlogWriter<Vec<u8>>, u64)) -> Vec<u8> {
    let mut w = UlogWriter::new(Vec::new(), 1_000_000).unwrap();
    w.format("a:uint64_t timestamp;float v;").unwrap();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        if i > 0 {
            w.format(&format!("{name}:uint64_t timestamp;float v;"))
                .unwrap();
        }
        w.subscribe(0, i as u16, name).unwrap();
    }
    for k in 0..300u64 {
        let t = 1_000_000 + k * 100_000;
        for id in 0..3u16 {
            let mut p = (t + u64::from(id)).to_le_bytes().to_vec();
            p.extend(1f32.to_le_bytes());
            w.data(id, &p).unwrap();
        }
        extra(&mut w, t);
    }
    w.into_inner()
}

#[test]
fn an_outlier_is_told_from_a_jump_of_the_whole_log() {
    // One sample of `b` at 1,000 s in a 31 s log.
    let bytes = three_topics(|w, t| {
        if t == 11_000_000 {
            let mut p = 1_000_000_000u64.to_le_bytes().to_vec();
            p.extend(1f32.to_le_bytes());
            w.data(1, &p).unwrap();
        }
    });
    let r = ingest(&bytes);
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["timestamp_outlier"], "{:#?}", r.findings);
    // Without it, the same log has no finding at all.
    assert!(ingest(&three_topics(|_, _| {})).findings.is_empty());

    // Every topic jumps 60 s at once (the clock was set): no outlier, and the jump is a stall
    // of each topic, as it is.
    let mut w = UlogWriter::new(Vec::new(), 1_000_000).unwrap();
    w.format("a:uint64_t timestamp;float v;").unwrap();
    w.subscribe(0, 0, "a").unwrap();
    for k in 0..100u64 {
        let t = 1_000_000 + k * 100_000 + if k >= 50 { 60_000_000 } else { 0 };
        let mut p = t.to_le_bytes().to_vec();
        p.extend(1f32.to_le_bytes());
        w.data(0, &p).unwrap();
    }
    let r = ingest(&w.into_inner());
    let kinds: Vec<_> = r.findings.iter().map(|f| f.kind.as_str()).collect();
    assert_eq!(kinds, ["topic_stall"], "{:#?}", r.findings);
}

/// A 30 s log with `a` at 10 Hz and one topic named `bursty` that gets three samples 1 ms
/// apart every 5 s, as PX4's `event` topic does.
fn with_bursts(bursty: &str) -> Vec<u8> {
    let mut w = UlogWriter::new(Vec::new(), 1_000_000).unwrap();
    w.format("a:uint64_t timestamp;float v;").unwrap();
    w.format(&format!("{bursty}:uint64_t timestamp;uint32_t id;"))
        .unwrap();
    w.subscribe(0, 0, "a").unwrap();
    w.subscribe(0, 1, bursty).unwrap();
    for k in 0..300u64 {
        let t = 1_000_000 + k * 100_000;
        let mut p = t.to_le_bytes().to_vec();
        p.extend(1f32.to_le_bytes());
        w.data(0, &p).unwrap();
        if k % 50 == 0 {
            for burst in 0..3 {
                let mut p = (t + 1000 * burst).to_le_bytes().to_vec();
                p.extend(7u32.to_le_bytes());
                w.data(1, &p).unwrap();
            }
        }
    }
    w.into_inner()
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn topics_published_on_events_get_no_topic_stall() {
    let stalls = |bytes: &[u8]| -> Vec<String> {
        ingest(bytes)
            .findings
            .into_iter()
            .filter(|f| f.kind == "topic_stall")
            .filter_map(|f| f.topic)
            .collect()
    };
    // The same bursts under another name are stalls of thousands of median periods: the
    // exclusion is by the topic's nature, not its data.
    assert_eq!(stalls(&with_bursts("bursty")).len(), 6);
    for topic in ["event", "vehicle_command", "vehicle_command_ack"] {
        assert!(stalls(&with_bursts(topic)).is_empty(), "{topic}");
    }
    // flightreview_ekf_failure.ulg: its 17 stalls of `event` are gone; the setpoint topics that
    // stopped when the vehicle left position control are still there.
    let bytes = corpus("flightreview_ekf_failure.ulg");
    let topics = stalls(&bytes);
    assert!(!topics.iter().any(|t| t == "event"), "{topics:?}");
    assert!(
        topics.iter().any(|t| t == "trajectory_setpoint"),
        "{topics:?}"
    );
    assert_eq!(topics.len(), 11, "{topics:?}");
}
