//! Scanner tests with frames built by hand: chunking, resync, and every kind of reject.

use super::*;
use crate::wire::build::{self, Header};
use crate::wire::signing::SigningKeys;

fn hdr(sysid: u8, seq: u8) -> Header {
    Header {
        sysid,
        compid: 1,
        seq,
    }
}

/// A mixed stream: v1 and v2, truncated v2 payloads, a signed frame, junk between frames.
fn mixed_stream() -> (Vec<u8>, Vec<(u8, u32, u8)>) {
    let key = [7u8; 32];
    let mut bytes = Vec::new();
    let mut expect = Vec::new();
    for i in 0..40u8 {
        let sysid = 1 + i % 3;
        let frame = match i % 5 {
            0 => build::v1(hdr(sysid, i), 0, &build::heartbeat_payload(2, 3)),
            1 => build::v2(hdr(sysid, i), 0, &build::heartbeat_payload(1, 8)),
            // time_boot_ms = 0: the payload is cut to 8 bytes.
            2 => build::v2(
                hdr(sysid, i),
                2,
                &build::system_time_payload(1_700_000_000_000_000, 0),
            ),
            3 => build::v2_signed(
                hdr(sysid, i),
                30,
                &build::attitude_payload(5, 0.1),
                &key,
                3,
                99,
            ),
            _ => build::v1(hdr(sysid, i), 30, &build::attitude_payload(9, -0.1)),
        };
        let msgid = [0, 0, 2, 30, 30][(i % 5) as usize];
        expect.push((sysid, msgid, i));
        bytes.extend_from_slice(&frame);
        if i % 7 == 0 {
            bytes.extend_from_slice(b"AT+RSSI?\r\n");
        }
    }
    (bytes, expect)
}

fn stream_frames(
    bytes: &[u8],
    chunk: usize,
    keys: &SigningKeys,
) -> (Vec<(u8, u32, u8)>, Vec<Reject>) {
    let mut scanner = StreamScanner::new();
    let mut frames = Vec::new();
    let mut rejects = Vec::new();
    let drain = |scanner: &mut StreamScanner, frames: &mut Vec<_>, rejects: &mut Vec<_>| {
        while let Some(item) = scanner.next_item(keys) {
            match item {
                ScanItem::Frame(f) => frames.push((f.sysid, f.msgid, f.seq)),
                ScanItem::Reject(r) => rejects.push(r),
            }
        }
    };
    for piece in bytes.chunks(chunk) {
        scanner.push(piece);
        drain(&mut scanner, &mut frames, &mut rejects);
    }
    scanner.finish();
    drain(&mut scanner, &mut frames, &mut rejects);
    (frames, rejects)
}

fn datagram_items(bytes: &[u8], keys: &SigningKeys) -> (Vec<(u8, u32, u8)>, Vec<Reject>) {
    let mut frames = Vec::new();
    let mut rejects = Vec::new();
    for item in DatagramScanner::new(bytes, keys) {
        match item {
            ScanItem::Frame(f) => frames.push((f.sysid, f.msgid, f.seq)),
            ScanItem::Reject(r) => rejects.push(r),
        }
    }
    (frames, rejects)
}

fn reasons(rejects: &[Reject]) -> Vec<RejectReason> {
    rejects
        .iter()
        .map(|r| r.reason)
        .filter(|r| *r != RejectReason::Junk)
        .collect()
}

fn junk_bytes(rejects: &[Reject]) -> usize {
    rejects.iter().map(|r| r.bytes).sum()
}

#[test]
fn every_chunk_size_gives_the_same_frames() {
    let (bytes, expect) = mixed_stream();
    let keys = SigningKeys::default();
    let (whole, rejects) = datagram_items(&bytes, &keys);
    assert_eq!(whole, expect);
    assert_eq!(junk_bytes(&rejects), 6 * 10);
    for chunk in 1..=bytes.len() {
        let (frames, rejects) = stream_frames(&bytes, chunk, &keys);
        assert_eq!(frames, expect, "chunk size {chunk}");
        assert_eq!(junk_bytes(&rejects), 60, "chunk size {chunk}");
    }
}

#[test]
fn truncated_v2_payload_is_a_receipt_with_the_length_as_received() {
    let frame = build::v2(
        hdr(2, 0),
        2,
        &build::system_time_payload(1_700_000_000_000_000, 0),
    );
    let keys = SigningKeys::default();
    let Some(ScanItem::Frame(f)) = DatagramScanner::new(&frame, &keys).next() else {
        panic!("no frame")
    };
    // time_boot_ms = 0 and the top byte of a 2023 µs timestamp is zero too: 7 of 12 bytes sent.
    assert_eq!(f.payload.len(), 7);
    assert_eq!(f.name, "SYSTEM_TIME");
    assert_eq!(f.version, Version::V2);
}

#[test]
fn a_corrupt_frame_hiding_a_valid_one_gives_the_valid_one() {
    // A v2 start marker (GPS_RAW_INT, up to 52 bytes) whose claimed length swallows the valid
    // frame that follows: its CRC fails, the scanner steps one byte on and finds the hidden frame.
    let valid = build::v1(hdr(9, 5), 0, &build::heartbeat_payload(2, 3));
    let mut bytes = vec![0xFD, 40, 0, 0, 1, 9, 1, 24, 0, 0];
    bytes.extend_from_slice(&valid);
    bytes.extend_from_slice(&[0u8; 40]);
    let keys = SigningKeys::default();
    let (frames, rejects) = datagram_items(&bytes, &keys);
    assert_eq!(frames, vec![(9, 0, 5)]);
    assert_eq!(reasons(&rejects), vec![RejectReason::BadCrc]);
    for chunk in 1..bytes.len() {
        assert_eq!(
            stream_frames(&bytes, chunk, &keys).0,
            frames,
            "chunk {chunk}"
        );
    }
}

#[test]
fn bad_crc_unknown_id_and_incompat_flags_do_not_lose_the_frames_after_them() {
    let good = |seq| build::v2(hdr(1, seq), 0, &build::heartbeat_payload(2, 3));
    let mut bad_crc = good(1);
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 0x5A;
    let mut bitflip = build::v1(hdr(4, 2), 30, &build::attitude_payload(1, 0.5));
    bitflip[8] ^= 0x01;
    let unknown = build::v2(hdr(42, 3), 42424, &[1, 2, 3, 4, 5]);
    let incompat = build::v2_with_flags(hdr(44, 4), 0, &build::heartbeat_payload(2, 3), 0x02);
    let mut bytes = Vec::new();
    for piece in [
        &bad_crc,
        &good(10),
        &bitflip,
        &good(11),
        &unknown,
        &good(12),
        &incompat,
        &good(13),
    ] {
        bytes.extend_from_slice(piece);
    }
    let keys = SigningKeys::default();
    let (frames, rejects) = datagram_items(&bytes, &keys);
    assert_eq!(frames, vec![(1, 0, 10), (1, 0, 11), (1, 0, 12), (1, 0, 13)]);
    assert_eq!(
        reasons(&rejects),
        vec![
            RejectReason::BadCrc,
            RejectReason::BadCrc,
            RejectReason::UnknownMessage,
            RejectReason::IncompatFlags
        ]
    );
    assert_eq!(
        rejects
            .iter()
            .find(|r| r.reason == RejectReason::UnknownMessage)
            .unwrap()
            .msgid,
        Some(42424)
    );
    let accounted: usize = junk_bytes(&rejects) + 4 * good(0).len();
    assert_eq!(accounted, bytes.len(), "every byte is a frame or a reject");
}

#[test]
fn a_stray_start_marker_near_the_end_of_a_datagram_does_not_hide_what_follows() {
    let hb = build::v1(hdr(3, 7), 0, &build::heartbeat_payload(2, 3));
    // 0xFD claiming 200 bytes, then a whole frame, then the datagram ends.
    let mut bytes = vec![0x11, 0xFD, 200, 0, 0];
    bytes.extend_from_slice(&hb);
    let keys = SigningKeys::default();
    let (frames, rejects) = datagram_items(&bytes, &keys);
    assert_eq!(frames, vec![(3, 0, 7)]);
    assert_eq!(reasons(&rejects), vec![RejectReason::Truncated]);
    // And a frame cut by the end of the datagram is a reject, never glued to the next one.
    let (frames, rejects) = datagram_items(&hb[..7], &keys);
    assert!(frames.is_empty());
    assert_eq!(reasons(&rejects), vec![RejectReason::Truncated]);
    assert_eq!(junk_bytes(&rejects), 7);
}

#[test]
fn signatures_are_checked_against_configured_keys() {
    let key = [0x11u8; 32];
    let signed = build::v2_signed(hdr(5, 1), 0, &build::heartbeat_payload(2, 3), &key, 7, 1234);
    let mut forged = signed.clone();
    let last = forged.len() - 1;
    forged[last] ^= 0xFF;
    let mut bytes = signed.clone();
    bytes.extend_from_slice(&forged);

    let first_signature = |keys: &SigningKeys, b: &[u8]| match DatagramScanner::new(b, keys).next()
    {
        Some(ScanItem::Frame(f)) => Some(f.signature),
        _ => None,
    };
    let none = SigningKeys::default();
    assert_eq!(first_signature(&none, &forged), Some(Signature::Unchecked));
    let lenient = SigningKeys::new(vec![[0u8; 32], key], false);
    assert_eq!(first_signature(&lenient, &signed), Some(Signature::Ok));
    assert_eq!(first_signature(&lenient, &forged), Some(Signature::Bad));
    let strict = SigningKeys::new(vec![key], true);
    let (frames, rejects) = datagram_items(&bytes, &strict);
    assert_eq!(frames, vec![(5, 0, 1)]);
    assert_eq!(reasons(&rejects), vec![RejectReason::BadSignature]);
}

#[test]
fn junk_without_start_markers_is_one_reject_per_run() {
    let keys = SigningKeys::default();
    let (frames, rejects) = datagram_items(b"hello world", &keys);
    assert!(frames.is_empty());
    assert_eq!(rejects.len(), 1);
    assert_eq!(
        (rejects[0].reason, rejects[0].bytes),
        (RejectReason::Junk, 11)
    );
    // A stream waits for the rest of a frame instead of rejecting it.
    let hb = build::v2(hdr(1, 1), 0, &build::heartbeat_payload(2, 3));
    let mut scanner = StreamScanner::new();
    scanner.push(&hb[..5]);
    assert!(scanner.next_item(&keys).is_none());
    assert_eq!(scanner.pending(), 5);
    scanner.push(&hb[5..]);
    assert!(matches!(scanner.next_item(&keys), Some(ScanItem::Frame(_))));
}

/// Crafted input as dense as headers allow: each start asks for the CRC it can make the
/// scanner compute. The work stays under the documented bound, and valid frames hidden among
/// them still come out.
#[test]
fn work_is_bounded_on_adversarial_input() {
    let keys = SigningKeys::default();
    let check = |name: &str, bytes: &[u8]| {
        let mut scanner = DatagramScanner::new(bytes, &keys);
        let items = scanner.by_ref().count();
        let per_byte = scanner.crc_bytes() as f64 / bytes.len() as f64;
        assert!(
            per_byte <= MAX_CRC_BYTES_PER_BYTE as f64,
            "{name}: {per_byte:.1} CRC bytes per byte ({items} items)"
        );
        per_byte
    };
    // Every byte a v1 start claiming 254 bytes of DEBUG (a 9-byte message): no CRC at all.
    assert_eq!(check("all 0xFE", &vec![0xFE; 65_000]), 0.0);
    // v2 starts claiming 255 bytes of ENCAPSULATED_DATA every 12 bytes.
    let mut v2 = Vec::new();
    while v2.len() < 65_000 {
        v2.extend_from_slice(&[0xFD, 0xFF, 0, 0, 1, 2, 3, 0x83, 0, 0, 0x55, 0x55]);
    }
    let v2_work = check("crafted v2 starts", &v2);
    assert!(
        v2_work > 10.0,
        "the crafted input does reach the CRC: {v2_work}"
    );
    // v1 headers of ENCAPSULATED_DATA every 6 bytes: the densest there is.
    let mut v1 = Vec::new();
    while v1.len() < 65_000 {
        v1.extend_from_slice(&[0xFE, 0xFF, 1, 2, 3, 0x83]);
    }
    check("crafted v1 starts", &v1);
    // Random junk.
    let mut x = 0x9E37_79B9u32;
    let random: Vec<u8> = (0..65_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    assert!(check("random", &random) < 1.0);
}

#[test]
fn a_valid_frame_behind_crafted_starts_still_comes_out() {
    let keys = SigningKeys::default();
    let mut bytes = Vec::new();
    for _ in 0..40 {
        bytes.extend_from_slice(&[0xFD, 0xFF, 0, 0, 1, 2, 3, 0x83, 0, 0, 0x55, 0x55]);
    }
    let frame = build::v2(hdr(7, 9), 0, &build::heartbeat_payload(2, 3));
    bytes.extend_from_slice(&frame);
    bytes.extend_from_slice(&[0xFE; 300]);
    let frames: Vec<u8> = DatagramScanner::new(&bytes, &keys)
        .filter_map(|item| match item {
            ScanItem::Frame(f) => Some(f.sysid),
            ScanItem::Reject(_) => None,
        })
        .collect();
    assert_eq!(frames, vec![7]);
}

#[test]
fn a_payload_longer_than_its_message_is_refused_on_the_header() {
    let keys = SigningKeys::default();
    // A v1 HEARTBEAT header claiming 200 bytes: refused before 200 bytes are even there.
    let mut stream = StreamScanner::new();
    stream.push(&[0xFE, 200, 0, 1, 1, 0]);
    match stream.next_item(&keys) {
        Some(ScanItem::Reject(r)) => assert_eq!(r.reason, RejectReason::BadLength),
        other => panic!("{other:?}"),
    }
}
