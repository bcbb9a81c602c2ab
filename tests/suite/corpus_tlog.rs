//! Every corpus `.tlog` through our scanner and tlog reader, held against pymavlink's view
//! (`expected-pymavlink/*.json`), and the raw captures against the counts their README gives.

use crate::common;

use foxborne_receiver::tlog::TlogReader;
use foxborne_receiver::wire::signing::SigningKeys;
use foxborne_receiver::wire::{RejectReason, ScanItem, StreamScanner, Version};
use std::collections::BTreeMap;

#[derive(Default, Debug)]
struct Counts {
    messages: u64,
    by_source: BTreeMap<String, u64>,
    by_message: BTreeMap<String, u64>,
    versions: BTreeMap<String, u64>,
    rejects: BTreeMap<RejectReason, u64>,
    reject_records: u64,
    /// A last record whose frame runs past the end of the file.
    truncated_tail: bool,
}

fn count_tlog(bytes: &[u8]) -> Counts {
    let keys = SigningKeys::default();
    let mut c = Counts::default();
    for record in TlogReader::new(bytes, &keys) {
        match record.item {
            ScanItem::Frame(f) => {
                c.messages += 1;
                *c.by_source
                    .entry(format!("{}:{}", f.sysid, f.compid))
                    .or_default() += 1;
                *c.by_message.entry(f.name.to_string()).or_default() += 1;
                let v = if f.version == Version::V2 { "v2" } else { "v1" };
                *c.versions.entry(v.to_string()).or_default() += 1;
            }
            ScanItem::Reject(r) => {
                c.truncated_tail =
                    r.reason == RejectReason::Truncated && record.offset + r.bytes == bytes.len();
                c.reject_records += 1;
                *c.rejects.entry(r.reason).or_default() += 1;
            }
        }
    }
    c
}

fn as_counts(v: &serde_json::Value) -> BTreeMap<String, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn tlogs_match_pymavlink_counts() {
    let files = common::corpus_files("tlog", "tlog");
    assert!(
        files.len() >= 10,
        "expected the corpus tlogs, found {}",
        files.len()
    );
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let expected_path = path
            .parent()
            .unwrap()
            .join(format!("expected-pymavlink/{name}.pymavlink.json"));
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&expected_path).unwrap()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let got = count_tlog(&bytes);
        let mut expected = expected;
        for &(file, message, source) in common::PYMAVLINK_LOSES {
            if file == name {
                let bump = |v: &mut serde_json::Value| *v = (v.as_u64().unwrap() + 1).into();
                bump(&mut expected["messages"]);
                bump(&mut expected["by_message"][message]);
                bump(&mut expected["by_source"][source]);
                bump(&mut expected["versions"]["v2"]);
            }
        }
        eprintln!("{name}: {} msgs, rejects {:?}", got.messages, got.rejects);
        assert_eq!(
            got.messages,
            expected["messages"].as_u64().unwrap(),
            "{name}: messages"
        );
        assert_eq!(
            got.by_source,
            as_counts(&expected["by_source"]),
            "{name}: by_source"
        );
        assert_eq!(
            got.by_message,
            as_counts(&expected["by_message"]),
            "{name}: by_message"
        );
        assert_eq!(
            got.versions,
            as_counts(&expected["versions"]),
            "{name}: versions"
        );
        // pymavlink stops silently at a frame cut by the end of the file (it waits for bytes
        // that never come); we report that last record as truncated. It is the only place the
        // two counts may differ, and only by that one record.
        let pymavlink_view = got.reject_records - got.truncated_tail as u64;
        assert_eq!(
            pymavlink_view,
            expected["bad_data"].as_u64().unwrap(),
            "{name}: bad data records"
        );
    }
}

/// Scans a raw byte stream fed in chunks of `chunk` bytes; returns frames and rejects by reason.
/// Frames as (sysid, compid, msgid, seq), and reject counts by reason.
type ScanSummary = (Vec<(u8, u8, u32, u8)>, BTreeMap<RejectReason, u64>);

fn scan_raw(bytes: &[u8], chunk: usize) -> ScanSummary {
    let keys = SigningKeys::default();
    let mut scanner = StreamScanner::new();
    let mut frames = Vec::new();
    let mut rejects = BTreeMap::new();
    let take = |item: ScanItem<'_>, frames: &mut Vec<_>, rejects: &mut BTreeMap<_, _>| match item {
        ScanItem::Frame(f) => frames.push((f.sysid, f.compid, f.msgid, f.seq)),
        ScanItem::Reject(r) => *rejects.entry(r.reason).or_insert(0) += 1,
    };
    for piece in bytes.chunks(chunk) {
        scanner.push(piece);
        while let Some(item) = scanner.next_item(&keys) {
            take(item, &mut frames, &mut rejects);
        }
    }
    scanner.finish();
    while let Some(item) = scanner.next_item(&keys) {
        take(item, &mut frames, &mut rejects);
    }
    (frames, rejects)
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn raw_captures_give_the_frame_counts_their_readme_states() {
    let dir = common::corpus_dir();
    let v2 = std::fs::read(dir.join("tlog/nodemavlink_mavlink-v2-3412-packets.raw")).unwrap();
    let (frames, rejects) = scan_raw(&v2, 4096);
    assert_eq!(frames.len(), 3412);
    assert!(rejects.is_empty(), "{rejects:?}");

    // "138 frames + 1 bad", starting mid-garbage: the one bad piece is the garbage the capture
    // starts with (the tail of a frame cut off before it). It holds no start marker, so it is one
    // run of junk bytes and no frame candidate.
    let gh5 = std::fs::read(dir.join("tlog/nodemavlink_GH-5.raw")).unwrap();
    let (frames, rejects) = scan_raw(&gh5, 4096);
    assert_eq!(frames.len(), 138);
    assert_eq!(rejects, BTreeMap::from([(RejectReason::Junk, 1)]));

    // Every chunk size gives the same frames.
    for chunk in [1, 2, 3, 7, 13, 64, 263, 280, 1000] {
        assert_eq!(scan_raw(&gh5, chunk).0, frames, "chunk size {chunk}");
    }
}

/// Mission Planner (sysid 255, compid 190) sends MAVLink 1 and MAVLink 2 in this file, from
/// one counter that starts over twice. Read with the reset rule, that is 2 resets and no loss;
/// the old rule took every step back for a late frame and its loss figure went down.
#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn mission_planners_sequence_restarts_are_resets_and_loss_only_grows() {
    use foxborne_receiver::link::LinkId;
    use foxborne_receiver::wire::sequence::SequenceTracker;
    let path = common::corpus_file("tlog", "olivieri_2021-12-08-14-59-44.tlog");
    let bytes = std::fs::read(path).unwrap();
    let keys = SigningKeys::default();
    let mut tracker = SequenceTracker::new();
    let mut lost_seen = Vec::new();
    let mut versions = std::collections::BTreeSet::new();
    for record in TlogReader::new(&bytes, &keys) {
        let ScanItem::Frame(f) = record.item else {
            continue;
        };
        if (f.sysid, f.compid) != (255, 190) {
            continue;
        }
        versions.insert(f.version.number());
        tracker.observe((LinkId::FIRST, 255, 190), f.seq);
        lost_seen.push(tracker.stats().next().unwrap().1.lost);
    }
    assert_eq!(versions.len(), 2, "both MAVLink versions from one sender");
    let s = *tracker.stats().next().unwrap().1;
    assert_eq!(
        (s.received, s.lost, s.resets, s.late),
        (1495, 0, 2, 0),
        "{s:?}"
    );
    assert!(lost_seen.windows(2).all(|w| w[0] <= w[1]));
}
