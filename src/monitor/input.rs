//! What the monitors are told about a receipt: a HEARTBEAT (for the gap detector) or a
//! SYSTEM_TIME (for the latency estimator). Built in one place, from a frame (the live daemon,
//! `.tlog` files) or from a receive-log line (`analyze`), so every path feeds the monitors alike.

use crate::link::LinkId;
use crate::receipt::ReceiptRecord;
use crate::wire::fields::{self, HEARTBEAT, SYSTEM_TIME};
use crate::wire::Frame;

#[derive(Debug, Clone, PartialEq)]
pub enum MonitorInput {
    Heartbeat {
        link: LinkId,
        sysid: u8,
        compid: u8,
        utc_ns: i64,
    },
    SystemTime {
        link: LinkId,
        sysid: u8,
        utc_ns: i64,
        /// How finely `utc_ns` was recorded (1 ms in the receive log, 1 µs in a `.tlog`): the
        /// receipt happened somewhere in the following interval, so latency takes its middle.
        resolution_ns: i64,
        time_unix_usec: u64,
        time_boot_ms: u32,
    },
}

/// A receive-log stamp's resolution: whole milliseconds.
pub const RECEIVE_LOG_RESOLUTION_NS: i64 = 1_000_000;
/// A `.tlog` stamp's resolution: microseconds.
pub const TLOG_RESOLUTION_NS: i64 = 1_000;

/// A SYSTEM_TIME receive-log line without the `fields` that latency needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemTimeWithoutFields;

impl MonitorInput {
    /// The input a frame received at `utc_ns` (recorded to `resolution_ns`) gives, if the
    /// monitors care about its message.
    pub fn from_frame(
        link: LinkId,
        frame: &Frame<'_>,
        utc_ns: i64,
        resolution_ns: i64,
    ) -> Option<MonitorInput> {
        match frame.msgid {
            HEARTBEAT => Some(MonitorInput::Heartbeat {
                link,
                sysid: frame.sysid,
                compid: frame.compid,
                utc_ns,
            }),
            SYSTEM_TIME => {
                let t = fields::system_time(frame.payload);
                Some(MonitorInput::SystemTime {
                    link,
                    sysid: frame.sysid,
                    utc_ns,
                    resolution_ns,
                    time_unix_usec: t.time_unix_usec,
                    time_boot_ms: t.time_boot_ms,
                })
            }
            _ => None,
        }
    }

    /// The input a receive-log line gives (its `recv_utc` already parsed to `utc_ns`). A
    /// SYSTEM_TIME line needs its `fields` (the daemon writes them by default).
    pub fn from_record(
        link: LinkId,
        record: &ReceiptRecord,
        utc_ns: i64,
    ) -> Result<Option<MonitorInput>, SystemTimeWithoutFields> {
        match record.msgid {
            HEARTBEAT => Ok(Some(MonitorInput::Heartbeat {
                link,
                sysid: record.sysid,
                compid: record.compid,
                utc_ns,
            })),
            SYSTEM_TIME => {
                let fields = record.fields.as_ref();
                let get = |k: &str| fields.and_then(|f| f.get(k)).and_then(|v| v.as_u64());
                match (get("time_unix_usec"), get("time_boot_ms")) {
                    (Some(unix), Some(boot)) => Ok(Some(MonitorInput::SystemTime {
                        link,
                        sysid: record.sysid,
                        utc_ns,
                        resolution_ns: RECEIVE_LOG_RESOLUTION_NS,
                        time_unix_usec: unix,
                        time_boot_ms: boot as u32,
                    })),
                    _ => Err(SystemTimeWithoutFields),
                }
            }
            _ => Ok(None),
        }
    }

    pub fn link(&self) -> LinkId {
        match *self {
            MonitorInput::Heartbeat { link, .. } | MonitorInput::SystemTime { link, .. } => link,
        }
    }

    pub fn utc_ns(&self) -> i64 {
        match *self {
            MonitorInput::Heartbeat { utc_ns, .. } | MonitorInput::SystemTime { utc_ns, .. } => {
                utc_ns
            }
        }
    }
}
