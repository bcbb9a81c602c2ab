//! systemd's notify protocol: READY=1 once links and files are up, STATUS= with a one-line
//! summary, WATCHDOG=1 from the pipeline loop itself (so a wedged pipeline stops the pings and
//! systemd restarts it, while a merely busy one keeps pinging), STOPPING=1 on shutdown. Outside
//! systemd (no `NOTIFY_SOCKET`) every call does nothing.

use sd_notify::NotifyState;
use std::time::{Duration, Instant};

pub struct Notifier {
    watchdog: Option<Duration>,
    last_ping: Option<Instant>,
    last_status: String,
}

impl Notifier {
    pub fn from_env() -> Self {
        Self {
            watchdog: sd_notify::watchdog_enabled(),
            last_ping: None,
            last_status: String::new(),
        }
    }

    fn send(&self, state: &[NotifyState]) {
        if let Err(e) = sd_notify::notify(state) {
            tracing::debug!(error = %e, "sd_notify");
        }
    }

    pub fn ready(&self) {
        self.send(&[NotifyState::Ready]);
    }

    pub fn stopping(&self) {
        self.send(&[NotifyState::Stopping]);
    }

    /// Sends STATUS= when the text changed.
    pub fn status(&mut self, text: &str) {
        if text != self.last_status {
            self.send(&[NotifyState::Status(text)]);
            self.last_status = text.to_string();
        }
    }

    /// Pings the watchdog when a quarter of its interval has passed since the last ping.
    pub fn watchdog_tick(&mut self) {
        let Some(interval) = self.watchdog else {
            return;
        };
        if self.last_ping.is_none_or(|t| t.elapsed() >= interval / 4) {
            self.send(&[NotifyState::Watchdog]);
            self.last_ping = Some(Instant::now());
        }
    }
}
