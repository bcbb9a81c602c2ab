//! Truncation and rejection: every corpus log cut at many points (inside a data message, inside
//! a message header, inside the definitions, on a boundary, followed by a zero tail), plus an
//! all-zero file, an empty file, a 10-byte file, encrypted and key files synthesised from PX4's
//! documented 22-byte `ULogEnc` header, and a file that is not a ULog at all.

use crate::common;

use foxborne_receiver::cmd::Exit;
use foxborne_receiver::ulog::ingest::{ingest_reader, truncation_reason};
use foxborne_receiver::ulog::report::{Status, ENCRYPTED_REASON};
use foxborne_receiver::ulog::{CutInside, ReadError, SliceReader};

/// One message of a log: where it starts, how long it is, what a cut inside it is called.
struct Message {
    offset: u64,
    size: u64,
    cut_kind: CutInside,
}

fn starts_data(t: u8) -> bool {
    matches!(t, b'A' | b'L' | b'C' | b'D' | b'O' | b'R')
}

/// The messages of a complete log, with the kind a cut inside each should be reported as.
fn messages(bytes: &[u8]) -> Vec<Message> {
    let mut reader = SliceReader::new(bytes);
    let mut out = Vec::new();
    let mut in_data = false;
    while let Some(item) = reader.next_record() {
        let r = item.expect("corpus log reads cleanly");
        if r.message == 0 {
            continue;
        }
        let cut_kind = if r.msg_type == b'D' {
            CutInside::DataMessage
        } else if !in_data && !starts_data(r.msg_type) {
            CutInside::Definitions
        } else {
            CutInside::Message(r.msg_type)
        };
        in_data |= starts_data(r.msg_type);
        out.push(Message {
            offset: r.offset,
            size: u64::from(r.size),
            cut_kind,
        });
    }
    out
}

/// Reads `bytes` to the end; returns the fatal error, if any.
fn read_to_end(bytes: &[u8]) -> Option<ReadError> {
    let mut reader = SliceReader::new(bytes);
    while let Some(item) = reader.next_record() {
        match item {
            Ok(_) => {}
            Err(e) if e.is_fatal() => return Some(e),
            Err(e) => panic!("unexpected malformed message in a corpus prefix: {e}"),
        }
    }
    None
}

fn expect_cut(bytes: &[u8], inside: CutInside, at: u64, what: &str) {
    match read_to_end(bytes) {
        Some(ReadError::Truncated {
            inside: got,
            message_offset,
            end,
        }) => {
            assert_eq!((got, message_offset), (inside, at), "{what}");
            assert_eq!(end, bytes.len() as u64, "{what}: end");
        }
        other => panic!("{what}: expected truncation inside {inside:?} at {at}, got {other:?}"),
    }
}

/// Indices of the messages to cut: spread over the file plus the interesting ones.
fn chosen(msgs: &[Message]) -> Vec<usize> {
    let mut picks: Vec<usize> = (0..10).map(|i| i * (msgs.len() - 1) / 9).collect();
    let first_data = msgs
        .iter()
        .position(|m| m.cut_kind == CutInside::DataMessage);
    let last_definition = msgs
        .iter()
        .rposition(|m| m.cut_kind == CutInside::Definitions);
    picks.extend(first_data.into_iter().chain(last_definition));
    picks.sort_unstable();
    picks.dedup();
    picks
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn cuts_of_every_corpus_log_are_truncations_with_offset_and_kind() {
    for log in common::corpus_logs() {
        let name = log.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&log).unwrap();
        let msgs = messages(&bytes);
        // A log with appended data promises bytes up to its last appended offset.
        let promised_end = appended_end(&bytes);
        let mut kinds_seen = Vec::new();
        for i in chosen(&msgs) {
            let m = &msgs[i];
            let at = m.offset as usize;
            // Exactly on a boundary: complete, unless the flag bits (message 1, at 16) are in and
            // promise appended data further on.
            match promised_end {
                Some(end) if m.offset > 16 && m.offset < end => expect_cut(
                    &bytes[..at],
                    CutInside::BeforeAppendedData,
                    m.offset,
                    &format!("{name} boundary {at}"),
                ),
                _ => assert!(
                    read_to_end(&bytes[..at]).is_none(),
                    "{name}: a cut on the boundary at {at} is complete"
                ),
            }
            for k in 1..3 {
                expect_cut(
                    &bytes[..at + k],
                    CutInside::MessageHeader,
                    m.offset,
                    &format!("{name} header+{k} at {at}"),
                );
            }
            for cut in [
                at + 3,
                at + 3 + (m.size as usize - 3) / 2,
                at + m.size as usize - 1,
            ] {
                if cut >= at + 3 && cut < at + m.size as usize {
                    expect_cut(
                        &bytes[..cut],
                        m.cut_kind,
                        m.offset,
                        &format!("{name} cut {cut} in message at {at}"),
                    );
                }
            }
            for zeros in [1usize, 2, 3, 700] {
                let mut tail = bytes[..at].to_vec();
                tail.resize(at + zeros, 0);
                expect_cut(
                    &tail,
                    CutInside::ZeroRun,
                    m.offset,
                    &format!("{name}: {zeros} zeros at {at}"),
                );
            }
            kinds_seen.push(m.cut_kind);
        }
        assert!(
            kinds_seen.contains(&CutInside::DataMessage),
            "{name}: no cut inside a data message"
        );
        assert!(
            read_to_end(&bytes).is_none(),
            "{name}: the whole file is complete"
        );
    }
}

/// The largest appended offset when the DATA_APPENDED flag is set.
fn appended_end(bytes: &[u8]) -> Option<u64> {
    if bytes.get(18) != Some(&b'B') || bytes[16 + 3 + 8] & 1 == 0 {
        return None;
    }
    (0..3)
        .map(|i| u64::from_le_bytes(bytes[16 + 3 + 16 + 8 * i..][..8].try_into().unwrap()))
        .max()
        .filter(|o| *o > 0)
}

/// pyulog 1.3.0 reads a cut file without complaint and returns what it got (its reader stops
/// quietly at the short read), so it is no reference here: we assert our own answer, that the
/// log is quarantined and nothing from it is shown as complete.
#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn quarantine_reports_show_nothing_complete_and_say_why() {
    let log = common::corpus_file("ulog", "pyulog_sample.ulg");
    let bytes = std::fs::read(&log).unwrap();
    let msgs = messages(&bytes);
    let d = msgs
        .iter()
        .rev()
        .find(|m| m.cut_kind == CutInside::DataMessage)
        .unwrap();
    let cut = d.offset as usize + 7;
    let r = ingest_reader(&bytes[..cut], "cut.ulg", cut as u64, None, None).unwrap();
    assert_eq!(r.status, Status::Quarantined);
    assert_eq!(Exit::from(r.status).code(), 3);
    let expected = format!(
        "The flight log ends inside a data message at {:.1} MB. The file was truncated, most likely when power was cut during logging. Nothing from it is shown as complete.",
        d.offset as f64 / 1e6
    );
    assert_eq!(r.reason.as_deref(), Some(expected.as_str()));
    assert!(
        r.topics.is_empty()
            && r.dropouts.is_empty()
            && r.findings.is_empty()
            && r.gps_anchor.is_none()
    );
    assert!(r.parameters.initial.is_empty() && r.logged_messages.is_empty() && r.info.is_empty());
    let t = r.truncation.unwrap();
    assert_eq!(
        (t.offset, t.inside.as_str(), t.end),
        (d.offset, "data_message", cut as u64)
    );

    // Zeros that begin inside a data message (after its msg_id): the message reads as a sample
    // full of zeros, and the zero run is reported from the next boundary on.
    let mut zero_tail = bytes[..d.offset as usize + 5].to_vec();
    zero_tail.resize(zero_tail.len() + 4096, 0);
    match read_to_end(&zero_tail) {
        Some(ReadError::Truncated {
            inside: CutInside::ZeroRun,
            message_offset,
            ..
        }) => {
            assert_eq!(message_offset, d.offset + d.size)
        }
        other => panic!("zero tail from inside a data message: {other:?}"),
    }

    // Inside the definitions section.
    let def = msgs
        .iter()
        .find(|m| m.cut_kind == CutInside::Definitions && m.size > 20)
        .unwrap();
    let cut = def.offset as usize + 10;
    let r = ingest_reader(&bytes[..cut], "cut.ulg", cut as u64, None, None).unwrap();
    assert_eq!(r.status, Status::Quarantined);
    assert!(r
        .reason
        .unwrap()
        .starts_with("The flight log ends inside the definitions section at "));
}

#[test]
fn reason_sentence_matches_the_seed_example() {
    assert_eq!(
        truncation_reason(CutInside::DataMessage, 41_234_567),
        "The flight log ends inside a data message at 41.2 MB. The file was truncated, most likely when power was cut during logging. Nothing from it is shown as complete."
    );
    assert!(truncation_reason(CutInside::MessageHeader, 612)
        .contains("inside a message header at 612 bytes."));
    assert!(truncation_reason(CutInside::Message(b'L'), 4_100)
        .contains("inside a logged string message at 4.1 kB."));
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn all_zero_empty_and_tiny_files_are_quarantined() {
    for len in [1usize, 2, 15, 16, 17, 4096] {
        let zeros = vec![0u8; len];
        match read_to_end(&zeros) {
            Some(ReadError::Truncated {
                inside: CutInside::ZeroRun,
                message_offset: 0,
                end,
            }) => {
                assert_eq!(end, len as u64)
            }
            other => panic!("{len} zero bytes: {other:?}"),
        }
        let r = ingest_reader(&zeros[..], "zeros.ulg", len as u64, None, None).unwrap();
        assert_eq!(r.status, Status::Quarantined, "{len} zero bytes");
    }
    assert!(matches!(
        read_to_end(&[]),
        Some(ReadError::Truncated {
            inside: CutInside::FileHeader,
            message_offset: 0,
            end: 0
        })
    ));
    if let Some(log) = common::corpus_logs().first() {
        let bytes = std::fs::read(log).unwrap();
        for len in [3usize, 7, 10, 15] {
            let r = ingest_reader(&bytes[..len], "tiny.ulg", len as u64, None, None).unwrap();
            assert_eq!(r.status, Status::Quarantined, "{len}-byte prefix");
            assert!(
                r.reason.unwrap().contains("inside the file header at "),
                "{len}-byte prefix"
            );
        }
    }
}

/// PX4's encrypted log header: "ULogEnc", header version, timestamp, exchange algorithm, key
/// index, key size, nonce size (22 bytes), then the wrapped key, the nonce and ciphertext.
fn encrypted_file(magic: &[u8; 7]) -> Vec<u8> {
    let mut f = magic.to_vec();
    f.push(1);
    f.extend_from_slice(&123_456_789u64.to_le_bytes());
    f.push(1); // exchange algorithm: RSA-OAEP
    f.push(0); // key index
    f.extend_from_slice(&256u16.to_le_bytes());
    f.extend_from_slice(&24u16.to_le_bytes());
    assert_eq!(f.len(), 22);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..(256 + 24 + 1000) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        f.push(state as u8);
    }
    f
}

#[test]
fn encrypted_logs_and_key_files_are_rejected() {
    for (magic, key_file) in [(b"ULogEnc", false), (b"ULogKey", true)] {
        let bytes = encrypted_file(magic);
        assert!(
            matches!(read_to_end(&bytes), Some(ReadError::Encrypted { key_file: k }) if k == key_file)
        );
        let r = ingest_reader(&bytes[..], "x.ulge", bytes.len() as u64, None, None).unwrap();
        assert_eq!(r.status, Status::Rejected);
        assert_eq!(Exit::from(r.status).code(), 4);
        assert_eq!(r.reason.as_deref(), Some(ENCRYPTED_REASON));
        assert_eq!(
            ENCRYPTED_REASON,
            "The flight log is encrypted. Foxborne does not decrypt logs. Import the decrypted .ulg exported from your key holder."
        );
        assert!(r.topics.is_empty() && r.gps_anchor.is_none());
    }
}

#[test]
fn files_without_the_magic_are_rejected_as_not_ulog() {
    for bytes in [
        &b"%PDF-1.7 not a flight log at all"[..],
        b"ULog\x01\x12\x36rest-of-header",
        b"\x00\x00\x00\x00junk",
    ] {
        let err = read_to_end(bytes);
        assert!(
            matches!(err, Some(ReadError::NotUlog { .. })),
            "{bytes:?}: {err:?}"
        );
        let r = ingest_reader(bytes, "x.ulg", bytes.len() as u64, None, None).unwrap();
        assert_eq!(r.status, Status::Rejected);
        assert!(r
            .reason
            .unwrap()
            .starts_with("The file is not a PX4 flight log (ULog)"));
        assert!(r.validation.is_empty());
    }
}
