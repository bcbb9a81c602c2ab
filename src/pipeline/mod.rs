//! The pipeline core, pure: everything the live daemon decides between its links' scanners and
//! its sinks, with no clock, socket or file. It takes what the scanners made of their input
//! ([`LinkBatch`]) and the ticks of the shell's clock ([`Advance`], [`Housekeeping`], which
//! carry the time and whatever the shell read of the world: the links' in-flight stamps and
//! drop counters, the kernel clock's state, the writers' and webhooks' counters), and returns
//! [`Action`]s: lines for a writer, events to emit, the status snapshot to publish, what to tell
//! systemd, what to log. The shell (`daemon::pipeline`) reads the world, calls the core and
//! carries the actions out; it decides nothing.
//!
//! What the core decides, each unit tested with plain numbers:
//! - event order: the monitors judge arrival stamps in stamp order, up to the watermark before
//!   which every link has been scanned ([`crate::monitor::MonitorDriver`]);
//! - drop attribution: a gap raised while the receiver itself dropped input on the vehicle's
//!   links says how much (`receiver_dropped`);
//! - report rate limits: a link's rejects and drops are summarised at most every 10 s
//!   ([`links`]);
//! - the status snapshot ([`snapshot`]).

mod core;
pub mod links;
pub mod snapshot;

pub use self::core::{PipelineCore, PipelineSettings};

use crate::link::{LinkChange, LinkId};
use crate::monitor::Event;
use crate::recorder::{LinkCounters, Output};
use crate::sink::writer::{Batch, Dropped};
use crate::status::{StatusSnapshot, StreamSnapshot, WebhookSnapshot};
use crate::wire::sequence::SeqStats;
use std::collections::BTreeMap;

/// How often a shell ticks [`Housekeeping`]: the clock status, the drop reports and the
/// published status are this fresh (the daemon and the `range` view alike).
pub const HOUSEKEEPING: std::time::Duration = std::time::Duration::from_millis(500);

/// What a link's scanner hands the pipeline.
#[derive(Debug)]
pub struct LinkBatch {
    pub link: LinkId,
    pub out: Output,
    /// Data inputs (datagrams, serial reads) this batch covers: once the batch's monitor input
    /// is in event order, as many stamps come off the link's in-flight list.
    pub data_inputs: usize,
    pub changes: Vec<LinkChange>,
    /// The link's counters after this batch.
    pub counters: LinkCounters,
    /// Sequence counts by system id (over its components) after this batch.
    pub sequences: BTreeMap<u8, SeqStats>,
}

/// A tick of the shell's clock after work: time to judge what the links allow.
#[derive(Debug, Clone, Copy)]
pub struct Advance<'a> {
    pub now_ns: i64,
    /// Per link, in config order: the oldest stamp it holds that the pipeline has not yet
    /// ordered (`None`: idle).
    pub oldest_in_flight: &'a [Option<i64>],
    /// Per link: what the receiver itself has dropped there so far (overload and kernel).
    pub dropped: &'a [u64],
}

/// The kernel clock's NTP state as the shell read it (`adjtimex`), or the errno it failed with.
pub type KernelClock = Result<crate::monitor::ClockStatus, i32>;

/// The periodic tick (twice a second): time, and what the shell read of the world.
#[derive(Debug, Clone)]
pub struct Housekeeping {
    pub now_ns: i64,
    pub kernel_clock: KernelClock,
    /// Per link: `(overload, kernel)` drops so far.
    pub link_drops: Vec<(u64, u64)>,
    /// The writers' counters (receive, tlog when written, events).
    pub streams: Vec<StreamSnapshot>,
    /// Per writer: what it dropped since the last tick (the disk did not keep up), and its last
    /// write error.
    pub writer_drops: Vec<WriterDrops>,
    pub webhooks: Vec<WebhookSnapshot>,
}

#[derive(Debug, Clone)]
pub struct WriterDrops {
    pub stream: String,
    pub dropped: Dropped,
    pub reason: Option<String>,
}

/// Which writer a batch of lines is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Receive,
    Tlog,
    /// An SBS feed's accepted lines (`traffic/`).
    Traffic,
}

/// What the shell is to do, in order.
#[derive(Debug)]
pub enum Action {
    Write(Stream, Batch),
    Emit(Event),
    /// `inputs` data inputs of `link` are in event order: take their stamps off its in-flight
    /// list (until then they hold the watermark back).
    Delivered {
        link: LinkId,
        inputs: usize,
    },
    /// Every receipt stamped before this instant has been handed to the receive writer (the
    /// watermark): the publisher may say the receive log is complete that far once it is
    /// written.
    ReceiveLogThrough(i64),
    Publish(Box<StatusSnapshot>),
    /// systemd's `STATUS=` line.
    Status(String),
    /// systemd's watchdog: the pipeline is alive.
    WatchdogPing,
    Log(Note),
}

/// What the shell logs (the journal); the events themselves are logged by the event sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    LinkUp {
        link: String,
        detail: String,
    },
    LinkDown {
        link: String,
        reason: String,
    },
    /// The first datagram from outside a link's allow-list (further ones are only counted).
    FirstDenied {
        link: String,
        peer: String,
    },
    /// The kernel's NTP state could not be read (said once).
    ClockUnreadable {
        errno: i32,
    },
    /// A writer dropped lines: the disk did not keep up and its buffer is full.
    RecordsDropped {
        stream: String,
        count: u64,
    },
    /// The receiver dropped input on a link since the last report.
    LinkDropped {
        link: String,
        counts: BTreeMap<String, u64>,
    },
}
