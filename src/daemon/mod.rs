//! The daemon: a thin shell of tasks around the pure core. A UDP link's thread reads, stamps and
//! scans its datagrams; a stream link's task (serial, TCP client and server) stamps and queues
//! bytes for its scanner thread; either hands copies of the frames to the forward outputs
//! ([`forward`]) and batches to the pipeline, which owns the monitors on a thread of its own;
//! writer threads own the files. It runs in the service shell it shares with `range`
//! ([`crate::service`]): READY=1 once the links are bound and the files open, WATCHDOG=1 and
//! STATUS= from the pipeline loop. Shutdown is two-phase: SIGTERM stops the links, then the
//! pipeline drains what they sent, then the writers write and fsync everything and the process
//! exits 0, all within one deadline inside the unit's `TimeoutStopSec`
//! ([`crate::service::stop`]): a stage that hangs is given up by name and the exit is 1.

pub mod forward;
pub mod held_lines;
pub mod input;
pub mod kernel_clock;
pub mod link_queue;
pub mod links;
pub mod pipeline;
pub mod retention;
pub mod scan;
pub mod serial;
pub mod serial_latency;
pub mod tcp;
pub mod tcp_client;
pub mod tcp_listen;
pub mod udp;

use crate::clock;
use crate::config::Config;
use crate::config::LinkTransport;
use crate::pipeline::{PipelineCore, PipelineSettings};
use crate::service::files::{self, FileSettings};
use crate::service::stop::{self, Stop, FILE_CLOSE_RESERVE};
use crate::service::{Asked, Service};
use crate::sink::{EVENTS, RECEIVE_LOG, TLOG, TRAFFIC_LOG};
use anyhow::Context;
use links::Links;
use pipeline::{Pipeline, Sinks};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

/// Scanner batches waiting for the pipeline (each at most about 1 MiB of output). When the
/// pipeline falls behind, scanners wait, and their links' byte-bounded queues take the rest.
const BATCH_QUEUE: usize = 64;
/// Events from outside the links (the NATS connection's ups and downs): a few a minute at most.
const SIDE_EVENTS_QUEUE: usize = 64;

/// The receiver: brings every task up, runs until SIGTERM or SIGINT (SIGHUP reopens the
/// files), then stops them in order within the stop budget.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let mut service = Service::start()?;
    let started_utc_ns = clock::utc_ns();
    let shutdown_rx = service.shutdown();
    let (batch_tx, batch_rx) = mpsc::channel(BATCH_QUEUE);
    // The forward outputs first: their TCP listeners bind now (a port in use is a clear,
    // immediate error), and every scanner is handed the outputs that take its link's frames.
    let forwards = forward::start(&config.forwards, &shutdown_rx)?;
    let links = Links::start(&config, &forwards.taps, batch_tx, &shutdown_rx)?;

    let publish_stats = config.publish.as_ref().map(|p| {
        Arc::new(crate::publish::PublishStats {
            site: p.site.clone(),
            ..Default::default()
        })
    });
    let face = crate::http::start(
        &config.http,
        started_utc_ns,
        crate::http::Outputs {
            publish: publish_stats.clone(),
            forwards: forwards.stats.clone(),
        },
        shutdown_rx.clone(),
    )
    .await?;

    let files = FileSettings {
        data_dir: &config.data_dir,
        rotate_size_bytes: config.rotate_size_bytes,
        fsync_interval: Duration::from_secs_f64(config.fsync_interval_s),
        buffer_bytes: config.buffer_bytes,
        clock: clock::utc_ns,
    };
    let sinks = Sinks {
        receive: files.open(RECEIVE_LOG)?,
        tlog: config.tlog.then(|| files.open(TLOG)).transpose()?,
        traffic: config
            .links
            .iter()
            .any(|l| matches!(l.kind, LinkTransport::Sbs { .. }))
            .then(|| files.open(TRAFFIC_LOG))
            .transpose()?,
        events: files::open_events(
            &files,
            EVENTS,
            &config.webhooks,
            &face,
            started_utc_ns,
            format!("config {}", config.file.display()),
            config.effective(),
        )?,
    };
    let receive_stats = sinks.receive.stats.clone();
    let pipeline = Pipeline {
        core: PipelineCore::new(PipelineSettings {
            watch: config.watch_settings(),
            links: config.links.iter().map(|l| l.name.clone()).collect(),
            started_utc_ns,
        }),
        sinks,
        links: links.shares.clone(),
        published: face.status,
        notifier: service.loop_notifier(),
        held: Default::default(),
    };
    let (side_events_tx, side_events_rx) = mpsc::channel(SIDE_EVENTS_QUEUE);
    let retention = config.retention.is_set().then(|| {
        tokio::spawn(retention::run(
            config.data_dir.clone(),
            config.retention,
            side_events_tx.clone(),
            shutdown_rx.clone(),
        ))
    });
    let publisher = match (&config.publish, publish_stats) {
        (Some(settings), Some(stats)) => Some(crate::publish::spawn(
            settings.clone(),
            config.data_dir.clone(),
            stats,
            receive_stats,
            side_events_tx,
            shutdown_rx.clone(),
        )),
        _ => None,
    };
    let reopen = Arc::new(Notify::new());
    let running = Running {
        links,
        forwards_done: forwards.done,
        retention,
        pipeline: on_own_thread(
            "pipeline",
            pipeline.run(batch_rx, side_events_rx, reopen.clone()),
        )?,
        publisher,
        http: face.task,
    };

    tracing::info!(config = %config.file.display(), data_dir = %config.data_dir.display(), links = config.links.len(), "receiver started");
    service.ready();
    while service.next().await == Asked::Reopen {
        reopen.notify_one();
    }
    tracing::info!("stopping: links first, then draining to disk");
    running.stop(service.begin_stop()).await
}

/// Runs `work` on an OS thread of its own, on a runtime of one thread, and returns a task that
/// ends with it. For the pipeline, which wakes once for each scanner batch: woken from outside
/// the shared runtime, a task unparks a worker to run it and that worker unparks another to look
/// for more, twice the wake-ups a batch, which at a few hundred batches a second are most of the
/// daemon's CPU.
fn on_own_thread<T: Send + 'static>(
    name: &str,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> anyhow::Result<JoinHandle<T>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .with_context(|| format!("cannot start the {name}'s runtime"))?;
    let (done_tx, done_rx) = oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let _ = done_tx.send(runtime.block_on(work));
        })
        .with_context(|| format!("cannot start the {name} thread"))?;
    Ok(tokio::spawn(async move {
        done_rx
            .await
            .expect("the thread ended without its result, so it panicked")
    }))
}

/// Every task of a running receiver, held for its stop.
struct Running {
    links: Links,
    forwards_done: oneshot::Receiver<()>,
    retention: Option<JoinHandle<()>>,
    pipeline: JoinHandle<Pipeline>,
    publisher: Option<JoinHandle<()>>,
    http: JoinHandle<()>,
}

impl Running {
    /// The two-phase stop, once shutdown has been signalled: what feeds the files is awaited
    /// stage by stage in the order data flows (links, scanners, forwards, the pipeline, the
    /// publisher, the HTTP port), then the events and the files are closed, all against one
    /// deadline ([`Stop`]).
    async fn stop(self, mut stop: Stop) -> anyhow::Result<()> {
        // The receive tasks end and drop their queues; each scanner then finishes what is
        // queued, hands it over and ends; then the pipeline, with no scanner left, drains.
        self.links.stop(&mut stop).await;
        // The scanners have handed over their last frames: each forward sends what it holds.
        stop.drain("forwards", self.forwards_done).await;
        if let Some(task) = self.retention {
            stop.drain("retention", task).await;
        }
        // The pipeline owns the files' handles: without it they cannot be closed in order, so
        // it gets everything but the files' own reserve.
        let Some(pipeline) = stop
            .wait("pipeline", FILE_CLOSE_RESERVE, self.pipeline)
            .await
        else {
            anyhow::bail!(
                "the pipeline did not drain within the stop budget; receipts still queued may be lost"
            );
        };
        let Sinks {
            receive,
            tlog,
            traffic,
            events,
        } = pipeline.context("pipeline task failed")?.sinks;
        if let Some(publisher) = self.publisher {
            stop.drain("publisher", publisher).await;
        }
        stop.drain("http", self.http).await;
        let stats = receive.stats.clone();
        let lines_written = stats.lines_written.load(Ordering::Relaxed);
        stop::close_events(
            &mut stop,
            events,
            Some(format!("{lines_written} receipts written")),
        )
        .await;
        stop.wait(
            "receive log",
            Duration::ZERO,
            tokio::task::spawn_blocking(move || {
                receive.close();
                if let Some(t) = tlog {
                    t.close();
                }
                if let Some(t) = traffic {
                    t.close();
                }
            }),
        )
        .await;
        let written = stats.lines_written.load(Ordering::Relaxed);
        let dropped = stats.dropped_lines.load(Ordering::Relaxed);
        let lost_at_close = stats.dropped_at_close.load(Ordering::Relaxed);
        tracing::info!(lines_written = written, dropped, "receiver stopped");
        // Drops while running were reported as `dropped` events; receipts still unwritten at
        // the end (the disk never came back) make the stop itself a failure.
        if lost_at_close > 0 {
            anyhow::bail!("{lost_at_close} receipts could not be written before exit (see the log for the write errors)");
        }
        stop.finish()
    }
}
