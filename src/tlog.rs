//! Ground-station `.tlog` files, with no I/O: a run of records, each an 8-byte big-endian
//! timestamp (µs since the Unix epoch on the ground station's clock) and one MAVLink frame.
//!
//! pymavlink clears the two low bits of the timestamp when it writes and reads them back as its
//! link number, so they are not time: [`TlogRecord::utc_us`] has them cleared and
//! [`TlogRecord::link_bits`] keeps them.
//!
//! A record whose frame is bad (CRC, unknown id) is skipped by the length its header claims, as
//! the writer laid it down whole. Where the bytes after a timestamp are no frame at all, the
//! reader resynchronises on the next position that holds a timestamp near the last good one
//! followed by a valid frame, and reports the bytes in between as one reject.

use crate::wire::scanner::{STX_V1, STX_V2};
use crate::wire::signing::SigningKeys;
use crate::wire::{DatagramScanner, Frame, Reject, RejectReason, ScanItem};

const STAMP_LEN: usize = 8;
/// How far from the last good timestamp a candidate record may be when resynchronising. Real
/// logs have gaps of about an hour between records (a ground station left running), so this is
/// loose; it only has to rule out random bytes, which land years away.
const RESYNC_WINDOW_US: u64 = 7 * 24 * 3600 * 1_000_000;

#[derive(Debug, Clone, Copy)]
pub struct TlogRecord<'a> {
    /// Byte offset of the record (its timestamp) in the file.
    pub offset: usize,
    pub utc_us: u64,
    pub link_bits: u8,
    pub item: ScanItem<'a>,
}

/// Iterates over the records of a whole `.tlog` held in memory (a slice or a memory map).
pub struct TlogReader<'a, 'k> {
    buf: &'a [u8],
    pos: usize,
    last_good_us: Option<u64>,
    keys: &'k SigningKeys,
}

impl<'a, 'k> TlogReader<'a, 'k> {
    pub fn new(buf: &'a [u8], keys: &'k SigningKeys) -> Self {
        Self {
            buf,
            pos: 0,
            last_good_us: None,
            keys,
        }
    }

    fn stamp_at(&self, pos: usize) -> Option<u64> {
        let bytes = self.buf.get(pos..pos + STAMP_LEN)?;
        Some(u64::from_be_bytes(bytes.try_into().expect("8 bytes")))
    }

    fn frame_at(&self, pos: usize) -> Option<Frame<'a>> {
        let rest = self.buf.get(pos..)?;
        match rest.first() {
            Some(&STX_V1) | Some(&STX_V2) => {}
            _ => return None,
        }
        match DatagramScanner::new(rest, self.keys).next() {
            Some(ScanItem::Frame(frame)) => Some(frame),
            _ => None,
        }
    }

    fn plausible_stamp(&self, stamp: u64) -> bool {
        match self.last_good_us {
            Some(last) => stamp.abs_diff(last) <= RESYNC_WINDOW_US,
            None => true,
        }
    }

    /// Whether a plausible timestamp and a frame start marker (the frame may still be bad) sit at `pos`.
    fn record_starts_at(&self, pos: usize) -> bool {
        self.stamp_at(pos).is_some_and(|s| self.plausible_stamp(s))
            && matches!(self.buf.get(pos + STAMP_LEN), Some(&STX_V1) | Some(&STX_V2))
    }

    /// The next offset after `from` where a plausible record with a valid frame starts.
    fn resync(&self, from: usize) -> usize {
        (from..self.buf.len().saturating_sub(STAMP_LEN))
            .find(|&p| {
                matches!(self.buf[p + STAMP_LEN], STX_V1 | STX_V2)
                    && self.stamp_at(p).is_some_and(|s| self.plausible_stamp(s))
                    && self.frame_at(p + STAMP_LEN).is_some()
            })
            .unwrap_or(self.buf.len())
    }

    fn record(&self, offset: usize, stamp: u64, item: ScanItem<'a>) -> TlogRecord<'a> {
        TlogRecord {
            offset,
            utc_us: stamp & !3,
            link_bits: (stamp & 3) as u8,
            item,
        }
    }
}

impl<'a> Iterator for TlogReader<'a, '_> {
    type Item = TlogRecord<'a>;

    fn next(&mut self) -> Option<TlogRecord<'a>> {
        let offset = self.pos;
        if offset >= self.buf.len() {
            return None;
        }
        let reject = |reason, bytes| {
            ScanItem::Reject(Reject {
                reason,
                bytes,
                msgid: None,
                sysid: None,
            })
        };
        let Some(stamp) = self.stamp_at(offset) else {
            self.pos = self.buf.len();
            return Some(self.record(
                offset,
                0,
                reject(RejectReason::Truncated, self.buf.len() - offset),
            ));
        };
        let frame_start = offset + STAMP_LEN;
        let rest = &self.buf[frame_start..];
        let plausible = self.plausible_stamp(stamp);
        if matches!(rest.first(), Some(&STX_V1) | Some(&STX_V2)) {
            match DatagramScanner::new(rest, self.keys).next() {
                // A valid frame where a record is due is kept whatever its timestamp: the ground
                // station's clock may jump (set by NTP or GPS after start). The time window only
                // guards resynchronisation and bad frames.
                Some(ScanItem::Frame(frame)) => {
                    self.pos = frame_start + frame.bytes.len();
                    self.last_good_us = Some(stamp);
                    return Some(self.record(offset, stamp, ScanItem::Frame(frame)));
                }
                // The frame claims more bytes than the file has left: the last record was cut.
                Some(ScanItem::Reject(r)) if plausible && r.reason == RejectReason::Truncated => {
                    self.pos = self.buf.len();
                    return Some(self.record(
                        offset,
                        stamp,
                        reject(RejectReason::Truncated, self.pos - offset),
                    ));
                }
                Some(ScanItem::Reject(r)) if plausible && r.reason != RejectReason::Junk => {
                    // A whole frame with a bad CRC or an unknown id: the writer logged it whole,
                    // so the next record starts after the length its header claims, if a
                    // record is there; otherwise resynchronise.
                    let next = frame_start + claimed_frame_len(rest).unwrap_or(rest.len());
                    if next >= self.buf.len() || self.record_starts_at(next) {
                        self.pos = next.min(self.buf.len());
                        let bytes = self.pos - offset;
                        return Some(self.record(
                            offset,
                            stamp,
                            ScanItem::Reject(Reject { bytes, ..r }),
                        ));
                    }
                }
                _ => {}
            }
        }
        self.pos = self.resync(offset + 1);
        Some(self.record(offset, stamp, reject(RejectReason::Junk, self.pos - offset)))
    }
}

/// The length a frame header claims, signature included, if the header is there.
fn claimed_frame_len(frame: &[u8]) -> Option<usize> {
    match *frame.first()? {
        STX_V1 => Some(6 + *frame.get(1)? as usize + 2),
        STX_V2 => {
            let signed = *frame.get(2)? & 1 != 0;
            Some(10 + *frame.get(1)? as usize + 2 + if signed { 13 } else { 0 })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::{self, Header};

    fn heartbeat(seq: u8) -> Vec<u8> {
        let header = Header {
            sysid: 1,
            compid: 1,
            seq,
        };
        build::v2(header, 0, &build::heartbeat_payload(2, 3))
    }

    /// Found by the property test `a_clean_tlog_reads_back_every_record`: a ground-station clock
    /// that jumps by more than the resync window (here from the epoch to 2026, as when NTP sets
    /// it after start) made every later record junk, losing the rest of the file.
    #[test]
    fn a_clock_jump_between_records_loses_nothing() {
        let stamps = [0u64, 1_790_000_000_000_000, 1_790_000_001_000_000, 4];
        let mut bytes = Vec::new();
        for (seq, stamp) in stamps.iter().enumerate() {
            bytes.extend_from_slice(&stamp.to_be_bytes());
            bytes.extend_from_slice(&heartbeat(seq as u8));
        }
        let keys = SigningKeys::default();
        let read: Vec<(u64, u8)> = TlogReader::new(&bytes, &keys)
            .map(|r| match r.item {
                ScanItem::Frame(f) => (r.utc_us, f.seq),
                ScanItem::Reject(rej) => panic!("reject {rej:?} at byte {}", r.offset),
            })
            .collect();
        assert_eq!(read, vec![(0, 0), (stamps[1], 1), (stamps[2], 2), (4, 3)]);
    }

    #[test]
    fn resynchronising_still_needs_a_plausible_time() {
        let mut bytes = Vec::new();
        let good = 1_790_000_000_000_000u64;
        bytes.extend_from_slice(&good.to_be_bytes());
        bytes.extend_from_slice(&heartbeat(0));
        bytes.extend_from_slice(b"junk!");
        // A valid frame behind a far-off time inside the junk is not a record to resync on.
        bytes.extend_from_slice(&7u64.to_be_bytes());
        bytes.extend_from_slice(&heartbeat(1));
        let resync_at = bytes.len();
        bytes.extend_from_slice(&(good + 1000).to_be_bytes());
        bytes.extend_from_slice(&heartbeat(2));
        let keys = SigningKeys::default();
        let records: Vec<TlogRecord> = TlogReader::new(&bytes, &keys).collect();
        assert_eq!(records.len(), 3);
        assert!(matches!(records[1].item, ScanItem::Reject(r) if r.reason == RejectReason::Junk));
        assert_eq!(records[2].offset, resync_at);
        assert!(matches!(records[2].item, ScanItem::Frame(f) if f.seq == 2));
    }
}
