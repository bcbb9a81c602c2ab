//! systemd's notify protocol, for both services: READY=1 once the inputs and files are open,
//! STATUS= with a one-line summary, WATCHDOG=1 from the judging loop itself (the receiver's
//! pipeline, the range's consumer loop: a wedged loop stops the pings and systemd restarts the
//! service, while a merely busy one keeps pinging), STOPPING=1 on shutdown. Outside systemd (no
//! `NOTIFY_SOCKET`) every call does nothing.

use sd_notify::NotifyState;
use std::time::{Duration, Instant};

pub struct Notifier {
    watchdog: Option<Duration>,
    last_ping: Option<Instant>,
    last_status: String,
    /// Fault injection for the watchdog tests (`testing` feature only): while the file
    /// `FOXBORNE_TEST_STALL_FILE` names exists, the loop that pings is wedged in
    /// [`Notifier::watchdog_tick`].
    #[cfg(feature = "testing")]
    stall_file: Option<std::path::PathBuf>,
}

impl Notifier {
    pub fn from_env() -> Self {
        Self {
            watchdog: sd_notify::watchdog_enabled(),
            last_ping: None,
            last_status: String::new(),
            #[cfg(feature = "testing")]
            stall_file: std::env::var_os("FOXBORNE_TEST_STALL_FILE").map(std::path::PathBuf::from),
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

    /// Called by the judging loop on every housekeeping tick: pings the watchdog when a quarter
    /// of its interval has passed since the last ping.
    pub fn watchdog_tick(&mut self) {
        #[cfg(feature = "testing")]
        if let Some(path) = &self.stall_file {
            while path.exists() {
                // Deliberately blocks the calling loop (test fault injection only).
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let Some(interval) = self.watchdog else {
            return;
        };
        if self.last_ping.is_none_or(|t| t.elapsed() >= interval / 4) {
            self.send(&[NotifyState::Watchdog]);
            self.last_ping = Some(Instant::now());
        }
    }
}
