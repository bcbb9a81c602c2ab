//! Property tests for the MAVLink frame scanner and the `.tlog` reader (issue 6): arbitrary and
//! mutated input never panics, every input byte is accounted for exactly once, chunking a stream
//! never changes what it yields, and frames built with `wire::build` come back out of junk.
//! The ULog reader's properties live in `tests/suite/ulog_properties.rs`.

use crate::common;

use foxborne_receiver::tlog::TlogReader;
use foxborne_receiver::wire::build::{self, Header};
use foxborne_receiver::wire::dialect;
use foxborne_receiver::wire::signing::{Signature, SigningKeys};
use foxborne_receiver::wire::{DatagramScanner, RejectReason, ScanItem, StreamScanner, Version};
use proptest::prelude::*;
use std::sync::OnceLock;

const KEY: [u8; 32] = [0x5a; 32];

/// One scanner result in owned, comparable form.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Frame {
        bytes: Vec<u8>,
        version: Version,
        seq: u8,
        sysid: u8,
        compid: u8,
        msgid: u32,
        payload: Vec<u8>,
        signature: Signature,
    },
    Reject {
        reason: RejectReason,
        bytes: usize,
        msgid: Option<u32>,
        sysid: Option<u8>,
    },
}

fn own(item: &ScanItem<'_>) -> Item {
    match item {
        ScanItem::Frame(f) => Item::Frame {
            bytes: f.bytes.to_vec(),
            version: f.version,
            seq: f.seq,
            sysid: f.sysid,
            compid: f.compid,
            msgid: f.msgid,
            payload: f.payload.to_vec(),
            signature: f.signature,
        },
        ScanItem::Reject(r) => Item::Reject {
            reason: r.reason,
            bytes: r.bytes,
            msgid: r.msgid,
            sysid: r.sysid,
        },
    }
}

/// Adjacent junk rejects merged into one: a stream scanner reports a junk run up to the end of
/// the bytes it holds, so where chunks split a run is not part of what it means.
fn merge_junk(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    for item in items {
        if let (
            Some(Item::Reject {
                reason: RejectReason::Junk,
                bytes: prev,
                ..
            }),
            Item::Reject {
                reason: RejectReason::Junk,
                bytes,
                ..
            },
        ) = (out.last_mut(), &item)
        {
            *prev += bytes;
            continue;
        }
        out.push(item);
    }
    out
}

fn datagram_items(bytes: &[u8], keys: &SigningKeys) -> Vec<Item> {
    DatagramScanner::new(bytes, keys).map(|i| own(&i)).collect()
}

fn drain(scanner: &mut StreamScanner, keys: &SigningKeys, out: &mut Vec<Item>) {
    while let Some(item) = scanner.next_item(keys) {
        out.push(own(&item));
    }
}

/// The stream scanner fed `bytes` cut at the given chunk sizes (cycled), drained after every push.
fn stream_items(bytes: &[u8], chunks: &[usize], keys: &SigningKeys) -> Vec<Item> {
    let mut scanner = StreamScanner::new();
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let n = sizes
            .next()
            .copied()
            .unwrap_or(rest.len())
            .clamp(1, rest.len());
        scanner.push(&rest[..n]);
        rest = &rest[n..];
        drain(&mut scanner, keys, &mut out);
    }
    scanner.finish();
    drain(&mut scanner, keys, &mut out);
    assert_eq!(scanner.pending(), 0, "a finished stream holds nothing back");
    out
}

/// Checks that the items tile `input` in order: each frame's bytes are the input at the running
/// position, and frame lengths plus reject byte counts add up to the input length.
fn assert_tiles(input: &[u8], keys: &SigningKeys) {
    let mut pos = 0usize;
    for item in DatagramScanner::new(input, keys) {
        match item {
            ScanItem::Frame(f) => {
                let at = f.bytes.as_ptr() as usize - input.as_ptr() as usize;
                assert_eq!(at, pos, "a frame starts where the previous item ended");
                assert!(!f.bytes.is_empty());
                assert!(f.payload.len() < f.bytes.len());
                assert!(dialect::lookup(f.msgid).is_some(), "a frame has a known id");
                pos += f.bytes.len();
            }
            ScanItem::Reject(r) => {
                assert!(r.bytes > 0, "a reject accounts for at least one byte");
                pos += r.bytes;
            }
        }
        assert!(pos <= input.len(), "items run past the input");
    }
    assert_eq!(pos, input.len(), "every byte is accounted for");
}

/// Message ids the dialect defines, below 256 (usable in MAVLink 1) and all.
fn known_ids(v1_only: bool) -> &'static [u32] {
    static V1: OnceLock<Vec<u32>> = OnceLock::new();
    static ALL: OnceLock<Vec<u32>> = OnceLock::new();
    let ids = |limit: u32| {
        (0..limit)
            .filter(|&id| dialect::lookup(id).is_some())
            .collect::<Vec<u32>>()
    };
    if v1_only {
        V1.get_or_init(|| ids(256))
    } else {
        ALL.get_or_init(|| ids(1 << 16))
    }
}

#[derive(Debug, Clone)]
enum Kind {
    V1,
    V2,
    V2Signed { link_id: u8, timestamp: u64 },
}

/// `payload` cut to what message `msgid` can hold (extensions included): a longer one is no
/// valid frame, and the scanner refuses it on its header.
fn fitted(msgid: u32, mut payload: Vec<u8>) -> Vec<u8> {
    payload.truncate(dialect::lookup(msgid).expect("known").max_len as usize);
    payload
}

/// A valid frame built with `wire::build`, of a known message with an arbitrary payload that
/// fits it.
fn built_frame() -> impl Strategy<Value = Vec<u8>> {
    let kind = prop_oneof![
        Just(Kind::V1),
        Just(Kind::V2),
        (any::<u8>(), 0u64..(1 << 48))
            .prop_map(|(link_id, timestamp)| Kind::V2Signed { link_id, timestamp }),
    ];
    (
        kind,
        any::<prop::sample::Index>(),
        any::<(u8, u8, u8)>(),
        proptest::collection::vec(any::<u8>(), 0..=255),
    )
        .prop_map(|(kind, id, (sysid, compid, seq), payload)| {
            let header = Header { sysid, compid, seq };
            match kind {
                Kind::V1 => {
                    let ids = known_ids(true);
                    let msgid = ids[id.index(ids.len())];
                    build::v1(header, msgid as u8, &fitted(msgid, payload))
                }
                Kind::V2 => {
                    let ids = known_ids(false);
                    let msgid = ids[id.index(ids.len())];
                    build::v2(header, msgid, &fitted(msgid, payload))
                }
                Kind::V2Signed { link_id, timestamp } => {
                    let ids = known_ids(false);
                    let msgid = ids[id.index(ids.len())];
                    build::v2_signed(
                        header,
                        msgid,
                        &fitted(msgid, payload),
                        &KEY,
                        link_id,
                        timestamp,
                    )
                }
            }
        })
}

/// Bytes with no start marker in them.
fn clean_junk() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        any::<u8>().prop_map(|b| if b == 0xFD || b == 0xFE { b & 0x0F } else { b }),
        0..24,
    )
}

/// Bytes rich in start markers and plausible header bytes: frame candidates that claim lengths
/// running over whatever follows.
fn nasty_junk() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            3 => any::<u8>(),
            1 => Just(0xFDu8),
            1 => Just(0xFEu8),
            1 => Just(0u8),
            1 => Just(1u8),
        ],
        0..40,
    )
}

/// Frames separated by junk: the bytes, and each frame's offset and length.
fn interleave(parts: &[(Vec<u8>, Vec<u8>)], tail: &[u8]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut bytes = Vec::new();
    let mut spans = Vec::new();
    for (junk, frame) in parts {
        bytes.extend_from_slice(junk);
        spans.push((bytes.len(), frame.len()));
        bytes.extend_from_slice(frame);
    }
    bytes.extend_from_slice(tail);
    (bytes, spans)
}

/// Each frame's (offset, length) in the datagram scan of `bytes`.
fn frame_spans(bytes: &[u8], keys: &SigningKeys) -> Vec<(usize, usize)> {
    DatagramScanner::new(bytes, keys)
        .filter_map(|item| match item {
            ScanItem::Frame(f) => Some((
                f.bytes.as_ptr() as usize - bytes.as_ptr() as usize,
                f.bytes.len(),
            )),
            ScanItem::Reject(_) => None,
        })
        .collect()
}

/// Small pieces of the corpus captures and logs, to mutate.
fn corpus_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut files = common::corpus_files("tlog", "tlog");
        files.extend(common::corpus_files("tlog", "raw"));
        files
            .iter()
            .map(|p| {
                let mut b = std::fs::read(p).unwrap();
                b.truncate(16 * 1024);
                b
            })
            .collect()
    })
}

use common::mutate::{apply, mutation, Mutation};

fn mutated_seed(seed: prop::sample::Index, mutations: &[Mutation]) -> Option<Vec<u8>> {
    let seeds = corpus_seeds();
    if seeds.is_empty() {
        return None;
    }
    let mut bytes = seeds[seed.index(seeds.len())].clone();
    for m in mutations {
        apply(&mut bytes, m);
    }
    Some(bytes)
}

/// Reads a `.tlog` and checks its records tile the input: offsets strictly increase from 0,
/// each record ends where the next begins, and the last ends at the input's end.
fn assert_tlog_tiles(input: &[u8], keys: &SigningKeys) -> usize {
    let mut next = 0usize;
    let mut frames = 0;
    for record in TlogReader::new(input, keys) {
        assert_eq!(
            record.offset, next,
            "a record starts where the previous ended"
        );
        assert!(
            record.offset < input.len(),
            "a record starts inside the input"
        );
        assert_eq!(
            record.utc_us & 3,
            0,
            "the link bits are cleared from the time"
        );
        assert!(record.link_bits < 4);
        next = match record.item {
            ScanItem::Frame(f) => {
                let at = f.bytes.as_ptr() as usize - input.as_ptr() as usize;
                assert_eq!(at, record.offset + 8, "the frame follows its timestamp");
                frames += 1;
                at + f.bytes.len()
            }
            ScanItem::Reject(r) => {
                assert!(r.bytes > 0);
                record.offset + r.bytes
            }
        };
        assert!(next <= input.len(), "a record runs past the input");
    }
    assert_eq!(next, input.len(), "every byte of the tlog is accounted for");
    frames
}

proptest! {
    #[test]
    fn datagram_scan_accounts_for_every_byte(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        assert_tiles(&bytes, &SigningKeys::default());
        assert_tiles(&bytes, &SigningKeys::new(vec![KEY], true));
    }

    #[test]
    fn marker_rich_bytes_are_accounted_for(bytes in nasty_junk(), frames in proptest::collection::vec((built_frame(), nasty_junk()), 0..6)) {
        let mut input = bytes;
        for (frame, junk) in &frames {
            input.extend_from_slice(frame);
            input.extend_from_slice(junk);
        }
        assert_tiles(&input, &SigningKeys::default());
        assert_tiles(&input, &SigningKeys::new(vec![KEY], true));
    }

    #[test]
    fn stream_chunking_never_changes_the_result(
        parts in proptest::collection::vec((nasty_junk(), built_frame()), 0..6),
        tail in nasty_junk(),
        chunks in proptest::collection::vec(1usize..80, 1..12),
    ) {
        let (bytes, _) = interleave(&parts, &tail);
        let keys = SigningKeys::default();
        let whole = stream_items(&bytes, &[bytes.len().max(1)], &keys);
        // One push and finish is exactly a datagram scan.
        prop_assert_eq!(&whole, &datagram_items(&bytes, &keys));
        let chunked = stream_items(&bytes, &chunks, &keys);
        prop_assert_eq!(merge_junk(chunked), merge_junk(whole.clone()));
        // One byte at a time, the hardest chunking.
        prop_assert_eq!(merge_junk(stream_items(&bytes, &[1], &keys)), merge_junk(whole));
    }

    #[test]
    fn arbitrary_bytes_in_arbitrary_chunks_give_the_same_items(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        chunks in proptest::collection::vec(1usize..64, 1..8),
    ) {
        let keys = SigningKeys::default();
        let whole = stream_items(&bytes, &[bytes.len().max(1)], &keys);
        prop_assert_eq!(merge_junk(stream_items(&bytes, &chunks, &keys)), merge_junk(whole));
    }

    #[test]
    fn frames_in_marker_free_junk_all_come_back(
        parts in proptest::collection::vec((clean_junk(), built_frame()), 0..8),
        tail in clean_junk(),
    ) {
        let (bytes, spans) = interleave(&parts, &tail);
        let junk_len = bytes.len() - spans.iter().map(|s| s.1).sum::<usize>();
        for keys in [SigningKeys::default(), SigningKeys::new(vec![KEY], true)] {
            let items = datagram_items(&bytes, &keys);
            let mut frames = Vec::new();
            let mut junk = 0;
            for item in &items {
                match item {
                    Item::Frame { bytes, signature, .. } => {
                        frames.push(bytes.clone());
                        let signed = bytes[0] == 0xFD && bytes[2] & 1 == 1;
                        let expected = match (signed, keys.is_empty()) {
                            (false, _) => Signature::Absent,
                            (true, true) => Signature::Unchecked,
                            (true, false) => Signature::Ok,
                        };
                        prop_assert_eq!(*signature, expected);
                    }
                    Item::Reject { reason, bytes, .. } => {
                        prop_assert_eq!(*reason, RejectReason::Junk);
                        junk += bytes;
                    }
                }
            }
            let built: Vec<Vec<u8>> = parts.iter().map(|p| p.1.clone()).collect();
            prop_assert_eq!(frames, built);
            prop_assert_eq!(junk, junk_len);
        }
    }

    /// With any junk, a built frame is lost only when a frame found in the junk before it runs
    /// over its first byte: the scanner reaches every offset it does not jump over with a frame.
    #[test]
    fn frames_in_any_junk_come_back_unless_a_found_frame_covers_them(
        parts in proptest::collection::vec((nasty_junk(), built_frame()), 0..8),
        tail in nasty_junk(),
    ) {
        let (bytes, spans) = interleave(&parts, &tail);
        let found = frame_spans(&bytes, &SigningKeys::default());
        for (start, len) in spans {
            let recovered = found.contains(&(start, len));
            let covered = found.iter().any(|&(s, l)| s < start && start < s + l);
            prop_assert!(recovered || covered, "frame at {} ({} bytes) lost; found {:?}", start, len, found);
        }
    }

    #[test]
    fn a_clean_tlog_reads_back_every_record(
        records in proptest::collection::vec((0u64..(1 << 60), built_frame()), 0..12),
    ) {
        let mut bytes = Vec::new();
        for (stamp, frame) in &records {
            bytes.extend_from_slice(&stamp.to_be_bytes());
            bytes.extend_from_slice(frame);
        }
        let keys = SigningKeys::default();
        prop_assert_eq!(assert_tlog_tiles(&bytes, &keys), records.len());
        let read: Vec<(u64, u8, Vec<u8>)> = TlogReader::new(&bytes, &keys)
            .map(|r| match r.item {
                ScanItem::Frame(f) => (r.utc_us, r.link_bits, f.bytes.to_vec()),
                ScanItem::Reject(rej) => panic!("reject {rej:?} in a clean tlog"),
            })
            .collect();
        let expected: Vec<(u64, u8, Vec<u8>)> = records
            .iter()
            .map(|(s, f)| (s & !3, (s & 3) as u8, f.clone()))
            .collect();
        prop_assert_eq!(read, expected);
    }

    #[test]
    fn arbitrary_tlog_bytes_are_accounted_for(bytes in proptest::collection::vec(any::<u8>(), 0..1024)) {
        assert_tlog_tiles(&bytes, &SigningKeys::default());
    }

    #[test]
    fn tlog_records_with_marker_rich_junk_are_accounted_for(
        records in proptest::collection::vec((any::<u64>(), built_frame(), nasty_junk()), 0..8),
    ) {
        let mut bytes = Vec::new();
        for (stamp, frame, junk) in &records {
            bytes.extend_from_slice(&stamp.to_be_bytes());
            bytes.extend_from_slice(frame);
            bytes.extend_from_slice(junk);
        }
        assert_tlog_tiles(&bytes, &SigningKeys::default());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    #[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
    fn mutated_corpus_files_are_accounted_for(
        seed in any::<prop::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..8),
    ) {
        let Some(bytes) = mutated_seed(seed, &mutations) else {
            return Ok(());
        };
        let keys = SigningKeys::default();
        assert_tlog_tiles(&bytes, &keys);
        assert_tiles(&bytes, &keys);
        let whole = merge_junk(stream_items(&bytes, &[bytes.len().max(1)], &keys));
        prop_assert_eq!(merge_junk(stream_items(&bytes, &[4093, 17], &keys)), whole);
    }
}

#[test]
fn the_property_helpers_can_fail() {
    // A frame cut short must be reported, not silently dropped: the tiling check sees it.
    let frame = build::v2(
        Header {
            sysid: 1,
            compid: 1,
            seq: 0,
        },
        0,
        &build::heartbeat_payload(2, 3),
    );
    let cut = &frame[..frame.len() - 1];
    let items = datagram_items(cut, &SigningKeys::default());
    assert!(items.iter().all(|i| matches!(i, Item::Reject { .. })));
    assert!(items.contains(&Item::Reject {
        reason: RejectReason::Truncated,
        bytes: 1,
        msgid: None,
        sysid: None,
    }));
    // Junk merging joins runs and nothing else.
    let j = |bytes| Item::Reject {
        reason: RejectReason::Junk,
        bytes,
        msgid: None,
        sysid: None,
    };
    assert_eq!(merge_junk(vec![j(2), j(3)]), vec![j(5)]);
    assert_eq!(known_ids(true).first(), Some(&0));
    assert!(known_ids(false).len() > known_ids(true).len());
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn whole_corpus_files_are_accounted_for() {
    let keys = SigningKeys::default();
    for path in common::corpus_files("tlog", "tlog") {
        let bytes = std::fs::read(&path).unwrap();
        let frames = assert_tlog_tiles(&bytes, &keys);
        assert!(frames > 0, "{}", path.display());
    }
    for path in common::corpus_files("tlog", "raw") {
        let bytes = std::fs::read(&path).unwrap();
        assert_tiles(&bytes, &keys);
        let whole = merge_junk(stream_items(&bytes, &[bytes.len()], &keys));
        assert_eq!(
            merge_junk(stream_items(&bytes, &[1021, 3, 64], &keys)),
            whole,
            "{}",
            path.display()
        );
    }
}
