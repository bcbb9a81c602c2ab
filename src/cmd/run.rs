//! `run`: the daemon. Loads the config (exit 78 when it is bad), starts the runtime, runs until
//! SIGTERM or SIGINT.

use super::DEFAULT_CONFIG;
use crate::config::Config;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The receiver config (TOML): links, data_dir, [gap], [http], webhooks.
    #[arg(long, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
}

pub fn run(args: RunArgs) -> anyhow::Result<u8> {
    let config = Config::load(&args.config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(crate::daemon::run(config))?;
    Ok(0)
}
