//! `range`: the whole range's view, from every site's receipts in NATS JetStream (see
//! `crate::range`). Its config has `data_dir`, `[range] nats_url`, `[gap]`, `[http]` and
//! `[[webhook]]`; a bad one exits 78 naming the key.

use super::Exit;
use crate::config::range::RangeConfig;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RangeArgs {
    /// The range config (TOML): data_dir, [range] nats_url and name, [gap], [http], webhooks.
    #[arg(long, default_value = "/etc/foxborne-receiver/range.toml")]
    pub config: PathBuf,
}

pub fn run(args: RangeArgs) -> anyhow::Result<Exit> {
    let config = RangeConfig::load(&args.config)?;
    crate::service::run_service(crate::range::run(config))?;
    Ok(Exit::Success)
}
