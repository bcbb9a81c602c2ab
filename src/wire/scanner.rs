//! The frame scanner: bytes in, MAVLink frames and rejects out.
//!
//! It finds MAVLink 1 and 2 frames in one byte stream, checks each CRC against the dialect's
//! CRC_EXTRA, and resynchronises one byte at a time after anything that is not a valid frame, so a
//! corrupt frame that hides a valid one still gives the valid one. Unlike the `mavlink` crate's
//! reader it never drops anything silently: every byte that is not part of a frame is reported as
//! a [`Reject`], with the reason.
//!
//! Two front ends share one core: [`DatagramScanner`] scans one UDP datagram on its own (a
//! partial frame at its end is a reject, never glued to the next datagram) and [`StreamScanner`]
//! keeps the tail of a serial byte stream until more bytes arrive ("incomplete" is not an error).
//!
//! ## Work is bounded by the input
//!
//! Only the CRC costs more than a constant per byte, and a candidate reaches its CRC only when
//! its header is plausible: a message id the dialect defines, and a payload no longer than that
//! message's longest (extensions included). So a byte is a start marker whose claimed frame is
//! CRC'd only if the header behind it names a message that long; `0xFE` runs (every byte a v1
//! start claiming 254 bytes of DEBUG, a 9-byte message) cost one table lookup per byte.
//! The worst case left is a crafted run of headers of the one 255-byte message
//! (ENCAPSULATED_DATA) repeated as densely as a header allows: a MAVLink 1 header every 6
//! bytes, each asking for a CRC over 262 bytes. So the scanner never computes CRCs over more
//! than [`MAX_CRC_BYTES_PER_BYTE`] bytes per input byte (checked by `work_is_bounded_*` tests;
//! figures by input kind in BENCHMARKS.md).

use super::dialect;
use super::signing::{Signature, SigningKeys};

pub const STX_V1: u8 = 0xFE;
pub const STX_V2: u8 = 0xFD;
const V1_HEADER_LEN: usize = 6;
const V2_HEADER_LEN: usize = 10;
const CHECKSUM_LEN: usize = 2;
const SIGNATURE_LEN: usize = 13;
const IFLAG_SIGNED: u8 = 0x01;

/// The bound on CRC work: the longest CRC'd span (a 255-byte payload and its header) over the
/// shortest spacing of plausible headers (a MAVLink 1 header, 6 bytes).
pub const MAX_CRC_BYTES_PER_BYTE: usize = (V2_HEADER_LEN - 1 + 255).div_ceil(V1_HEADER_LEN);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    pub fn number(self) -> u8 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
        }
    }
}

/// One frame that passed its CRC (and its signature check, when keys are configured and bad
/// signatures are rejected). Borrowed from the scanned bytes.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// The whole frame as received, start marker to checksum (and signature block).
    pub bytes: &'a [u8],
    pub version: Version,
    pub seq: u8,
    pub sysid: u8,
    pub compid: u8,
    pub msgid: u32,
    pub name: &'static str,
    /// The payload as received: a v2 payload may be shorter than the message (trailing zeros cut).
    pub payload: &'a [u8],
    pub signature: Signature,
}

/// Why bytes were not a receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RejectReason {
    /// Bytes outside any frame candidate, or inside one already rejected.
    Junk,
    BadCrc,
    /// A message id the dialect does not define: there is no CRC_EXTRA to check it against.
    UnknownMessage,
    /// A payload longer than the message it names ever is: refused on the header, no CRC needed.
    BadLength,
    BadSignature,
    /// A MAVLink 2 frame with an incompatibility flag this receiver does not understand.
    IncompatFlags,
    /// A frame start whose claimed length runs past the end of the datagram or stream.
    Truncated,
}

impl RejectReason {
    pub const COUNT: usize = 7;
    pub const ALL: [RejectReason; Self::COUNT] = [
        RejectReason::Junk,
        RejectReason::BadCrc,
        RejectReason::UnknownMessage,
        RejectReason::BadLength,
        RejectReason::BadSignature,
        RejectReason::IncompatFlags,
        RejectReason::Truncated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::Junk => "junk",
            RejectReason::BadCrc => "bad_crc",
            RejectReason::UnknownMessage => "unknown_msgid",
            RejectReason::BadLength => "bad_length",
            RejectReason::BadSignature => "bad_signature",
            RejectReason::IncompatFlags => "incompat_flags",
            RejectReason::Truncated => "truncated",
        }
    }
}

/// Bytes that were not a receipt. `bytes` counts the bytes this reject accounts for, so the sum
/// over a stream's frames and rejects is its length. A rejected frame candidate accounts for its
/// start marker only; the rest of it is scanned again (it may hide a valid frame) and reported as
/// `Junk` where it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reject {
    pub reason: RejectReason,
    pub bytes: usize,
    /// The claimed message id and sender, for a rejected frame candidate.
    pub msgid: Option<u32>,
    pub sysid: Option<u8>,
}

#[derive(Debug, Clone, Copy)]
pub enum ScanItem<'a> {
    Frame(Frame<'a>),
    Reject(Reject),
}

/// What the bytes at a start marker are.
enum Candidate {
    NeedMore,
    Frame {
        len: usize,
        version: Version,
        msgid: u32,
        name: &'static str,
        signature: Signature,
    },
    Invalid {
        reason: RejectReason,
        claimed_len: usize,
        msgid: Option<u32>,
        sysid: Option<u8>,
    },
}

fn examine(buf: &[u8], keys: &SigningKeys, work: &mut u64) -> Candidate {
    match buf[0] {
        STX_V1 => examine_v1(buf, work),
        _ => examine_v2(buf, keys, work),
    }
}

fn examine_v1(buf: &[u8], work: &mut u64) -> Candidate {
    if buf.len() < V1_HEADER_LEN {
        return Candidate::NeedMore;
    }
    let payload_len = buf[1] as usize;
    let len = V1_HEADER_LEN + payload_len + CHECKSUM_LEN;
    let msgid = buf[5] as u32;
    let invalid = |reason| Candidate::Invalid {
        reason,
        claimed_len: len,
        msgid: Some(msgid),
        sysid: Some(buf[3]),
    };
    let info = match plausible_header(msgid, payload_len) {
        Ok(info) => info,
        Err(reason) => return invalid(reason),
    };
    if buf.len() < len {
        return Candidate::NeedMore;
    }
    let crc_end = V1_HEADER_LEN + payload_len;
    *work += (crc_end - 1) as u64;
    if !crc_matches(&buf[1..crc_end], info.crc_extra, &buf[crc_end..len]) {
        return invalid(RejectReason::BadCrc);
    }
    Candidate::Frame {
        len,
        version: Version::V1,
        msgid,
        name: info.name,
        signature: Signature::Absent,
    }
}

fn examine_v2(buf: &[u8], keys: &SigningKeys, work: &mut u64) -> Candidate {
    if buf.len() < V2_HEADER_LEN {
        return Candidate::NeedMore;
    }
    let payload_len = buf[1] as usize;
    let incompat = buf[2];
    let signed = incompat & IFLAG_SIGNED != 0;
    let len = V2_HEADER_LEN + payload_len + CHECKSUM_LEN + if signed { SIGNATURE_LEN } else { 0 };
    let msgid = u32::from_le_bytes([buf[7], buf[8], buf[9], 0]);
    let invalid = |reason| Candidate::Invalid {
        reason,
        claimed_len: len,
        msgid: Some(msgid),
        sysid: Some(buf[5]),
    };
    if incompat & !IFLAG_SIGNED != 0 {
        return invalid(RejectReason::IncompatFlags);
    }
    let info = match plausible_header(msgid, payload_len) {
        Ok(info) => info,
        Err(reason) => return invalid(reason),
    };
    if buf.len() < len {
        return Candidate::NeedMore;
    }
    let crc_end = V2_HEADER_LEN + payload_len;
    *work += (crc_end - 1) as u64;
    if !crc_matches(
        &buf[1..crc_end],
        info.crc_extra,
        &buf[crc_end..crc_end + CHECKSUM_LEN],
    ) {
        return invalid(RejectReason::BadCrc);
    }
    let signature = if signed {
        keys.check(&buf[..len])
    } else {
        Signature::Absent
    };
    if signature == Signature::Bad && keys.reject_bad {
        return invalid(RejectReason::BadSignature);
    }
    Candidate::Frame {
        len,
        version: Version::V2,
        msgid,
        name: info.name,
        signature,
    }
}

/// The checks a header must pass before its frame is waited for or CRC'd: a message the
/// dialect defines, and a payload no longer than that message ever is. What keeps the
/// scanner's work bounded by its input (see the module docs).
fn plausible_header(msgid: u32, payload_len: usize) -> Result<dialect::MessageInfo, RejectReason> {
    let info = dialect::lookup(msgid).ok_or(RejectReason::UnknownMessage)?;
    if payload_len > info.max_len as usize {
        return Err(RejectReason::BadLength);
    }
    Ok(info)
}

fn crc_matches(covered: &[u8], crc_extra: u8, checksum: &[u8]) -> bool {
    let expected = u16::from_le_bytes([checksum[0], checksum[1]]);
    mavlink::calculate_crc(covered, crc_extra) == expected
}

fn frame_at<'a>(
    buf: &'a [u8],
    len: usize,
    version: Version,
    msgid: u32,
    name: &'static str,
    signature: Signature,
) -> Frame<'a> {
    let bytes = &buf[..len];
    let (seq, sysid, compid, payload) = match version {
        Version::V1 => (
            bytes[2],
            bytes[3],
            bytes[4],
            &bytes[V1_HEADER_LEN..V1_HEADER_LEN + bytes[1] as usize],
        ),
        Version::V2 => (
            bytes[4],
            bytes[5],
            bytes[6],
            &bytes[V2_HEADER_LEN..V2_HEADER_LEN + bytes[1] as usize],
        ),
    };
    Frame {
        bytes,
        version,
        seq,
        sysid,
        compid,
        msgid,
        name,
        payload,
        signature,
    }
}

/// The scanning state shared by both front ends: where the next byte is, and how far the last
/// rejected candidate claimed to reach. Candidates that start inside that claim are the rejected
/// frame's own bytes, so they are reported as junk, not as further bad frames; a valid frame found
/// there is still a frame.
#[derive(Debug, Default, Clone)]
struct Cursor {
    pos: usize,
    shadow_end: usize,
    /// Bytes run through a CRC so far (see "Work is bounded by the input").
    crc_bytes: u64,
}

impl Cursor {
    fn next<'a>(
        &mut self,
        buf: &'a [u8],
        at_end: bool,
        keys: &SigningKeys,
    ) -> Option<ScanItem<'a>> {
        let rest = buf.get(self.pos..).filter(|r| !r.is_empty())?;
        if rest[0] != STX_V1 && rest[0] != STX_V2 {
            let run = rest
                .iter()
                .position(|&b| b == STX_V1 || b == STX_V2)
                .unwrap_or(rest.len());
            self.pos += run;
            return Some(ScanItem::Reject(Reject {
                reason: RejectReason::Junk,
                bytes: run,
                msgid: None,
                sysid: None,
            }));
        }
        let (reason, claimed_len, msgid, sysid) = match examine(rest, keys, &mut self.crc_bytes) {
            Candidate::Frame {
                len,
                version,
                msgid,
                name,
                signature,
            } => {
                self.pos += len;
                return Some(ScanItem::Frame(frame_at(
                    rest, len, version, msgid, name, signature,
                )));
            }
            Candidate::NeedMore if !at_end => return None,
            Candidate::NeedMore => (RejectReason::Truncated, rest.len(), None, None),
            Candidate::Invalid {
                reason,
                claimed_len,
                msgid,
                sysid,
            } => (reason, claimed_len, msgid, sysid),
        };
        let inside_rejected = self.pos < self.shadow_end;
        self.shadow_end = self.shadow_end.max(self.pos + claimed_len);
        self.pos += 1;
        Some(ScanItem::Reject(if inside_rejected {
            Reject {
                reason: RejectReason::Junk,
                bytes: 1,
                msgid: None,
                sysid: None,
            }
        } else {
            Reject {
                reason,
                bytes: 1,
                msgid,
                sysid,
            }
        }))
    }
}

/// Scans one datagram on its own: a frame that does not end inside it is a reject.
pub struct DatagramScanner<'a, 'k> {
    buf: &'a [u8],
    cursor: Cursor,
    keys: &'k SigningKeys,
}

impl<'a, 'k> DatagramScanner<'a, 'k> {
    pub fn new(datagram: &'a [u8], keys: &'k SigningKeys) -> Self {
        Self {
            buf: datagram,
            cursor: Cursor::default(),
            keys,
        }
    }

    /// Bytes run through a CRC so far: the scanner's work beyond a constant per byte.
    pub fn crc_bytes(&self) -> u64 {
        self.cursor.crc_bytes
    }
}

impl<'a> Iterator for DatagramScanner<'a, '_> {
    type Item = ScanItem<'a>;

    fn next(&mut self) -> Option<ScanItem<'a>> {
        self.cursor.next(self.buf, true, self.keys)
    }
}

/// Scans a byte stream that arrives in chunks (a serial port): the bytes of a frame not yet
/// complete are kept until the next chunk.
#[derive(Debug, Default)]
pub struct StreamScanner {
    buf: Vec<u8>,
    cursor: Cursor,
    at_end: bool,
}

impl StreamScanner {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes. Call [`StreamScanner::next_item`] until it gives `None` first.
    pub fn push(&mut self, bytes: &[u8]) {
        let consumed = self.cursor.pos;
        if consumed > 0 {
            self.buf.drain(..consumed);
            self.cursor.shadow_end = self.cursor.shadow_end.saturating_sub(consumed);
            self.cursor.pos = 0;
        }
        self.at_end = false;
        self.buf.extend_from_slice(bytes);
    }

    /// The next frame or reject, or `None` when more bytes are needed.
    pub fn next_item(&mut self, keys: &SigningKeys) -> Option<ScanItem<'_>> {
        self.cursor.next(&self.buf, self.at_end, keys)
    }

    /// The stream ended (device gone): what is left is scanned as a whole, and a partial frame
    /// at its end becomes a `Truncated` reject. Pushing again starts a new stream.
    pub fn finish(&mut self) {
        self.at_end = true;
    }

    /// Bytes run through a CRC so far: the scanner's work beyond a constant per byte.
    pub fn crc_bytes(&self) -> u64 {
        self.cursor.crc_bytes
    }

    /// Bytes held back waiting for the rest of a frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.cursor.pos
    }
}

#[cfg(test)]
#[path = "scanner_tests.rs"]
mod tests;
