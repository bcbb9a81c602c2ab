//! `analyze`: recorded receipts (receive JSONL or a ground-station `.tlog`) through the same
//! gap detector and latency estimator as the live daemon, clocked by the recorded times.
//! Findings come out as the same events the daemon raises. Before each receipt the watch is
//! polled at that receipt's time, as the live pipeline's timer would have been, and at the end at
//! the last receipt's time, so a gap still open there is reported open.
//!
//! Files are streamed: memory stays flat whatever their size.

use crate::link::LinkId;
use crate::monitor::driver::{self, MonitorDriver};
use crate::monitor::input::FrameSeen;
use crate::monitor::{parse_utc_ns, Event, MonitorInput, Watch, WatchSettings};
use crate::receipt::ReceiptRecord;
use crate::sniff::{sniff, FileKind, HEAD_LEN};
use crate::tlog::read_tlog;
use crate::wire::sequence::SequenceTracker;
use crate::wire::signing::SigningKeys;
use crate::wire::ScanItem;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// A file `analyze` (or `tlog convert`) will not read, and what it looks like instead.
#[derive(Debug, thiserror::Error)]
#[error("{file}: not {wanted}: it is {found}")]
pub struct WrongKindOfFile {
    pub file: String,
    pub wanted: &'static str,
    pub found: String,
}

/// The recorded receipts replayed through the monitors, as they come, each judged at its own
/// stamp (the recording's clock).
pub struct Replay {
    settings: WatchSettings,
    driver: Option<MonitorDriver>,
    last_utc_ns: Option<i64>,
    /// The recording's sequence numbers per link, as the daemon's scanners track them.
    sequences: SequenceTracker,
}

impl Replay {
    pub fn new(settings: WatchSettings) -> Self {
        Self {
            settings,
            driver: None,
            last_utc_ns: None,
            sequences: SequenceTracker::new(),
        }
    }

    /// Every receipt, of any message, counted as the daemon counts it (delivery, rates, a
    /// second sender's sequence), before its monitor input if it has one.
    pub fn frame(&mut self, receipt: Receipt, link_name: &str) -> Option<Event> {
        let (driver, link) =
            driver_and_link(&mut self.driver, &self.settings, receipt.utc_ns, link_name);
        let sender = (link, receipt.sysid, receipt.compid);
        let outcome = self.sequences.observe(sender, receipt.seq);
        let interleaved = self
            .sequences
            .interleaved_runs(sender, receipt.seq, outcome);
        driver.frame(&FrameSeen {
            link,
            sysid: receipt.sysid,
            compid: receipt.compid,
            msgid: receipt.msgid,
            name: crate::wire::dialect::lookup(receipt.msgid).map_or("", |m| m.name),
            seq: receipt.seq,
            utc_ns: receipt.utc_ns,
            interleaved,
        })
    }

    /// One receipt, on the link called `link_name`: what fell due before it, then what it
    /// settles.
    pub fn receipt(&mut self, input: MonitorInput, link_name: &str) -> Vec<Event> {
        let utc_ns = input.utc_ns();
        self.last_utc_ns = Some(utc_ns);
        let (driver, link) = driver_and_link(&mut self.driver, &self.settings, utc_ns, link_name);
        driver.push(input.on_link(link));
        // The recording's own clock, even where it stepped back: the detector judges spacing
        // in arrival order, as the recording was made.
        driver::events(driver.advance(utc_ns, None)).collect()
    }

    /// The end of the recording: what is due at the last receipt's time (an open gap stays open).
    pub fn finish(&mut self) -> Vec<Event> {
        match (&mut self.driver, self.last_utc_ns) {
            (Some(driver), Some(t)) => driver::events(driver.advance(t, None)).collect(),
            _ => Vec::new(),
        }
    }
}

/// The replay's driver, made at the recording's first stamp, and the id of the link called
/// `link_name`. A recording naming more links than a daemon can have: the rest share the first
/// id (they still count apart by name wherever it matters, in the gap events).
fn driver_and_link<'a>(
    driver: &'a mut Option<MonitorDriver>,
    settings: &WatchSettings,
    utc_ns: i64,
    link_name: &str,
) -> (&'a mut MonitorDriver, LinkId) {
    let driver = driver.get_or_insert_with(|| {
        MonitorDriver::new(Watch::new(settings.clone(), utc_ns), Vec::new())
    });
    let link = driver.link(link_name).unwrap_or(LinkId::FIRST);
    (driver, link)
}

/// One recorded receipt's header, for [`Replay::frame`].
#[derive(Debug, Clone, Copy)]
pub struct Receipt {
    pub sysid: u8,
    pub compid: u8,
    pub msgid: u32,
    pub seq: u8,
    pub utc_ns: i64,
}

/// What reading one file found besides its receipts: lines that are not receipts, SYSTEM_TIME
/// without fields. Reported as warnings naming the file and line.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<String>);

/// Streams one file (receive JSONL or `.tlog`, judged from its first bytes) into the replay,
/// handing each finding to `emit` as it is raised. `tlog_link` names the link of `.tlog`
/// receipts. A file of another kind is refused with [`WrongKindOfFile`].
pub fn replay_file(
    path: &Path,
    input: impl Read,
    tlog_link: &str,
    replay: &mut Replay,
    problems: &mut Problems,
    emit: &mut dyn FnMut(&Event) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, input);
    let head = reader.fill_buf()?;
    let kind = sniff(&head[..head.len().min(HEAD_LEN)]);
    let file = path.display().to_string();
    match kind {
        FileKind::ReceiverJsonl => replay_jsonl(reader, &file, replay, problems, emit),
        FileKind::Tlog => {
            let keys = SigningKeys::default();
            read_tlog(reader, &keys, |record| {
                let ScanItem::Frame(frame) = record.item else {
                    return Ok(());
                };
                let utc_ns = record.utc_us as i64 * 1000;
                let resolution = crate::monitor::input::TLOG_RESOLUTION_NS;
                let receipt = Receipt {
                    sysid: frame.sysid,
                    compid: frame.compid,
                    msgid: frame.msgid,
                    seq: frame.seq,
                    utc_ns,
                };
                if let Some(event) = replay.frame(receipt, tlog_link) {
                    emit(&event)?;
                }
                if let Some(input) =
                    MonitorInput::from_frame(LinkId::FIRST, &frame, None, utc_ns, resolution)
                {
                    for event in replay.receipt(input, tlog_link) {
                        emit(&event)?;
                    }
                }
                Ok(())
            })?;
            Ok(())
        }
        FileKind::Empty => Ok(()),
        other => Err(WrongKindOfFile {
            file,
            wanted: "receiver JSONL or a .tlog",
            found: other.describe(),
        }
        .into()),
    }
}

/// A receive log, line by line. A line that is not a receipt is reported with its line number
/// and skipped.
fn replay_jsonl(
    reader: impl BufRead,
    file: &str,
    replay: &mut Replay,
    problems: &mut Problems,
    emit: &mut dyn FnMut(&Event) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut system_time_without_fields = 0u64;
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| anyhow::anyhow!("{file}: line {}: cannot read: {e}", n + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let record: ReceiptRecord = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => {
                problems
                    .0
                    .push(format!("{file}: line {}: not a receipt: {e}", n + 1));
                continue;
            }
        };
        let Some(utc_ns) = parse_utc_ns(&record.recv_utc) else {
            problems.0.push(format!(
                "{file}: line {}: recv_utc {:?} is not RFC 3339",
                n + 1,
                record.recv_utc
            ));
            continue;
        };
        let receipt = Receipt {
            sysid: record.sysid,
            compid: record.compid,
            msgid: record.msgid,
            seq: record.seq,
            utc_ns,
        };
        if let Some(event) = replay.frame(receipt, &record.link) {
            emit(&event)?;
        }
        match MonitorInput::from_record(LinkId::FIRST, &record, utc_ns) {
            Ok(Some(input)) => {
                for event in replay.receipt(input, &record.link) {
                    emit(&event)?;
                }
            }
            Ok(None) => {}
            Err(_) => system_time_without_fields += 1,
        }
    }
    if system_time_without_fields > 0 {
        problems.0.push(format!(
            "{file}: {system_time_without_fields} SYSTEM_TIME receipts carry no fields: no latency from them (add SYSTEM_TIME to `fields`)"
        ));
    }
    Ok(())
}
