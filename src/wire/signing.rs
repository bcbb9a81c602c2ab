//! MAVLink 2 message signing, receive side: which keys to check signed frames against and
//! whether a frame's signature matches one of them.
//!
//! Only the SHA-256/48 signature itself is checked here. The signing protocol's timestamp replay
//! window needs the receiver's clock and per-stream state; a passive recorder keeps the frame and
//! leaves replay judgement to whoever holds the log.

use mavlink::MAVLinkV2MessageRaw;

/// Keys configured for signature checking and what to do with a frame that matches none.
#[derive(Debug, Clone, Default)]
pub struct SigningKeys {
    keys: Vec<[u8; 32]>,
    /// When true (the default in the config) a bad signature is a reject, not a receipt.
    pub reject_bad: bool,
}

/// What is known about a frame's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signature {
    /// No signature block (MAVLink 1, or MAVLink 2 without the signed flag).
    Absent,
    /// Signed, but no keys are configured to check it against.
    Unchecked,
    Ok,
    Bad,
}

impl SigningKeys {
    pub fn new(keys: Vec<[u8; 32]>, reject_bad: bool) -> Self {
        Self { keys, reject_bad }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks a whole signed v2 frame (header, payload, checksum, 13-byte signature block).
    pub fn check(&self, frame: &[u8]) -> Signature {
        if self.keys.is_empty() {
            return Signature::Unchecked;
        }
        if self.keys.iter().any(|key| signature_matches(frame, key)) {
            Signature::Ok
        } else {
            Signature::Bad
        }
    }
}

/// Whether the 6-byte signature at the end of `frame` is the one `key` gives.
pub fn signature_matches(frame: &[u8], key: &[u8; 32]) -> bool {
    let mut raw = [0u8; mavlink::consts::MAX_FRAME_SIZE];
    if frame.len() > raw.len() || frame.len() < 10 + 2 + 13 {
        return false;
    }
    raw[..frame.len()].copy_from_slice(frame);
    let raw = MAVLinkV2MessageRaw::from_bytes_unparsed(raw);
    let mut expected = [0u8; 6];
    raw.calculate_signature(key, &mut expected);
    expected == frame[frame.len() - 6..]
}

/// Parses a key written as 64 hex digits.
pub fn parse_key_hex(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// Known answers made by pymavlink (`tests/vectors/make_signed_frames.py`): frames signed by an
/// independent implementation must verify here, and fail with any byte of them or the key
/// changed.
#[cfg(test)]
mod known_answers {
    use super::*;

    const VECTORS: &str = include_str!("../../tests/vectors/signed_frames.txt");

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    fn vectors() -> Vec<(String, [u8; 32], Vec<u8>)> {
        VECTORS
            .lines()
            .map(|line| {
                let mut parts = line.split_whitespace();
                let label = parts.next().unwrap().to_string();
                let key = parse_key_hex(parts.next().unwrap()).unwrap();
                (label, key, hex(parts.next().unwrap()))
            })
            .collect()
    }

    #[test]
    fn frames_signed_by_pymavlink_verify() {
        let vectors = vectors();
        assert_eq!(vectors.len(), 3);
        for (label, key, frame) in &vectors {
            assert!(frame[2] & 1 == 1, "{label}: the signed flag is set");
            assert!(signature_matches(frame, key), "{label}");
            let keys = SigningKeys::new(vec![*key], true);
            assert_eq!(keys.check(frame), Signature::Ok, "{label}");
        }
        // Each frame is checked against the other vectors' keys too: only its own matches.
        let (_, other_key, _) = &vectors[2];
        assert!(!signature_matches(&vectors[0].2, other_key));
    }

    #[test]
    fn any_changed_byte_or_key_bit_fails_verification() {
        for (label, key, frame) in vectors() {
            // Everything after the start marker and before the signature itself is signed, the
            // link id and timestamp included. (A frame whose marker is not 0xFD is no MAVLink 2
            // frame: the scanner never asks for its signature.)
            for i in 1..frame.len() - 6 {
                let mut changed = frame.clone();
                changed[i] ^= 0x01;
                assert!(!signature_matches(&changed, &key), "{label}: byte {i}");
            }
            for i in frame.len() - 6..frame.len() {
                let mut changed = frame.clone();
                changed[i] ^= 0x80;
                assert!(
                    !signature_matches(&changed, &key),
                    "{label}: signature byte {i}"
                );
            }
            let mut wrong = key;
            wrong[31] ^= 1;
            assert!(!signature_matches(&frame, &wrong), "{label}: key");
        }
    }
}
