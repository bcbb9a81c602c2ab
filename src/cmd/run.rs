//! `run`: the daemon. Loads the config (exit 78 when it is bad), starts the runtime, runs until
//! SIGTERM or SIGINT.

use super::{Exit, DEFAULT_CONFIG};
use crate::config::Config;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The receiver config (TOML): links, data_dir, [gap], [http], webhooks.
    #[arg(long, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
}

pub fn run(args: RunArgs) -> anyhow::Result<Exit> {
    let config = Config::load(&args.config)?;
    crate::service::run_service(crate::daemon::run(config))?;
    Ok(Exit::Success)
}
