//! The daemon: a thin shell of tasks around the pure core. Link tasks (UDP, serial) stamp and
//! forward bytes; one pipeline task owns the recorder; writer threads own the files. Shutdown is
//! two-phase: SIGTERM stops the links, then the pipeline drains what they sent, then the writers
//! write and fsync everything and the process exits 0.

pub mod clock;
pub mod events;
pub mod input;
pub mod kernel_clock;
pub mod notify;
pub mod pipeline;
pub mod serial;
pub mod status;
pub mod udp;

use crate::config::{Config, LinkKind};
use crate::http::{HttpState, Published};
use crate::monitor::event::{ReceiverKind, ReceiverState};
use crate::monitor::{ClockWatch, Event, GapConfig, LatencyConfig, ReceiverEvent, Utc, Watch};
use crate::recorder::{Recorder, RecorderSettings};
use crate::sink::rotating::Framing;
use crate::sink::webhook::{Endpoint, Webhook};
use crate::sink::{spawn_writer, RotatingFile, WriterHandle};
use anyhow::Context;
use events::EventSink;
use pipeline::{LinkStatus, Pipeline, Sinks};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch, Notify};

/// Link input queued between the link tasks and the pipeline. Bounded: when the pipeline falls
/// behind, UDP datagrams wait in the socket's (large) kernel buffer instead.
const INPUT_QUEUE: usize = 8192;

pub async fn run(config: Config) -> anyhow::Result<()> {
    let started_utc_ns = clock::utc_ns();

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let (input_tx, input_rx) = mpsc::channel(INPUT_QUEUE);
    let mut link_tasks = Vec::new();
    // Bind every UDP socket before anything runs: a port in use is a clear, immediate error.
    for (i, link) in config.links.iter().enumerate() {
        let idx = i as u16;
        match &link.kind {
            LinkKind::Udp { bind, allow } => {
                let socket = udp::bind(*bind)
                    .with_context(|| format!("link {}: cannot listen on udp {bind}", link.name))?;
                let local = socket
                    .local_addr()
                    .map(|a| a.to_string())
                    .unwrap_or_default();
                tracing::info!(link = %link.name, %local, "listening");
                link_tasks.push(tokio::spawn(udp::run(
                    idx,
                    link.name.clone(),
                    socket,
                    allow.clone(),
                    input_tx.clone(),
                    shutdown_rx.clone(),
                )));
            }
            LinkKind::Serial {
                path,
                baud,
                flow_control,
            } => {
                let settings = serial::SerialSettings {
                    path: path.clone(),
                    baud: *baud,
                    flow_control: *flow_control,
                };
                link_tasks.push(tokio::spawn(serial::run(
                    idx,
                    link.name.clone(),
                    settings,
                    input_tx.clone(),
                    shutdown_rx.clone(),
                )));
            }
        }
    }
    drop(input_tx);

    let http_listener = tokio::net::TcpListener::bind(config.http_listen)
        .await
        .with_context(|| format!("http.listen: cannot listen on {}", config.http_listen))?;
    let http_local = http_listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!(local = %http_local, "http listening (/events /status /metrics /healthz)");
    let (sse, _) = tokio::sync::broadcast::channel(1024);
    let published = Arc::new(std::sync::Mutex::new(Published::default()));
    let http_task = tokio::spawn(crate::http::serve(
        http_listener,
        HttpState {
            events: sse.clone(),
            published: published.clone(),
            shutdown: shutdown_rx.clone(),
        },
    ));

    let fsync = Duration::from_secs_f64(config.fsync_interval_s);
    // One rotating file set under <data_dir>/<folder>, with its own writer thread.
    let open_stream =
        |folder: &str, prefix: &str, ext: &str, framing: Framing| -> anyhow::Result<WriterHandle> {
            let dir = config.data_dir.join(folder);
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let file = RotatingFile::new(&dir, prefix, ext, config.rotate_size_bytes, framing);
            Ok(spawn_writer(
                folder,
                file,
                fsync,
                config.buffer_bytes,
                clock::utc_ns,
            )?)
        };
    let receive = open_stream("receive", "receive", "jsonl", Framing::Lines)?;
    let tlog = if config.tlog {
        Some(open_stream("tlog", "receive", "tlog", Framing::Whole)?)
    } else {
        None
    };
    let events_file = open_stream("events", "events", "jsonl", Framing::Lines)?;
    let webhook = config.webhook_url.as_deref().map(|url| {
        let endpoint = Endpoint::parse(url).expect("validated in config");
        Webhook::spawn(endpoint, config.webhook_queue)
    });
    let events = EventSink {
        file: events_file,
        sse,
        webhook,
    };
    events.emit(&Event::from(ReceiverEvent {
        utc: Utc(started_utc_ns),
        kind: ReceiverKind,
        state: ReceiverState::Start,
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        message: Some(format!("config {}", config.file.display())),
        detail: Some(config.effective()),
    }));
    let mut gap = GapConfig::with_threshold_s(config.gap.threshold_s);
    gap.ignore_sysids = config.gap.ignore_sysids.iter().copied().collect();
    gap.vehicles = config.gap.vehicles.clone();
    let latency = LatencyConfig {
        window_ns: (config.latency.window_s * 1e9) as i64,
        ..LatencyConfig::default()
    };
    let watch = Watch::new(
        gap,
        latency,
        config.latency.report_interval_s,
        started_utc_ns,
    );
    let names: Vec<String> = config.links.iter().map(|l| l.name.clone()).collect();
    let recorder = Recorder::new(
        &names,
        RecorderSettings {
            fields_for: config.fields_for.clone(),
            signing_keys: config.signing_keys.clone(),
            reject_bad_signatures: config.reject_bad_signatures,
            capture_tlog: config.tlog,
        },
    );
    let pipeline = Pipeline {
        recorder,
        watch,
        clock_watch: ClockWatch::new(),
        sinks: Sinks {
            receive,
            tlog,
            events,
        },
        links: vec![LinkStatus::default(); names.len()],
        published,
        started_utc_ns,
        receipts_by_message: Default::default(),
        notifier: notify::Notifier::from_env(),
        last_tick_ns: started_utc_ns,
        stall_file: std::env::var_os("FOXBORNE_TEST_STALL_FILE").map(std::path::PathBuf::from),
    };
    let reopen = Arc::new(Notify::new());
    let pipeline_task = tokio::spawn(pipeline.run(input_rx, reopen.clone()));

    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    tracing::info!(config = %config.file.display(), data_dir = %config.data_dir.display(), links = names.len(), "receiver started");
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
    for task in link_tasks {
        let _ = task.await;
    }
    let pipeline = pipeline_task.await.context("pipeline task failed")?;
    let _ = http_task.await;
    let stats = pipeline.sinks.receive.stats.clone();
    let Sinks {
        receive,
        tlog,
        events,
    } = pipeline.sinks;
    events.emit(&Event::from(ReceiverEvent {
        utc: Utc(clock::utc_ns()),
        kind: ReceiverKind,
        state: ReceiverState::Stop,
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        message: Some(format!(
            "{} receipts written",
            stats
                .lines_written
                .load(std::sync::atomic::Ordering::Relaxed)
        )),
        detail: None,
    }));
    tokio::task::spawn_blocking(move || {
        receive.close();
        if let Some(t) = tlog {
            t.close();
        }
        events.file.close();
    })
    .await?;
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
    Ok(())
}
