//! Pure monitors over receipts, shared by the live daemon and `analyze`: the telemetry_gap
//! detector ([`gap`]) and each link's ([`link_gap`]), the SYSTEM_TIME latency estimator
//! ([`latency`]), the radios ([`radio`]), what redundant links deliver ([`delivery`]), two
//! senders on one id ([`conflict`]), streams that stop ([`streams`]), the receiver clock watch
//! ([`ntp`]), what each system's heartbeat says of it ([`heartbeat`]), the traffic around our
//! vehicles ([`traffic`]), what they are fed ([`input`]) in event-time order ([`merge`]) by one
//! loop ([`driver`]), and the events they produce ([`event`]).
//!
//! Nothing in this module reads a clock, opens a socket or touches a file. Time is always an
//! argument: UTC as `i64` nanoseconds since the Unix epoch ([`crate::utc`]). Each handler returns what
//! happened (events, the next deadline) and the caller decides what to do with it, so the same
//! code runs live (clocked by the wall clock and a timer) and offline (clocked by recorded times).

pub mod conflict;
pub mod delivery;
pub mod driver;
pub mod event;
pub mod gap;
pub mod heartbeat;
pub mod histogram;
pub mod input;
pub mod latency;
pub mod link_gap;
pub mod merge;
pub mod ntp;
pub mod radio;
pub mod streams;
pub mod title;
pub mod traffic;
pub mod watch;

/// The monitors' time type and its text form, from the crate's time axis ([`crate::utc`]).
pub use crate::utc::{format_utc_ms, parse_utc_ns, UtcTime};
pub use driver::{Judged, MonitorDriver};
pub use event::{
    ClockEvent, ClockState, CoverageEvent, CoverageState, DroppedEvent, Event, GapEvent, GapState,
    LatencyEvent, LinkEvent, LinkState, ReceiverEvent, ReceiverState, RemovedFolder,
    RetentionEvent,
};
pub use gap::{GapConfig, GapDetector, VehicleStatus};
pub use input::MonitorInput;
pub use latency::{
    send_window, LatencyConfig, LatencyEstimate, LatencyEstimator, SampleOutcome, SendWindow,
    WindowRestart,
};
pub use merge::{watermark, EventOrder};
pub use ntp::{ClockStatus, ClockWatch};
pub use title::{gap_title, OBSERVED};
pub use watch::{Watch, WatchSettings};
