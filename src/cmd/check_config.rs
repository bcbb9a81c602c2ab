//! `check-config`: validate a config and the machine it names (devices, folders), print the
//! effective settings as JSON, with `needs`: the memory and descriptors it can use at most (for
//! the unit's `MemoryMax` and `LimitNOFILE`). Warnings (a serial device missing now) go to stderr.

use super::{Exit, DEFAULT_CONFIG};
use crate::config::Config;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CheckConfigArgs {
    /// The receiver config (TOML) to check.
    #[arg(long, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
}

pub fn run(args: CheckConfigArgs) -> anyhow::Result<Exit> {
    let config = Config::load(&args.config)?;
    for warning in config.check_environment()? {
        eprintln!("warning: {warning}");
    }
    let mut out = std::io::stdout().lock();
    let mut effective = config.effective();
    // What the unit's MemoryMax and LimitNOFILE must cover for this config.
    effective["needs"] = serde_json::to_value(config.resource_bounds())?;
    serde_json::to_writer_pretty(&mut out, &effective)?;
    writeln!(out)?;
    Ok(Exit::Success)
}
