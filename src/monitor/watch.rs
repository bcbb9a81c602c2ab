//! The watch: gap detector and latency estimator together, fed receipts and asked what is due,
//! so the live pipeline and `analyze` run exactly the same rules. Latency reports are scheduled
//! on the receipts' clock (every `report_interval`, from the first SYSTEM_TIME), so a recording
//! replayed gives its reports at the same instants the live daemon did.

use super::event::Event;
use super::gap::{GapConfig, GapDetector};
use super::heartbeat::HeartbeatTracker;
use super::input::MonitorInput;
use super::latency::{LatencyConfig, LatencyEstimator};
use super::ntp::ClockStatus;
use super::utc::{seconds_to_ns, NANOS_PER_MILLI};

/// Everything the watch is configured with. The daemon and `analyze` both get theirs from
/// [`crate::config::Config::watch_settings`], so offline findings follow the live rules.
#[derive(Debug, Clone)]
pub struct WatchSettings {
    pub gap: GapConfig,
    pub latency: LatencyConfig,
    pub report_interval_s: f64,
}

impl Default for WatchSettings {
    fn default() -> Self {
        Self {
            gap: GapConfig::default(),
            latency: LatencyConfig::default(),
            report_interval_s: 10.0,
        }
    }
}

pub struct Watch {
    pub gap: GapDetector,
    pub latency: LatencyEstimator,
    /// What each system's heartbeats say (mode, status), for the status snapshot.
    pub heartbeats: HeartbeatTracker,
    report_interval_ns: i64,
    next_report_ns: Option<i64>,
}

impl Watch {
    pub fn new(settings: WatchSettings, start_utc_ns: i64) -> Self {
        Self {
            gap: GapDetector::new(settings.gap, start_utc_ns),
            latency: LatencyEstimator::new(settings.latency),
            heartbeats: HeartbeatTracker::default(),
            report_interval_ns: seconds_to_ns(settings.report_interval_s).max(1),
            next_report_ns: None,
        }
    }

    /// Tells the monitors of one receipt; returns the gap events it settles (a `closed`, or an
    /// `open` and `closed` when no poll saw the gap).
    pub fn observe(&mut self, observation: &MonitorInput, link_name: &str) -> Vec<Event> {
        match *observation {
            MonitorInput::Heartbeat {
                sysid,
                compid,
                utc_ns,
                fields,
                ..
            } => {
                if !self.gap.config().ignore_sysids.contains(&sysid) {
                    self.heartbeats.observe(sysid, compid, utc_ns, fields);
                }
                self.gap
                    .on_heartbeat(sysid, link_name, utc_ns)
                    .into_iter()
                    .map(Event::from)
                    .collect()
            }
            MonitorInput::SystemTime {
                sysid,
                utc_ns,
                resolution_ns,
                time_unix_usec,
                time_boot_ms,
                ..
            } => {
                let o = self.latency.observe(
                    sysid,
                    utc_ns,
                    resolution_ns,
                    time_unix_usec,
                    time_boot_ms,
                );
                if o.recorded && self.next_report_ns.is_none() {
                    // On the whole millisecond, so the daemon (nanosecond stamps) and `analyze`
                    // over its receive log (millisecond stamps) report at the same instants
                    // over the same samples.
                    let first_ms = utc_ns - utc_ns.rem_euclid(NANOS_PER_MILLI);
                    self.next_report_ns = Some(first_ms + self.report_interval_ns);
                }
                Vec::new()
            }
        }
    }

    /// The earliest instant something is due: a gap opening or a latency report.
    pub fn next_deadline(&self) -> Option<i64> {
        match (self.gap.next_deadline(), self.next_report_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Everything due at `now_ns`: gaps that opened, and latency reports whose time has come
    /// (stamped at their scheduled instant).
    pub fn poll(&mut self, now_ns: i64, clock: Option<ClockStatus>) -> Vec<Event> {
        let mut events: Vec<Event> = self.gap.poll(now_ns).into_iter().map(Event::from).collect();
        while let Some(due) = self.next_report_ns.filter(|&due| due <= now_ns) {
            events.extend(self.latency.report(due, clock).into_iter().map(Event::from));
            self.next_report_ns = Some(due + self.report_interval_ns);
        }
        events
    }
}
