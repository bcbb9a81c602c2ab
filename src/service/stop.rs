//! Stopping inside the unit's `TimeoutStopSec=30s`, for `run` and `range` alike. The stop is
//! two-phase: first the work that feeds the files (for `run` the links, scanners, the pipeline,
//! the publisher, the HTTP port; for `range` the consumer's last acknowledgement and the HTTP
//! port) is awaited stage by stage ([`Stop::drain`]), then the events are closed
//! ([`close_events`]: the `receiver` `stop` event, every webhook drained at once, the files
//! fsynced). Every stage waits against one deadline for the whole stop, keeping back what the
//! later stages need, so a task that hangs is given up by name in the log instead of making
//! systemd kill the process while it closes files.

use super::events::EventSink;
use crate::monitor::event::{ReceiverKind, ReceiverState};
use crate::monitor::{Event, ReceiverEvent, UtcTime};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// The whole stop, within `TimeoutStopSec=30s` with room for the runtime's own exit.
pub const STOP_BUDGET: Duration = Duration::from_secs(25);
/// Kept back from every stage before the files for closing them (the last fsync of each).
pub const FILE_CLOSE_RESERVE: Duration = Duration::from_secs(3);
/// The webhooks' share: together, at most this, and never into the files' reserve.
pub const WEBHOOK_STOP_BUDGET: Duration = Duration::from_secs(10);

/// After the stop, what the runtime may still wait for its tasks (one the stop gave up on
/// included) before the process exits anyway.
pub const RUNTIME_EXIT: Duration = Duration::from_secs(2);

/// One stop's deadline, and the stages it gave up on.
#[derive(Debug)]
pub struct Stop {
    deadline: Instant,
    abandoned: Vec<&'static str>,
}

impl Stop {
    pub fn begin(budget: Duration) -> Self {
        Stop {
            deadline: Instant::now() + budget,
            abandoned: Vec::new(),
        }
    }

    /// Time left before the whole stop's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Waits for `work` until the deadline less `reserve` (what the stages after it need); if
    /// it is not done by then, it is given up: logged, remembered, and `None`.
    pub async fn wait<T>(
        &mut self,
        stage: &'static str,
        reserve: Duration,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        let until = self.deadline.checked_sub(reserve).unwrap_or(self.deadline);
        match tokio::time::timeout_at(until, work).await {
            Ok(done) => Some(done),
            Err(_) => {
                tracing::error!(
                    stage,
                    "stopping: gave up waiting, to stay within TimeoutStopSec"
                );
                self.abandoned.push(stage);
                None
            }
        }
    }

    /// [`Stop::wait`] for a stage of the first phase (what feeds the files): it keeps back the
    /// webhooks' share and the files' reserve for the second.
    pub async fn drain<T>(
        &mut self,
        stage: &'static str,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        self.wait(stage, WEBHOOK_STOP_BUDGET + FILE_CLOSE_RESERVE, work)
            .await
    }

    /// The stages given up on, in order.
    #[cfg(test)]
    fn abandoned(&self) -> &[&'static str] {
        &self.abandoned
    }

    /// The stop's outcome: a stage given up on makes it a failure (exit 1), naming them all,
    /// since what that stage held may not have reached the disk or the webhooks.
    pub fn finish(self) -> anyhow::Result<()> {
        if self.abandoned.is_empty() {
            Ok(())
        } else {
            anyhow::bail!(
                "stopped without waiting for: {} (see the log)",
                self.abandoned.join(", ")
            )
        }
    }
}

/// The end of every stop: the receiver's `stop` event, the webhooks drained together within
/// their share of what is left, then the events file closed. Returns how many events no webhook
/// delivered.
pub async fn close_events(stop: &mut Stop, events: EventSink, message: Option<String>) -> u64 {
    events.emit(&Event::from(ReceiverEvent {
        utc: UtcTime((events.filing_clock)()),
        kind: ReceiverKind,
        state: ReceiverState::Stop,
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        message,
        detail: None,
    }));
    let share = WEBHOOK_STOP_BUDGET.min(stop.remaining().saturating_sub(FILE_CLOSE_RESERVE));
    let undelivered: u64 =
        futures_util::future::join_all(events.webhooks.into_iter().map(|hook| hook.finish(share)))
            .await
            .into_iter()
            .sum();
    if undelivered > 0 {
        tracing::warn!(undelivered, "webhook events not delivered before stopping");
    }
    let file = events.file;
    stop.wait(
        "events file",
        Duration::ZERO,
        tokio::task::spawn_blocking(move || file.close()),
    )
    .await;
    undelivered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_stage_that_finishes_is_waited_for_and_one_that_hangs_is_given_up_at_the_deadline() {
        let mut stop = Stop::begin(Duration::from_secs(25));
        let quick = stop
            .wait("links", FILE_CLOSE_RESERVE, async {
                tokio::time::sleep(Duration::from_secs(2)).await;
                7
            })
            .await;
        assert_eq!(quick, Some(7));
        assert_eq!(stop.remaining(), Duration::from_secs(23));

        let hung = stop
            .wait("pipeline", FILE_CLOSE_RESERVE, std::future::pending::<()>())
            .await;
        assert_eq!(hung, None);
        // Given up with the files' reserve still left.
        assert_eq!(stop.remaining(), FILE_CLOSE_RESERVE);
        assert_eq!(stop.abandoned(), ["pipeline"]);

        let last = stop
            .wait("events file", Duration::ZERO, std::future::pending::<()>())
            .await;
        assert_eq!(last, None);
        assert_eq!(stop.remaining(), Duration::ZERO);
        assert_eq!(stop.abandoned(), ["pipeline", "events file"]);
        let failed = stop.finish().unwrap_err().to_string();
        assert!(failed.contains("pipeline, events file"), "{failed}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stage_after_the_deadline_is_given_up_at_once() {
        let mut stop = Stop::begin(Duration::from_secs(1));
        assert_eq!(
            stop.wait(
                "links",
                Duration::from_secs(3),
                std::future::pending::<()>()
            )
            .await,
            None
        );
        assert_eq!(stop.remaining(), Duration::from_secs(1));
        assert_eq!(
            stop.wait("scanners", Duration::ZERO, async { 1 }).await,
            Some(1),
            "work already done is taken even at the deadline"
        );
    }
}
