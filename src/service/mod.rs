//! The service shell that `run` (the receiver) and `range` (the range view) share, so the two
//! cannot drift in how they behave under systemd (`Type=notify`, `WatchdogSec=`,
//! `TimeoutStopSec=`):
//!
//! - [`Service`]: the signals, installed before anything is brought up; `READY=1` once the verb
//!   says its inputs are open; on SIGTERM or SIGINT, `STOPPING=1`, the shutdown broadcast to
//!   every task and the stop's one deadline ([`stop::Stop`]), within which the verb stops in two
//!   phases (what feeds the files, then the events and the files).
//! - [`notify::Notifier`]: systemd's notify protocol, and the judging loop's own `WATCHDOG=1`
//!   and `STATUS=`: the loop that judges gaps pings, so a stalled loop stops the pings and
//!   systemd restarts the service.
//! - [`files`]: what both bring up alike (rotating files under the data folder, the events sink
//!   and its `receiver` start event); [`events::EventSink`], the fan-out every event goes
//!   through.
//! - [`run_service`]: the runtime a service runs on, and its bounded end.
//!
//! What the `STATUS=` line says is each verb's pure function of its state
//! (`pipeline::snapshot::summary` for `run`, `range::status_line` for `range`). Outside systemd
//! (no `NOTIFY_SOCKET`) the notify calls do nothing; everything else is the same.

pub mod events;
pub mod files;
pub mod notify;
pub mod stop;

use anyhow::Context;
use notify::Notifier;
use std::future::Future;
use stop::{Stop, RUNTIME_EXIT, STOP_BUDGET};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::watch;

/// What a signal asks of a running service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// SIGTERM (systemd's stop) or SIGINT (Ctrl-C): stop, in two phases.
    Stop,
    /// SIGHUP (`systemctl reload`, logrotate): close the files and open new ones.
    Reopen,
}

/// A running service: its signals, its notifier, and the shutdown every task watches.
pub struct Service {
    signals: Signals,
    notifier: Notifier,
    shutdown: watch::Sender<bool>,
}

impl Service {
    /// Installs the signal handlers first, so a stop asked while the service comes up is not
    /// lost: it is acted on at the first wait (see [`Service::unless_stopped`] for a slow one).
    pub fn start() -> anyhow::Result<Service> {
        Ok(Service {
            signals: Signals::install()?,
            notifier: Notifier::from_env(),
            shutdown: watch::channel(false).0,
        })
    }

    /// What every task watches: `true` once the stop has begun.
    pub fn shutdown(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// The judging loop's own notifier: it pings the watchdog and sends `STATUS=` from the loop
    /// itself, so that a loop that stalls stops the pings (and a busy one keeps them).
    pub fn loop_notifier(&self) -> Notifier {
        Notifier::from_env()
    }

    /// `READY=1`: the inputs are open (links bound, NATS consumers made) and the files too.
    pub fn ready(&self) {
        self.notifier.ready();
    }

    /// The next signal's request. Cancel-safe, so it can sit in a `select!` with the work.
    pub async fn next(&mut self) -> Asked {
        self.signals.next().await
    }

    /// `work` (a slow part of the bring-up, such as connecting to a NATS server that is not
    /// there yet), unless a stop is asked first: `None` then. SIGHUP meanwhile has nothing to
    /// reopen and is ignored.
    pub async fn unless_stopped<T>(&mut self, work: impl Future<Output = T>) -> Option<T> {
        tokio::pin!(work);
        loop {
            tokio::select! {
                done = &mut work => return Some(done),
                asked = self.signals.next() => if asked == Asked::Stop {
                    return None;
                },
            }
        }
    }

    /// The stop begins: `STOPPING=1`, every task told, and the one deadline every stage of the
    /// stop waits against.
    pub fn begin_stop(&self) -> Stop {
        self.notifier.stopping();
        self.shutdown.send_replace(true);
        Stop::begin(STOP_BUDGET)
    }
}

/// The signals a service listens to, installed once at start so none is missed between waits.
struct Signals {
    terminate: Signal,
    interrupt: Signal,
    hangup: Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Self> {
        let install = |kind: SignalKind, name: &str| {
            signal(kind).with_context(|| format!("cannot listen for {name}"))
        };
        Ok(Signals {
            terminate: install(SignalKind::terminate(), "SIGTERM")?,
            interrupt: install(SignalKind::interrupt(), "SIGINT")?,
            hangup: install(SignalKind::hangup(), "SIGHUP")?,
        })
    }

    async fn next(&mut self) -> Asked {
        tokio::select! {
            _ = self.terminate.recv() => Asked::Stop,
            _ = self.interrupt.recv() => Asked::Stop,
            _ = self.hangup.recv() => Asked::Reopen,
        }
    }
}

/// Runs a service (`run`, `range`) on its own multi-thread runtime to the end of its stop,
/// then ends the runtime without waiting past [`RUNTIME_EXIT`] for tasks it gave up on (a
/// plain drop would wait for a hung blocking task for ever).
pub fn run_service(service: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the runtime: {e}"))?;
    let outcome = runtime.block_on(service);
    runtime.shutdown_timeout(RUNTIME_EXIT);
    outcome
}
