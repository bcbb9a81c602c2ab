//! The recorder of one link: its bytes in; receive-log lines, raw `.tlog` records, copies of
//! the frames for forwarding, reject counts, sequence statistics and the monitor input out.
//! An SBS link (`sbs = "host:30003"`) is text, not MAVLink: its lines are cut and read by
//! [`crate::sbs`], each accepted one written to the traffic log (`traffic/`, one JSON line with
//! the line as received) and handed to the traffic monitor, each refused one counted by reason.
//! A stream link's connections (TCP peers) each have their own scanner. Pure: arrival times come in with the
//! bytes, and output goes into buffers the caller writes. Each link has its own, so links are
//! scanned in parallel, each on its own thread, and share nothing while scanning.

use crate::link::LinkId;
use crate::monitor::input::FrameSeen;
use crate::monitor::MonitorInput;
use crate::receipt::{self, Arrival, LineOptions, UtcMillis};
use crate::sbs::SbsLines;
use crate::traffic::TrafficCounters;
use crate::wire::fields::FieldSelection;
use crate::wire::scanner::{DatagramScanner, RejectReason, ScanItem, StreamScanner};
use crate::wire::sequence::{SeqStats, SequenceTracker};
use crate::wire::signing::SigningKeys;
use crate::wire::Frame;
use std::collections::HashMap;

pub use crate::utc::NANOS_PER_DAY;

/// Counters for one link.
#[derive(Debug, Clone, Default)]
pub struct LinkCounters {
    pub bytes: u64,
    pub receipts: u64,
    /// Reject events by reason (a run of junk bytes counts once), indexed like `RejectReason::ALL`.
    pub rejects: [u64; RejectReason::COUNT],
    /// Bytes that were not part of any receipt.
    pub bytes_skipped: u64,
    /// Sequence counts over every sender on the link; each only grows.
    pub sequence: SeqStats,
    /// Traffic reports made on the link (ADS-B, Remote ID, SBS), SBS lines read, and the
    /// reports and lines refused, by reason.
    pub traffic: TrafficCounters,
}

impl LinkCounters {
    pub fn rejects_of(&self, reason: RejectReason) -> u64 {
        self.rejects[reason_index(reason)]
    }
}

fn reason_index(reason: RejectReason) -> usize {
    RejectReason::ALL
        .iter()
        .position(|r| *r == reason)
        .expect("listed")
}

/// Output of one UTC day: lines for the receive log and records for the raw `.tlog`.
#[derive(Debug, Default)]
pub struct DayBatch {
    /// UTC day number (days since the Unix epoch) of every line in this batch.
    pub day: i64,
    pub jsonl: Vec<u8>,
    pub tlog: Vec<u8>,
    pub receipts: u64,
    /// An SBS link's accepted lines, for the traffic log, and how many.
    pub traffic: Vec<u8>,
    pub traffic_lines: u64,
    pub first_utc_ns: i64,
    pub last_utc_ns: i64,
}

/// What the recorder produced since the caller last took it.
#[derive(Debug, Default)]
pub struct Output {
    pub batches: Vec<DayBatch>,
    pub observations: Vec<MonitorInput>,
    /// Every receipt, for per-message counts, delivery and rates.
    pub frames_seen: Vec<FrameSeen>,
    /// Every valid frame as received, for the forward outputs (when asked for).
    pub frames: FrameCopies,
}

/// Valid frames byte for byte as received, one after another, with where each ends and what it
/// is (for the forwards' filters).
#[derive(Debug, Default, Clone)]
pub struct FrameCopies {
    pub bytes: Vec<u8>,
    pub frames: Vec<CopiedFrame>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopiedFrame {
    /// Where the frame ends in `bytes` (it starts where the one before ends).
    pub end: u32,
    pub sysid: u8,
    pub msgid: u32,
}

impl FrameCopies {
    fn push(&mut self, frame: &Frame<'_>) {
        self.bytes.extend_from_slice(frame.bytes);
        self.frames.push(CopiedFrame {
            end: self.bytes.len() as u32,
            sysid: frame.sysid,
            msgid: frame.msgid,
        });
    }

    /// Each frame's bytes with what it is, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], CopiedFrame)> + '_ {
        let mut start = 0usize;
        self.frames.iter().map(move |f| {
            let bytes = &self.bytes[start..f.end as usize];
            start = f.end as usize;
            (bytes, *f)
        })
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
}

impl Output {
    fn batch_for(&mut self, utc_ns: i64) -> &mut DayBatch {
        let day = crate::utc::day_of(utc_ns);
        if self.batches.last().is_none_or(|b| b.day != day) {
            self.batches.push(DayBatch {
                day,
                first_utc_ns: utc_ns,
                ..DayBatch::default()
            });
        }
        self.batches.last_mut().expect("just pushed")
    }

    pub fn receipts(&self) -> u64 {
        self.batches.iter().map(|b| b.receipts).sum()
    }

    pub fn bytes(&self) -> usize {
        self.batches
            .iter()
            .map(|b| b.jsonl.len() + b.tlog.len() + b.traffic.len())
            .sum()
    }
}

#[derive(Debug, Clone, Default)]
pub struct RecorderSettings {
    pub fields_for: FieldSelection,
    pub signing_keys: Vec<[u8; 32]>,
    pub reject_bad_signatures: bool,
    pub capture_tlog: bool,
    /// Copy every valid frame into [`Output::frames`] (the link has forwards).
    pub capture_frames: bool,
    /// The link is an SBS-1 text feed, not MAVLink.
    pub sbs: bool,
}

pub struct LinkRecorder {
    link: LinkId,
    name_json: String,
    /// One scanner per open connection of a stream link (a serial device is connection 0).
    streams: HashMap<u64, StreamScanner>,
    /// An SBS link's line cutters, one per connection (`None`: a MAVLink link).
    sbs: Option<HashMap<u64, SbsLines>>,
    counters: LinkCounters,
    keys: SigningKeys,
    receipts: ReceiptWriter,
}

/// What every receipt goes through, whichever scanner it came from.
struct ReceiptWriter {
    options: LineOptions,
    capture_tlog: bool,
    capture_frames: bool,
    clock: UtcMillis,
    sequences: SequenceTracker,
}

impl LinkRecorder {
    pub fn new(link: LinkId, name: &str, settings: RecorderSettings) -> Self {
        let signatures_checked = !settings.signing_keys.is_empty();
        Self {
            link,
            name_json: receipt::json_string(name),
            streams: HashMap::new(),
            sbs: settings.sbs.then(HashMap::new),
            counters: LinkCounters::default(),
            keys: SigningKeys::new(settings.signing_keys, settings.reject_bad_signatures),
            receipts: ReceiptWriter {
                options: LineOptions {
                    fields_for: settings.fields_for,
                    signatures_checked,
                },
                capture_tlog: settings.capture_tlog,
                capture_frames: settings.capture_frames,
                clock: UtcMillis::default(),
                sequences: SequenceTracker::new(),
            },
        }
    }

    pub fn link(&self) -> LinkId {
        self.link
    }

    pub fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    pub fn sequences(&self) -> &SequenceTracker {
        &self.receipts.sequences
    }

    /// One UDP datagram: scanned on its own.
    pub fn datagram(
        &mut self,
        utc_ns: i64,
        mono_ns: Option<u64>,
        src_json: Option<&str>,
        bytes: &[u8],
        out: &mut Output,
    ) {
        self.counters.bytes += bytes.len() as u64;
        let arrival = Arrival {
            utc_ns,
            mono_ns,
            link_json: &self.name_json,
            src_json,
        };
        for item in DatagramScanner::new(bytes, &self.keys) {
            self.receipts
                .record(self.link, item, &arrival, &mut self.counters, out);
        }
    }

    /// Bytes from a stream link (serial): frames may span calls.
    pub fn stream(
        &mut self,
        utc_ns: i64,
        mono_ns: Option<u64>,
        src_json: Option<&str>,
        bytes: &[u8],
        out: &mut Output,
    ) {
        self.stream_on(0, utc_ns, mono_ns, src_json, bytes, out);
    }

    /// Bytes from one connection of a stream link (a TCP peer): frames may span calls on the
    /// same connection, never across connections.
    pub fn stream_on(
        &mut self,
        conn: u64,
        utc_ns: i64,
        mono_ns: Option<u64>,
        src_json: Option<&str>,
        bytes: &[u8],
        out: &mut Output,
    ) {
        self.counters.bytes += bytes.len() as u64;
        if let Some(cutters) = &mut self.sbs {
            let arrival = Arrival {
                utc_ns,
                mono_ns,
                link_json: &self.name_json,
                src_json,
            };
            let (link, counters, clock) = (self.link, &mut self.counters, &mut self.receipts.clock);
            cutters.entry(conn).or_default().push(bytes, &mut |line| {
                sbs_line(link, line, &arrival, clock, counters, out)
            });
            return;
        }
        let scanner = self.streams.entry(conn).or_default();
        scanner.push(bytes);
        let arrival = Arrival {
            utc_ns,
            mono_ns,
            link_json: &self.name_json,
            src_json,
        };
        while let Some(item) = scanner.next_item(&self.keys) {
            self.receipts
                .record(self.link, item, &arrival, &mut self.counters, out);
        }
    }

    /// One connection of a stream link closed: a partial frame it left is a reject, and its
    /// next bytes (if it is opened again) start afresh.
    pub fn stream_end_on(
        &mut self,
        conn: u64,
        utc_ns: i64,
        mono_ns: Option<u64>,
        out: &mut Output,
    ) {
        if let Some(cutters) = &mut self.sbs {
            let cut = cutters.remove(&conn).and_then(|mut c| c.finish());
            if let Some(reason) = cut {
                self.counters.traffic.sbs_lines += 1;
                self.counters.traffic.reject(reason);
            }
            return;
        }
        let Some(mut scanner) = self.streams.remove(&conn) else {
            return;
        };
        scanner.finish();
        let arrival = Arrival {
            utc_ns,
            mono_ns,
            link_json: &self.name_json,
            src_json: None,
        };
        while let Some(item) = scanner.next_item(&self.keys) {
            self.receipts
                .record(self.link, item, &arrival, &mut self.counters, out);
        }
    }

    /// A stream link closed (device gone, TCP peer gone): every connection's partial frame is
    /// a reject, and the next bytes start afresh.
    pub fn stream_end(&mut self, utc_ns: i64, mono_ns: Option<u64>, out: &mut Output) {
        let mut conns: Vec<u64> = match &self.sbs {
            Some(cutters) => cutters.keys().copied().collect(),
            None => self.streams.keys().copied().collect(),
        };
        conns.sort_unstable();
        for conn in conns {
            self.stream_end_on(conn, utc_ns, mono_ns, out);
        }
    }
}

impl ReceiptWriter {
    fn record(
        &mut self,
        link: LinkId,
        item: ScanItem<'_>,
        arrival: &Arrival<'_>,
        counters: &mut LinkCounters,
        out: &mut Output,
    ) {
        let (sequences, clock, options, capture_tlog, capture_frames) = (
            &mut self.sequences,
            &mut self.clock,
            &self.options,
            self.capture_tlog,
            self.capture_frames,
        );
        match item {
            ScanItem::Reject(reject) => {
                counters.rejects[reason_index(reject.reason)] += 1;
                counters.bytes_skipped += reject.bytes as u64;
            }
            ScanItem::Frame(frame) => {
                counters.receipts += 1;
                let sender = (link, frame.sysid, frame.compid);
                let outcome = sequences.observe(sender, frame.seq);
                counters.sequence.count(outcome);
                let batch = out.batch_for(arrival.utc_ns);
                batch.receipts += 1;
                batch.last_utc_ns = arrival.utc_ns;
                receipt::write_line(&mut batch.jsonl, clock, arrival, &frame, options);
                if capture_tlog {
                    write_tlog_record(&mut batch.tlog, arrival.utc_ns, &frame);
                }
                if capture_frames {
                    out.frames.push(&frame);
                }
                observe(link, &frame, arrival, counters, &mut out.observations);
                out.frames_seen.push(FrameSeen::classified(
                    link,
                    &frame,
                    arrival.utc_ns,
                    outcome,
                    sequences,
                ));
            }
        }
    }
}

/// One line of an SBS feed: refused and counted, or a well-formed record; a traffic report is
/// written to the traffic log and handed to the traffic monitor, stamped as a receipt is (the
/// whole millisecond the log states), so `analyze` of the log judges the same instant.
fn sbs_line(
    link: LinkId,
    line: crate::sbs::Line<'_>,
    arrival: &Arrival<'_>,
    clock: &mut UtcMillis,
    counters: &mut LinkCounters,
    out: &mut Output,
) {
    use crate::monitor::input::RECEIVE_LOG_RESOLUTION_NS;
    counters.traffic.sbs_lines += 1;
    let text = match line {
        Ok(text) => text,
        Err(reason) => return counters.traffic.reject(reason),
    };
    let report = match crate::sbs::parse_line(text) {
        Ok(Some(report)) => report,
        Ok(None) => return,
        Err(reason) => return counters.traffic.reject(reason),
    };
    counters.traffic.reports += 1;
    let utc_ns = arrival.utc_ns;
    let batch = out.batch_for(utc_ns);
    batch.traffic_lines += 1;
    batch.last_utc_ns = utc_ns;
    write_traffic_line(&mut batch.traffic, clock, arrival, text);
    out.observations.push(MonitorInput::Traffic {
        link,
        sender: None,
        utc_ns: utc_ns - utc_ns.rem_euclid(RECEIVE_LOG_RESOLUTION_NS),
        message: Box::new(crate::wire::traffic::TrafficMessage::Report(report)),
    });
}

/// One line of the traffic log: `{"recv_utc":...,"mono_ns":...,"link":...,"src":...,"sbs":...}`
/// with the SBS line as received.
fn write_traffic_line(out: &mut Vec<u8>, clock: &mut UtcMillis, arrival: &Arrival<'_>, line: &str) {
    out.extend_from_slice(br#"{"recv_utc":""#);
    clock.write(out, arrival.utc_ns);
    out.extend_from_slice(br#"","mono_ns":"#);
    match arrival.mono_ns {
        Some(ns) => out.extend_from_slice(itoa::Buffer::new().format(ns).as_bytes()),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(br#","link":"#);
    out.extend_from_slice(arrival.link_json.as_bytes());
    if let Some(src) = arrival.src_json {
        out.extend_from_slice(br#","src":"#);
        out.extend_from_slice(src.as_bytes());
    }
    out.extend_from_slice(br#","sbs":"#);
    out.extend_from_slice(receipt::json_string(line).as_bytes());
    out.extend_from_slice(b"}\n");
}

/// A `.tlog` record: 8-byte big-endian µs UTC, then the frame as received.
fn write_tlog_record(out: &mut Vec<u8>, utc_ns: i64, frame: &Frame<'_>) {
    let micros = utc_ns.div_euclid(1000).max(0) as u64;
    out.extend_from_slice(&micros.to_be_bytes());
    out.extend_from_slice(frame.bytes);
}

/// The gap detector is fed the receipt time as the receive log states it (whole milliseconds),
/// so `analyze` over the log reaches exactly the same gaps as the live daemon. The latency
/// estimator gets the receiver's own nanosecond stamp: a loopback or a fast radio's latency is
/// under a millisecond, and the millisecond text cannot show it (it read as negative).
fn observe(
    link: LinkId,
    frame: &Frame<'_>,
    arrival: &Arrival<'_>,
    counters: &mut LinkCounters,
    observations: &mut Vec<MonitorInput>,
) {
    use crate::monitor::input::{RECEIVER_STAMP_RESOLUTION_NS, RECEIVE_LOG_RESOLUTION_NS};
    use crate::wire::fields::{HEARTBEAT, RADIO, RADIO_STATUS, SYSTEM_TIME};
    let utc_ns = arrival.utc_ns;
    // Traffic and our vehicles' positions, stamped as the log states them; an impossible
    // value is refused and counted on the link.
    if crate::wire::traffic::MESSAGES.contains(&frame.msgid) {
        let logged_ns = utc_ns - utc_ns.rem_euclid(RECEIVE_LOG_RESOLUTION_NS);
        match MonitorInput::traffic_from_frame(link, frame, logged_ns) {
            Some(Ok(input)) => {
                if !matches!(
                    &input,
                    MonitorInput::Traffic { message, .. }
                        if matches!(**message, crate::wire::traffic::TrafficMessage::OwnFix(_))
                ) {
                    counters.traffic.reports += 1;
                }
                observations.push(input);
            }
            Some(Err(reason)) => counters.traffic.reject(reason),
            None => {}
        }
        return;
    }
    let input = match frame.msgid {
        SYSTEM_TIME => {
            MonitorInput::from_frame(link, frame, None, utc_ns, RECEIVER_STAMP_RESOLUTION_NS)
        }
        HEARTBEAT | RADIO_STATUS | RADIO => {
            let logged_ns = utc_ns - utc_ns.rem_euclid(RECEIVE_LOG_RESOLUTION_NS);
            // The receipt's `src` as written: the JSON string without its quotes.
            let src = arrival.src_json.map(|json| json.trim_matches('"'));
            MonitorInput::from_frame(link, frame, src, logged_ns, RECEIVE_LOG_RESOLUTION_NS)
        }
        _ => None,
    };
    observations.extend(input);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::ReceiptRecord;
    use crate::wire::build::heartbeat_v2 as hb;

    const LINK0: LinkId = LinkId::FIRST;

    #[test]
    fn datagrams_become_lines_counters_and_observations() {
        let mut r = LinkRecorder::new(
            LINK0,
            "radio1",
            RecorderSettings {
                fields_for: FieldSelection::Only(vec![0]),
                capture_tlog: true,
                ..Default::default()
            },
        );
        let mut out = Output::default();
        let mut dgram = hb(4, 1);
        dgram.extend_from_slice(b"junk");
        dgram.extend_from_slice(&hb(4, 3));
        r.datagram(
            1_000_000_000_123_000_000,
            Some(42),
            Some("\"10.0.0.1:14550\""),
            &dgram,
            &mut out,
        );
        assert_eq!(out.receipts(), 2);
        let lines: Vec<ReceiptRecord> = out.batches[0]
            .jsonl
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines[1].seq, 3);
        assert_eq!(lines[0].src.as_deref(), Some("10.0.0.1:14550"));
        assert_eq!(lines[0].recv_utc, "2001-09-09T01:46:40.123Z");
        let c = r.counters();
        assert_eq!(
            (
                c.receipts,
                c.sequence.lost,
                c.rejects_of(RejectReason::Junk),
                c.bytes_skipped
            ),
            (2, 1, 1, 4)
        );
        assert_eq!(out.observations.len(), 2);
        // The raw capture holds both frames behind their big-endian µs stamps.
        let tlog = &out.batches[0].tlog;
        assert_eq!(&tlog[..8], &1_000_000_000_123_000u64.to_be_bytes());
        assert_eq!(tlog.len(), 2 * (8 + hb(4, 1).len()));
    }

    #[test]
    fn a_stream_frame_split_across_reads_is_one_receipt_and_midnight_splits_batches() {
        let mut r = LinkRecorder::new(LINK0, "usb0", RecorderSettings::default());
        let mut out = Output::default();
        let frame = hb(7, 9);
        let before_midnight = 20_000 * NANOS_PER_DAY - 1;
        r.stream(before_midnight, None, None, &frame[..6], &mut out);
        r.stream(before_midnight, None, None, &frame[6..], &mut out);
        r.stream(before_midnight + 2, None, None, &frame, &mut out);
        r.stream(before_midnight + 3, None, None, &frame[..4], &mut out);
        r.stream_end(before_midnight + 4, None, &mut out);
        assert_eq!(out.batches.len(), 2);
        assert_eq!((out.batches[0].receipts, out.batches[1].receipts), (1, 1));
        assert_eq!(out.batches[1].day, 20_000);
        let c = r.counters();
        assert_eq!(
            (c.sequence.duplicates, c.rejects_of(RejectReason::Truncated)),
            (1, 1)
        );
    }

    #[test]
    fn two_connections_are_scanned_apart_and_frames_are_copied_as_received() {
        let mut r = LinkRecorder::new(
            LINK0,
            "router",
            RecorderSettings {
                capture_frames: true,
                ..Default::default()
            },
        );
        let mut out = Output::default();
        let (a, b) = (hb(7, 1), hb(8, 1));
        // Interleaved halves: each connection's own bytes make its frame.
        r.stream_on(1, 10, None, Some("\"p1\""), &a[..5], &mut out);
        r.stream_on(2, 11, None, Some("\"p2\""), &b[..7], &mut out);
        r.stream_on(1, 12, None, Some("\"p1\""), &a[5..], &mut out);
        r.stream_on(2, 13, None, Some("\"p2\""), &b[7..], &mut out);
        assert_eq!(out.receipts(), 2);
        let copies: Vec<(Vec<u8>, u8)> = out
            .frames
            .iter()
            .map(|(bytes, f)| (bytes.to_vec(), f.sysid))
            .collect();
        assert_eq!(copies, vec![(a.clone(), 7), (b.clone(), 8)]);
        assert_eq!(out.frames.frames[1].msgid, 0);
        // A peer that leaves half a frame: one truncated reject, the other peer untouched.
        r.stream_on(1, 14, None, None, &a[..4], &mut out);
        r.stream_on(2, 15, None, None, &b[..4], &mut out);
        r.stream_end_on(1, 16, None, &mut out);
        assert_eq!(r.counters().rejects_of(RejectReason::Truncated), 1);
        r.stream_on(2, 17, None, None, &b[4..], &mut out);
        assert_eq!(out.receipts(), 3);
        // Without forwards, nothing is copied.
        let mut plain = LinkRecorder::new(LINK0, "x", RecorderSettings::default());
        let mut out = Output::default();
        plain.stream(1, None, None, &a, &mut out);
        assert!(out.frames.is_empty());
    }
}
