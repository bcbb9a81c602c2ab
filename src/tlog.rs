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
//!
//! One reader serves whole files in memory ([`TlogReader::new`]) and streams of any length
//! ([`read_tlog`], which feeds it a window at a time in bounded memory): in a window that more
//! bytes will follow, the reader stops, without consuming anything, where a decision would need
//! bytes past the window's end ("incomplete" is not an error).

use crate::wire::scanner::{STX_V1, STX_V2};
use crate::wire::signing::SigningKeys;
use crate::wire::{DatagramScanner, Frame, Reject, RejectReason, ScanItem};

const STAMP_LEN: usize = 8;
/// How far from the last good timestamp a candidate record may be when resynchronising. Real
/// logs have gaps of about an hour between records (a ground station left running), so this is
/// loose; it only has to rule out random bytes, which land years away.
const RESYNC_WINDOW_US: u64 = 7 * 24 * 3600 * 1_000_000;
/// The longest MAVLink frame: a signed v2 frame with a 255-byte payload.
const MAX_FRAME_LEN: usize = 10 + 255 + 2 + 13;
/// Bytes a decision about the record at some offset may read: its stamp, the longest frame, and
/// the next record's stamp and start marker.
const LOOKAHEAD: usize = STAMP_LEN + MAX_FRAME_LEN + STAMP_LEN + 1;
/// A streamed junk run is reported in pieces of at least this many bytes, so a file of garbage
/// never has to be held whole.
const MAX_JUNK_HELD: usize = 1 << 20;
/// How much [`read_tlog`] reads at a time.
const STREAM_CHUNK: usize = 1 << 20;

#[derive(Debug, Clone, Copy)]
pub struct TlogRecord<'a> {
    /// Byte offset of the record (its timestamp) in the file.
    pub offset: usize,
    pub utc_us: u64,
    pub link_bits: u8,
    pub item: ScanItem<'a>,
}

/// Iterates over the records of a `.tlog` held in memory: a whole file, or one window of a
/// stream (see [`read_tlog`]).
pub struct TlogReader<'a, 'k> {
    buf: &'a [u8],
    pos: usize,
    last_good_us: Option<u64>,
    keys: &'k SigningKeys,
    /// More bytes follow `buf`: stop where a decision needs them.
    more_coming: bool,
}

impl<'a, 'k> TlogReader<'a, 'k> {
    /// A whole file: the end of `buf` is the end of the file.
    pub fn new(buf: &'a [u8], keys: &'k SigningKeys) -> Self {
        Self {
            buf,
            pos: 0,
            last_good_us: None,
            keys,
            more_coming: false,
        }
    }

    /// One window of a stream, continuing from the last good timestamp of the previous one.
    fn window(
        buf: &'a [u8],
        keys: &'k SigningKeys,
        last_good_us: Option<u64>,
        more_coming: bool,
    ) -> Self {
        Self {
            buf,
            pos: 0,
            last_good_us,
            keys,
            more_coming,
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

    /// The next offset after `from` where a plausible record with a valid frame starts; `None`
    /// when the answer lies in bytes still to come.
    fn resync(&self, from: usize) -> Option<usize> {
        let end = if self.more_coming {
            self.buf.len().saturating_sub(LOOKAHEAD)
        } else {
            self.buf.len().saturating_sub(STAMP_LEN)
        };
        let found = (from..end.max(from)).find(|&p| {
            matches!(self.buf[p + STAMP_LEN], STX_V1 | STX_V2)
                && self.stamp_at(p).is_some_and(|s| self.plausible_stamp(s))
                && self.frame_at(p + STAMP_LEN).is_some()
        });
        match found {
            Some(p) => Some(p),
            None if !self.more_coming => Some(self.buf.len()),
            // A long junk run is reported in pieces rather than held whole.
            None if end.saturating_sub(from) >= MAX_JUNK_HELD => Some(end),
            None => None,
        }
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
        if offset >= self.buf.len() || (self.more_coming && self.buf.len() - offset < LOOKAHEAD) {
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
        self.pos = self.resync(offset + 1)?;
        Some(self.record(offset, stamp, reject(RejectReason::Junk, self.pos - offset)))
    }
}

/// Reads a `.tlog` from any reader in bounded memory, giving each record (with its offset in
/// the whole stream) to `each`, exactly as [`TlogReader::new`] over the whole file would.
pub fn read_tlog<R: std::io::Read>(
    input: R,
    keys: &SigningKeys,
    each: impl FnMut(TlogRecord<'_>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    read_tlog_in_chunks(input, keys, STREAM_CHUNK, each)
}

fn read_tlog_in_chunks<R: std::io::Read>(
    mut input: R,
    keys: &SigningKeys,
    chunk: usize,
    mut each: impl FnMut(TlogRecord<'_>) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    let mut base = 0usize;
    let mut last_good_us = None;
    let mut eof = false;
    let mut want = chunk;
    loop {
        while !eof && buf.len() < want {
            let start = buf.len();
            buf.resize(want, 0);
            match input.read(&mut buf[start..]) {
                Ok(0) => {
                    buf.truncate(start);
                    eof = true;
                }
                Ok(n) => buf.truncate(start + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(start),
                Err(e) => return Err(e),
            }
        }
        let mut reader = TlogReader::window(&buf, keys, last_good_us, !eof);
        let mut progressed = false;
        for record in reader.by_ref() {
            progressed = true;
            each(TlogRecord {
                offset: base + record.offset,
                ..record
            })?;
        }
        if eof {
            return Ok(());
        }
        let consumed = reader.pos;
        last_good_us = reader.last_good_us;
        buf.drain(..consumed);
        base += consumed;
        // Nothing could be decided in this window: it needs more bytes than it holds.
        want = if progressed {
            chunk.max(buf.len())
        } else {
            (buf.len() * 2).max(chunk)
        };
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

    /// A reader that hands out at most `n` bytes per call.
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(out.len()).min(self.0.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn summary(r: &TlogRecord<'_>) -> (usize, u64, String) {
        let item = match r.item {
            ScanItem::Frame(f) => format!("frame {}", f.seq),
            ScanItem::Reject(rej) => format!("{:?} {}", rej.reason, rej.bytes),
        };
        (r.offset, r.utc_us, item)
    }

    #[test]
    fn streamed_in_any_window_and_read_size_it_reads_as_the_whole_file() {
        let mut bytes = Vec::new();
        let t = 1_790_000_000_000_000u64;
        for seq in 0..40u8 {
            bytes.extend_from_slice(&(t + seq as u64 * 1000).to_be_bytes());
            let mut frame = heartbeat(seq);
            if seq % 7 == 3 {
                let last = frame.len() - 1;
                frame[last] ^= 0xFF; // bad CRC: skipped by its claimed length
            }
            bytes.extend_from_slice(&frame);
            if seq % 11 == 5 {
                bytes.extend_from_slice(b"junk between records");
            }
        }
        bytes.extend_from_slice(&(t + 99_000).to_be_bytes());
        bytes.extend_from_slice(&heartbeat(99)[..7]); // cut by the end of the file
        let keys = SigningKeys::default();
        let whole: Vec<_> = TlogReader::new(&bytes, &keys)
            .map(|r| summary(&r))
            .collect();
        assert!(whole.iter().any(|r| r.2.starts_with("Junk")));
        assert!(whole.iter().any(|r| r.2.starts_with("BadCrc")));
        assert!(whole.last().unwrap().2.starts_with("Truncated"));
        for chunk in [1usize, 2, 7, 64, 300, 301, 1000, 1 << 20] {
            for read_size in [1usize, 13, 4096] {
                let mut streamed = Vec::new();
                read_tlog_in_chunks(Trickle(&bytes, read_size), &keys, chunk, |r| {
                    streamed.push(summary(&r));
                    Ok(())
                })
                .unwrap();
                assert_eq!(streamed, whole, "chunk {chunk}, reads of {read_size}");
            }
        }
    }

    #[test]
    fn a_long_junk_run_is_streamed_in_bounded_pieces() {
        let junk = vec![0x55u8; 3 * MAX_JUNK_HELD];
        let keys = SigningKeys::default();
        let (mut total, mut largest) = (0usize, 0usize);
        read_tlog(&junk[..], &keys, |r| {
            let ScanItem::Reject(rej) = r.item else {
                panic!("a frame in junk")
            };
            total += rej.bytes;
            largest = largest.max(rej.bytes);
            Ok(())
        })
        .unwrap();
        assert_eq!(total, junk.len());
        assert!(largest <= 2 * MAX_JUNK_HELD, "a piece of {largest} bytes");
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
