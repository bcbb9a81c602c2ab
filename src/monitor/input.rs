//! What the monitors are told about a receipt: a HEARTBEAT (for the gap detectors and the
//! conflict detector), a SYSTEM_TIME (for the latency estimator), a RADIO_STATUS (for the
//! radio watch) or a traffic report or own position (for the traffic monitor: MAVLink's
//! `ADSB_VEHICLE`, `OPEN_DRONE_ID_*`, `GLOBAL_POSITION_INT`, `GPS_RAW_INT`, or an SBS line),
//! judged in stamp order; and of every receipt a [`FrameSeen`], counted as it
//! comes (delivery, rates). Built in one place, from a frame (the live daemon, `.tlog` files)
//! or from a receive-log line (`analyze`), so every path feeds the monitors alike.

use crate::link::LinkId;
use crate::receipt::ReceiptRecord;
use crate::traffic::TrafficReject;
use crate::wire::fields::{self, HEARTBEAT, RADIO, RADIO_STATUS, SYSTEM_TIME};
use crate::wire::sequence::{SeqOutcome, SequenceTracker};
use crate::wire::traffic::{self as traffic_wire, TrafficMessage};
use crate::wire::Frame;

#[derive(Debug, Clone, PartialEq)]
pub enum MonitorInput {
    Heartbeat {
        link: LinkId,
        sysid: u8,
        compid: u8,
        utc_ns: i64,
        /// The payload, when known (a receive-log line carries it only in its `fields`).
        fields: Option<fields::Heartbeat>,
        seq: u8,
        /// The peer it came from (UDP and TCP links), as the receipt's `src`.
        src: Option<Box<str>>,
    },
    RadioStatus {
        link: LinkId,
        sysid: u8,
        compid: u8,
        utc_ns: i64,
        report: fields::RadioStatus,
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
    /// Traffic (`ADSB_VEHICLE`, `OPEN_DRONE_ID_*`, an SBS line) or one of our vehicles' own
    /// position (`GLOBAL_POSITION_INT`, `GPS_RAW_INT`). Boxed: most inputs are heartbeats.
    Traffic {
        link: LinkId,
        /// The MAVLink sender (system, component); `None` for an SBS line.
        sender: Option<(u8, u8)>,
        utc_ns: i64,
        message: Box<TrafficMessage>,
    },
}

/// A receive-log stamp's resolution: whole milliseconds.
pub const RECEIVE_LOG_RESOLUTION_NS: i64 = 1_000_000;
/// The live receiver's own stamp (`CLOCK_REALTIME` at the read): nanoseconds.
pub const RECEIVER_STAMP_RESOLUTION_NS: i64 = 1;
/// A `.tlog` stamp's resolution: microseconds.
pub const TLOG_RESOLUTION_NS: i64 = 1_000;

/// A SYSTEM_TIME receive-log line without the `fields` that latency needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemTimeWithoutFields;

impl MonitorInput {
    /// A HEARTBEAT input with nothing but where, who and when: what most monitor tests feed.
    #[cfg(test)]
    pub fn bare_heartbeat(link: LinkId, sysid: u8, compid: u8, utc_ns: i64) -> Self {
        MonitorInput::Heartbeat {
            link,
            sysid,
            compid,
            utc_ns,
            fields: None,
            seq: 0,
            src: None,
        }
    }

    /// The input a frame received at `utc_ns` (recorded to `resolution_ns`) gives, if the
    /// monitors care about its message.
    pub fn from_frame(
        link: LinkId,
        frame: &Frame<'_>,
        src: Option<&str>,
        utc_ns: i64,
        resolution_ns: i64,
    ) -> Option<MonitorInput> {
        match frame.msgid {
            HEARTBEAT => Some(MonitorInput::Heartbeat {
                link,
                sysid: frame.sysid,
                compid: frame.compid,
                utc_ns,
                fields: Some(fields::heartbeat(frame.payload)),
                seq: frame.seq,
                src: src.map(Into::into),
            }),
            RADIO_STATUS | RADIO => Some(MonitorInput::RadioStatus {
                link,
                sysid: frame.sysid,
                compid: frame.compid,
                utc_ns,
                report: fields::radio_status(frame.payload),
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
            msgid if traffic_wire::MESSAGES.contains(&msgid) => {
                Self::traffic_from_frame(link, frame, utc_ns).and_then(Result::ok)
            }
            _ => None,
        }
    }

    /// The traffic input of a frame of [`traffic_wire::MESSAGES`]: `None` for another message
    /// or one that says nothing usable (no fix yet), a refusal for an impossible value.
    pub fn traffic_from_frame(
        link: LinkId,
        frame: &Frame<'_>,
        utc_ns: i64,
    ) -> Option<Result<MonitorInput, TrafficReject>> {
        let read = traffic_wire::read_payload(frame.msgid, frame.payload)?;
        Some(read.map(|message| MonitorInput::Traffic {
            link,
            sender: Some((frame.sysid, frame.compid)),
            utc_ns,
            message: Box::new(message),
        }))
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
                fields: record.fields().as_ref().and_then(heartbeat_fields),
                seq: record.seq,
                src: record.src.as_deref().map(Into::into),
            })),
            // Without its fields (a receive log written with another `fields` setting) a
            // RADIO_STATUS says nothing.
            RADIO_STATUS | RADIO => {
                Ok(record
                    .fields()
                    .as_ref()
                    .and_then(radio_status_fields)
                    .map(|report| MonitorInput::RadioStatus {
                        link,
                        sysid: record.sysid,
                        compid: record.compid,
                        utc_ns,
                        report,
                    }))
            }
            SYSTEM_TIME => {
                let fields = record.fields();
                let fields = fields.as_ref();
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
            // Without its fields (a receive log written with another `fields` setting) a
            // traffic or position receipt says nothing; an impossible value was refused live
            // and is refused again.
            msgid if traffic_wire::MESSAGES.contains(&msgid) => Ok(record
                .fields()
                .as_ref()
                .and_then(|f| traffic_wire::read(msgid, f))
                .and_then(Result::ok)
                .map(|message| MonitorInput::Traffic {
                    link,
                    sender: Some((record.sysid, record.compid)),
                    utc_ns,
                    message: Box::new(message),
                })),
            _ => Ok(None),
        }
    }

    /// The same input, as received on `link`.
    pub fn on_link(mut self, link: LinkId) -> MonitorInput {
        match &mut self {
            MonitorInput::Heartbeat { link: l, .. }
            | MonitorInput::SystemTime { link: l, .. }
            | MonitorInput::RadioStatus { link: l, .. }
            | MonitorInput::Traffic { link: l, .. } => *l = link,
        }
        self
    }

    pub fn link(&self) -> LinkId {
        match *self {
            MonitorInput::Heartbeat { link, .. }
            | MonitorInput::SystemTime { link, .. }
            | MonitorInput::RadioStatus { link, .. }
            | MonitorInput::Traffic { link, .. } => link,
        }
    }

    pub fn utc_ns(&self) -> i64 {
        match *self {
            MonitorInput::Heartbeat { utc_ns, .. }
            | MonitorInput::SystemTime { utc_ns, .. }
            | MonitorInput::RadioStatus { utc_ns, .. }
            | MonitorInput::Traffic { utc_ns, .. } => utc_ns,
        }
    }
}

/// Every receipt, as the per-frame accounting sees it: what redundant links deliver
/// ([`super::delivery`]), message rates ([`super::streams`]) and a second sender's sequence
/// ([`super::conflict`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSeen {
    pub link: LinkId,
    pub sysid: u8,
    pub compid: u8,
    pub msgid: u32,
    pub name: &'static str,
    pub seq: u8,
    pub utc_ns: i64,
    /// When the frame continued a second run of sequence numbers on its link: (the first
    /// run's last number, this one).
    pub interleaved: Option<[u8; 2]>,
}

impl FrameSeen {
    /// The frame as the link's sequence tracker classified it.
    pub fn classified(
        link: LinkId,
        frame: &Frame<'_>,
        utc_ns: i64,
        outcome: SeqOutcome,
        tracker: &SequenceTracker,
    ) -> FrameSeen {
        FrameSeen {
            link,
            sysid: frame.sysid,
            compid: frame.compid,
            msgid: frame.msgid,
            name: frame.name,
            seq: frame.seq,
            utc_ns,
            interleaved: tracker.interleaved_runs(
                (link, frame.sysid, frame.compid),
                frame.seq,
                outcome,
            ),
        }
    }
}

/// A RADIO_STATUS payload from a receive-log line's `fields`, when every field is there.
fn radio_status_fields(fields: &serde_json::Value) -> Option<fields::RadioStatus> {
    let get = |k: &str| fields.get(k).and_then(|v| v.as_u64());
    let byte = |k: &str| get(k).and_then(|v| u8::try_from(v).ok());
    let word = |k: &str| get(k).and_then(|v| u16::try_from(v).ok());
    Some(fields::RadioStatus {
        rxerrors: word("rxerrors")?,
        fixed: word("fixed")?,
        rssi: byte("rssi")?,
        remrssi: byte("remrssi")?,
        txbuf: byte("txbuf")?,
        noise: byte("noise")?,
        remnoise: byte("remnoise")?,
    })
}

/// A HEARTBEAT's payload from a receive-log line's `fields`, when every field is there.
fn heartbeat_fields(fields: &serde_json::Value) -> Option<fields::Heartbeat> {
    let get = |k: &str| fields.get(k).and_then(|v| v.as_u64());
    let byte = |k: &str| get(k).and_then(|v| u8::try_from(v).ok());
    Some(fields::Heartbeat {
        custom_mode: u32::try_from(get("custom_mode")?).ok()?,
        mav_type: byte("type")?,
        autopilot: byte("autopilot")?,
        base_mode: byte("base_mode")?,
        system_status: byte("system_status")?,
        mavlink_version: byte("mavlink_version")?,
    })
}

/// What the monitor tests share: whole seconds from a fixed start, and bare heartbeats.
#[cfg(test)]
pub mod test_support {
    use super::MonitorInput;
    use crate::link::LinkId;

    pub const S: i64 = 1_000_000_000;
    pub const T0: i64 = 1_790_000_000 * S;

    pub fn hb(link: usize, sysid: u8, utc_ns: i64) -> MonitorInput {
        MonitorInput::bare_heartbeat(LinkId::new(link).unwrap(), sysid, 1, utc_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_log_heartbeat_carries_its_fields_when_written() {
        let line = r#"{"recv_utc":"2026-09-24T14:32:03.912Z","mono_ns":1,"link":"radio1","sysid":4,"compid":1,"msgid":0,"msg":"HEARTBEAT","seq":17,"len":9,"ver":2,"fields":{"type":2,"autopilot":3,"base_mode":81,"custom_mode":5,"system_status":4,"mavlink_version":3}}"#;
        let record: ReceiptRecord = serde_json::from_str(line).unwrap();
        let Ok(Some(MonitorInput::Heartbeat { fields, .. })) =
            MonitorInput::from_record(LinkId::FIRST, &record, 0)
        else {
            panic!("not a heartbeat input");
        };
        let f = fields.unwrap();
        assert_eq!(
            (f.mav_type, f.autopilot, f.base_mode, f.custom_mode),
            (2, 3, 81, 5)
        );
        let bare: ReceiptRecord =
            serde_json::from_str(&line.replace(r#","fields":{"type":2,"autopilot":3,"base_mode":81,"custom_mode":5,"system_status":4,"mavlink_version":3}"#, "")).unwrap();
        assert!(matches!(
            MonitorInput::from_record(LinkId::FIRST, &bare, 0),
            Ok(Some(MonitorInput::Heartbeat { fields: None, .. }))
        ));
    }
}
