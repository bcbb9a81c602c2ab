//! `analyze FILE...`: findings of recorded receipts as JSON lines (see [`crate::analyze`]).

use super::{Exit, UsageError};
use crate::analyze::{replay_file, Problems, Replay};
use crate::config::Config;
use crate::monitor::WatchSettings;
use anyhow::Context;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Receive logs (receiver JSONL) or ground-station .tlog files, replayed in the order given.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Take the [gap] and [latency] settings from this daemon config (default: the defaults).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Link name for .tlog receipts (default: the file name).
    #[arg(long)]
    pub link: Option<String>,
}

pub fn run(args: AnalyzeArgs) -> anyhow::Result<Exit> {
    if args.files.is_empty() {
        return Err(UsageError("analyze: give at least one receive log or .tlog".into()).into());
    }
    let settings = match &args.config {
        Some(path) => Config::load(path)?.watch_settings(),
        None => WatchSettings::default(),
    };
    let mut replay = Replay::new(settings);
    let mut problems = Problems::default();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut emit = |event: &crate::monitor::Event| writeln!(out, "{}", event.to_json_line());
    for file in &args.files {
        let input =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        let link = args.link.clone().unwrap_or_else(|| file_stem(file));
        replay_file(file, input, &link, &mut replay, &mut problems, &mut emit)?;
    }
    for event in replay.finish() {
        emit(&event)?;
    }
    out.flush()?;
    for p in &problems.0 {
        eprintln!("warning: {p}");
    }
    Ok(Exit::Success)
}

pub(crate) fn file_stem(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default()
}
