//! `status`: asks a running daemon (its local HTTP port) for its status snapshot and prints it
//! as a table a person reads at a glance (per vehicle and per link), or as JSON.
//!
//! The address comes from `--addr`, else from the config's `http.listen`, else (no config
//! file) the default `127.0.0.1:9137`; the error says which address was asked.

use super::{Exit, DEFAULT_CONFIG};
use crate::config::Config;
use crate::status::{table, StatusSnapshot};
use anyhow::{bail, Context};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// Where a daemon listens when its config does not say.
pub const DEFAULT_HTTP: &str = "127.0.0.1:9137";

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Read `http.listen` and `http.token` from this config (when it exists).
    #[arg(long, default_value = DEFAULT_CONFIG)]
    pub config: PathBuf,
    /// The daemon's HTTP address, instead of the config's.
    #[arg(long)]
    pub addr: Option<String>,
    /// Print the raw JSON snapshot.
    #[arg(long)]
    pub json: bool,
}

/// The address to ask, where it came from (for the error message), and the token to send.
fn address(args: &StatusArgs) -> anyhow::Result<(String, String, Option<String>)> {
    let config = if args.config.exists() {
        Some(Config::load(&args.config)?)
    } else {
        None
    };
    let token = config.as_ref().and_then(|c| c.http.token.clone());
    if let Some(a) = &args.addr {
        return Ok((a.clone(), "--addr".into(), token));
    }
    let Some(config) = config else {
        return Ok((
            DEFAULT_HTTP.into(),
            format!("the default; no config at {}", args.config.display()),
            None,
        ));
    };
    let listen = config.http.listen;
    // A daemon listening on every address answers on loopback.
    let addr = if listen.ip().is_unspecified() {
        std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), listen.port())
    } else {
        listen
    };
    Ok((
        addr.to_string(),
        format!("http.listen in {}", args.config.display()),
        token,
    ))
}

pub fn run(args: StatusArgs) -> anyhow::Result<Exit> {
    let (addr, from, token) = address(&args)?;
    let (code, body) =
        crate::http::client::get(&addr, "/status", token.as_deref()).with_context(|| {
            format!(
                "no daemon answering on {addr} ({from}; is it running? give --addr or --config)"
            )
        })?;
    if code == 401 {
        bail!("{addr}/status answered HTTP 401: the daemon wants http.token (give --config with the daemon's config)");
    }
    if code != 200 {
        bail!("{addr}/status answered HTTP {code}");
    }
    let snapshot: StatusSnapshot = serde_json::from_str(&body)
        .with_context(|| format!("{addr}/status is not a foxborne-receiver status"))?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &snapshot)?;
        writeln!(out)?;
    } else {
        out.write_all(table::render(&snapshot).as_bytes())?;
    }
    Ok(Exit::Success)
}
