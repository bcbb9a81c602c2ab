//! The daemon: a thin shell of tasks around the pure core. Link tasks (UDP, serial, TCP client
//! and server) stamp and queue bytes; each link's scanner thread records them and hands copies
//! of the frames to the forward outputs ([`forward`]); one pipeline task owns the monitors;
//! writer threads own the files. Shutdown is
//! two-phase: SIGTERM stops the links, then the pipeline drains what they sent, then the writers
//! write and fsync everything and the process exits 0, all within one deadline inside the unit's
//! `TimeoutStopSec` ([`shutdown`]): a stage that hangs is given up by name and the exit is 1.

pub mod clock;
pub mod events;
pub mod forward;
pub mod input;
pub mod kernel_clock;
pub mod link_queue;
pub mod notify;
pub mod pipeline;
pub mod retention;
pub mod scan;
pub mod serial;
pub mod serial_latency;
pub mod shutdown;
pub mod tcp;
pub mod tcp_client;
pub mod tcp_listen;
pub mod udp;

use crate::config::{Config, LinkTransport};
use crate::link::LinkId;
use crate::monitor::event::{ReceiverKind, ReceiverState};
use crate::monitor::{Event, ReceiverEvent, UtcTime};
use crate::pipeline::{PipelineCore, PipelineSettings};
use crate::recorder::{LinkRecorder, RecorderSettings};
use crate::sink::webhook::Webhook;
use crate::sink::{spawn_writer, FileSet, RotatingFile, WriterHandle, EVENTS, RECEIVE_LOG, TLOG};
use anyhow::Context;
use events::EventSink;
use link_queue::{link_queue, LinkShared};
use pipeline::{Pipeline, Sinks};
use shutdown::{Stop, FILE_CLOSE_RESERVE, STOP_BUDGET};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch, Notify};

/// Scanner batches waiting for the pipeline (each at most about 1 MiB of output). When the
/// pipeline falls behind, scanners wait, and their links' byte-bounded queues take the rest.
const BATCH_QUEUE: usize = 64;
/// Events from outside the links (the NATS connection's ups and downs): a few a minute at most.
const SIDE_EVENTS_QUEUE: usize = 64;

pub async fn run(config: Config) -> anyhow::Result<()> {
    let started_utc_ns = clock::utc_ns();

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (batch_tx, batch_rx) = mpsc::channel(BATCH_QUEUE);
    let recorder_settings = RecorderSettings {
        fields_for: config.fields_for.clone(),
        signing_keys: config.signing.keys.clone(),
        reject_bad_signatures: config.signing.reject_bad,
        capture_tlog: config.tlog,
        capture_frames: false,
    };
    // The forward outputs first: their TCP listeners bind now (a port in use is a clear,
    // immediate error), and every scanner is handed the outputs that take its link's frames.
    let forwards = forward::start(&config.forwards, &shutdown_rx)?;
    let mut link_tasks = Vec::new();
    let mut scanners = Vec::new();
    let mut link_shares = Vec::new();
    // Bind every UDP socket and TCP listener before anything runs: a port in use is a clear,
    // immediate error.
    for (id, link) in LinkId::all(config.links.len()).zip(&config.links) {
        let shared = LinkShared::new(link.queue_bytes);
        let (queue, queue_rx) = link_queue(shared.clone());
        let taps = forwards.taps.for_link(id);
        let recorder = LinkRecorder::new(
            id,
            &link.name,
            RecorderSettings {
                capture_frames: !taps.is_empty(),
                ..recorder_settings.clone()
            },
        );
        scanners.push(
            scan::spawn(
                recorder,
                &link.name,
                queue_rx,
                shared.clone(),
                batch_tx.clone(),
                taps,
            )
            .with_context(|| format!("link {}: cannot start its scanner", link.name))?,
        );
        link_shares.push(shared);
        match &link.kind {
            LinkTransport::Udp {
                bind,
                allow,
                rcvbuf_bytes,
            } => {
                let (socket, rcvbuf) = udp::bind(*bind, *rcvbuf_bytes)
                    .with_context(|| format!("link {}: cannot listen on udp {bind}", link.name))?;
                let local = socket
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                tracing::info!(link = %link.name, %local, rcvbuf_bytes = rcvbuf, "listening");
                if (rcvbuf as u64) < *rcvbuf_bytes {
                    tracing::warn!(
                        link = %link.name,
                        asked = rcvbuf_bytes,
                        got = rcvbuf,
                        "the kernel capped the socket receive buffer (net.core.rmem_max); bursts past it are dropped by the kernel and counted"
                    );
                }
                link_tasks.push(tokio::spawn(udp::run(
                    link.name.clone(),
                    socket,
                    allow.clone(),
                    queue,
                    shutdown_rx.clone(),
                    #[cfg(feature = "testing")]
                    std::env::var_os("FOXBORNE_TEST_STALL_UDP_FILE").map(std::path::PathBuf::from),
                )));
            }
            LinkTransport::Serial {
                path,
                baud,
                flow_control,
            } => {
                let settings = serial::SerialSettings {
                    path: path.clone(),
                    baud: baud.clone(),
                    flow_control: *flow_control,
                };
                link_tasks.push(tokio::spawn(serial::run(
                    link.name.clone(),
                    settings,
                    queue,
                    shutdown_rx.clone(),
                )));
            }
            LinkTransport::TcpClient { peer } => {
                tracing::info!(link = %link.name, %peer, "connecting");
                link_tasks.push(tokio::spawn(tcp_client::run(
                    link.name.clone(),
                    peer.clone(),
                    queue,
                    shutdown_rx.clone(),
                )));
            }
            LinkTransport::TcpListen {
                bind,
                allow,
                max_peers,
            } => {
                let listener = tcp_listen::bind(*bind)
                    .with_context(|| format!("link {}: cannot listen on tcp {bind}", link.name))?;
                let local = listener
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                tracing::info!(link = %link.name, %local, "listening");
                link_tasks.push(tokio::spawn(tcp_listen::run(
                    link.name.clone(),
                    listener,
                    allow.clone(),
                    *max_peers,
                    queue,
                    shutdown_rx.clone(),
                )));
            }
        }
    }
    drop(batch_tx);

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

    let fsync = Duration::from_secs_f64(config.fsync_interval_s);
    // One rotating file set under <data_dir>/<folder>, with its own writer thread.
    let open_stream = |set: FileSet| -> anyhow::Result<WriterHandle> {
        let dir = config.data_dir.join(set.folder);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let file = RotatingFile::new(
            &dir,
            set.prefix,
            set.ext,
            config.rotate_size_bytes,
            set.framing,
        );
        Ok(spawn_writer(
            set.folder,
            file,
            fsync,
            config.buffer_bytes,
            clock::utc_ns,
        )?)
    };
    let receive = open_stream(RECEIVE_LOG)?;
    let tlog = if config.tlog {
        Some(open_stream(TLOG)?)
    } else {
        None
    };
    let events_file = open_stream(EVENTS)?;
    let webhooks = config
        .webhooks
        .iter()
        .map(Webhook::spawn)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let events = EventSink {
        file: events_file,
        sse: face.events,
        webhooks,
        history: face.history,
        filing_clock: clock::utc_ns,
    };
    events.emit(&Event::from(ReceiverEvent {
        utc: UtcTime(started_utc_ns),
        kind: ReceiverKind,
        state: ReceiverState::Start,
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        message: Some(format!("config {}", config.file.display())),
        detail: Some(config.effective()),
    }));
    let link_count = link_shares.len();
    let pipeline = Pipeline {
        core: PipelineCore::new(PipelineSettings {
            watch: config.watch_settings(),
            links: config.links.iter().map(|l| l.name.clone()).collect(),
            started_utc_ns,
        }),
        sinks: Sinks {
            receive,
            tlog,
            events,
        },
        links: link_shares,
        published: face.status,
        notifier: notify::Notifier::from_env(),
        #[cfg(feature = "testing")]
        stall_file: std::env::var_os("FOXBORNE_TEST_STALL_FILE").map(std::path::PathBuf::from),
    };
    let (side_events_tx, side_events_rx) = mpsc::channel(SIDE_EVENTS_QUEUE);
    let retention_task = config.retention.is_set().then(|| {
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
            pipeline.sinks.receive.stats.clone(),
            side_events_tx,
            shutdown_rx.clone(),
        )),
        _ => None,
    };
    let reopen = Arc::new(Notify::new());
    let pipeline_task = tokio::spawn(pipeline.run(batch_rx, side_events_rx, reopen.clone()));

    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    tracing::info!(config = %config.file.display(), data_dir = %config.data_dir.display(), links = link_count, "receiver started");
    notify::Notifier::from_env().ready();
    loop {
        tokio::select! {
            _ = sigterm.recv() => break,
            _ = sigint.recv() => break,
            _ = sighup.recv() => reopen.notify_one(),
        }
    }
    tracing::info!("stopping: links first, then draining to disk");
    notify::Notifier::from_env().stopping();
    let _ = shutdown_tx.send(true);
    let mut stop = Stop::begin(STOP_BUDGET);
    stop.drain("links", futures_util::future::join_all(link_tasks))
        .await;
    // The receive tasks have ended and dropped their queues: each scanner finishes what is
    // queued, hands it over and ends; then the pipeline, with no scanner left, drains.
    stop.drain(
        "scanners",
        futures_util::future::join_all(
            scanners
                .into_iter()
                .map(|scanner| tokio::task::spawn_blocking(move || scanner.join())),
        ),
    )
    .await;
    // The scanners have handed over their last frames: each forward sends what it holds.
    stop.drain("forwards", forwards.done).await;
    if let Some(task) = retention_task {
        stop.drain("retention", task).await;
    }
    // The pipeline owns the files' handles: without it they cannot be closed in order, so
    // it gets everything but the files' own reserve.
    let Some(pipeline) = stop
        .wait("pipeline", FILE_CLOSE_RESERVE, pipeline_task)
        .await
    else {
        anyhow::bail!(
            "the pipeline did not drain within the stop budget; receipts still queued may be lost"
        );
    };
    let pipeline = pipeline.context("pipeline task failed")?;
    if let Some(publisher) = publisher {
        stop.drain("publisher", publisher).await;
    }
    stop.drain("http", face.task).await;
    let stats = pipeline.sinks.receive.stats.clone();
    let Sinks {
        receive,
        tlog,
        events,
    } = pipeline.sinks;
    let lines_written = stats
        .lines_written
        .load(std::sync::atomic::Ordering::Relaxed);
    shutdown::close_events(
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
        }),
    )
    .await;
    let written = stats
        .lines_written
        .load(std::sync::atomic::Ordering::Relaxed);
    let dropped = stats
        .dropped_lines
        .load(std::sync::atomic::Ordering::Relaxed);
    let lost_at_close = stats
        .dropped_at_close
        .load(std::sync::atomic::Ordering::Relaxed);
    tracing::info!(lines_written = written, dropped, "receiver stopped");
    // Drops while running were reported as `dropped` events; receipts still unwritten at the
    // end (the disk never came back) make the stop itself a failure.
    if lost_at_close > 0 {
        anyhow::bail!("{lost_at_close} receipts could not be written before exit (see the log for the write errors)");
    }
    stop.finish()?;
    Ok(())
}
