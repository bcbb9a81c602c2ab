//! The ground's telemetry_gap findings, from `analyze`'s replay: the same watch (gap detector and
//! latency estimator) the daemon and `analyze` run, clocked by the recorded times. This file is
//! the one place `sortie` calls it, so when `analyze` changes shape only this file follows.

use crate::analyze::Replay;
use crate::monitor::{Event, MonitorInput, WatchSettings};

/// Receipts in, the watch's findings out, in the order `analyze` gives them.
pub struct GapReplay {
    replay: Replay,
}

impl GapReplay {
    pub fn new(settings: WatchSettings) -> Self {
        GapReplay {
            replay: Replay::new(settings),
        }
    }

    /// One receipt on `link`: what fell due before it, then what it settles.
    pub fn receipt(&mut self, input: &MonitorInput, link: &str) -> Vec<Event> {
        self.replay.receipt(input.clone(), link)
    }

    /// The end of the record: what is due at its last receipt (a gap still open stays open).
    pub fn finish(&mut self) -> Vec<Event> {
        self.replay.finish()
    }
}
