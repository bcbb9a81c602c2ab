//! The daemon: a thin shell of tasks around the pure core. Link tasks (UDP, serial) stamp and
//! forward bytes; one pipeline task owns the recorder; writer threads own the files. Shutdown is
//! two-phase: SIGTERM stops the links, then the pipeline drains what they sent, then the writers
//! write and fsync everything and the process exits 0.

pub mod clock;
pub mod input;
pub mod pipeline;
pub mod serial;
pub mod udp;

use crate::config::{Config, LinkKind};
use crate::recorder::{Recorder, RecorderSettings};
use crate::sink::rotating::Framing;
use crate::sink::{spawn_writer, RotatingFile};
use anyhow::Context;
use pipeline::{LinkStatus, Pipeline, Sinks};
use std::sync::Arc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, watch, Notify};

/// Link input queued between the link tasks and the pipeline. Bounded: when the pipeline falls
/// behind, UDP datagrams wait in the socket's (large) kernel buffer instead.
const INPUT_QUEUE: usize = 8192;

pub async fn run(config: Config) -> anyhow::Result<()> {
    let receive_dir = config.data_dir.join("receive");
    std::fs::create_dir_all(&receive_dir)
        .with_context(|| format!("cannot create {}", receive_dir.display()))?;

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

    let fsync = Duration::from_secs_f64(config.fsync_interval_s);
    let receive = spawn_writer(
        "receive",
        RotatingFile::new(
            &receive_dir,
            "receive",
            "jsonl",
            config.rotate_size_bytes,
            Framing::Lines,
        ),
        fsync,
        config.buffer_bytes,
        clock::utc_ns,
    )?;
    let tlog = if config.tlog {
        let dir = config.data_dir.join("tlog");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Some(spawn_writer(
            "tlog",
            RotatingFile::new(
                &dir,
                "receive",
                "tlog",
                config.rotate_size_bytes,
                Framing::Whole,
            ),
            fsync,
            config.buffer_bytes,
            clock::utc_ns,
        )?)
    } else {
        None
    };
    let names: Vec<String> = config.links.iter().map(|l| l.name.clone()).collect();
    let recorder = Recorder::new(
        &names,
        RecorderSettings {
            fields_for: config.field_ids.clone(),
            signing_keys: config.signing_keys.clone(),
            reject_bad_signatures: config.reject_bad_signatures,
            capture_tlog: config.tlog,
        },
    );
    let pipeline = Pipeline {
        recorder,
        sinks: Sinks { receive, tlog },
        links: vec![LinkStatus::default(); names.len()],
    };
    let reopen = Arc::new(Notify::new());
    let pipeline_task = tokio::spawn(pipeline.run(input_rx, reopen.clone()));

    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sighup = signal(SignalKind::hangup())?;
    tracing::info!(config = %config.file.display(), data_dir = %config.data_dir.display(), links = names.len(), "receiver started");
    loop {
        tokio::select! {
            _ = sigterm.recv() => break,
            _ = sigint.recv() => break,
            _ = sighup.recv() => reopen.notify_one(),
        }
    }
    tracing::info!("stopping: links first, then draining to disk");
    let _ = shutdown_tx.send(true);
    for task in link_tasks {
        let _ = task.await;
    }
    let pipeline = pipeline_task.await.context("pipeline task failed")?;
    let stats = pipeline.sinks.receive.stats.clone();
    let Sinks { receive, tlog } = pipeline.sinks;
    tokio::task::spawn_blocking(move || {
        receive.close();
        if let Some(t) = tlog {
            t.close();
        }
    })
    .await?;
    let written = stats
        .lines_written
        .load(std::sync::atomic::Ordering::Relaxed);
    let dropped = stats
        .dropped_lines
        .load(std::sync::atomic::Ordering::Relaxed);
    tracing::info!(lines_written = written, dropped, "receiver stopped");
    if dropped > 0 {
        anyhow::bail!("{dropped} receipts could not be written (see the log for the write errors)");
    }
    Ok(())
}
