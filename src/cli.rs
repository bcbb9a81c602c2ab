//! The command line: one binary, several verbs (DESIGN.md "One binary, several verbs").

use clap::{Parser, Subcommand};
use std::path::PathBuf;

pub const DEFAULT_CONFIG: &str = "/etc/foxborne-receiver/receiver.toml";

#[derive(Debug, Parser)]
#[command(
    name = "foxborne-receiver",
    version,
    about = "Live MAVLink ground receiver and PX4 flight-log ingest"
)]
pub struct Cli {
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run the receiver daemon: links in, receive log and events out, live alerts.
    Run {
        #[arg(long, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Validate a config and print the effective settings (exit 78 on error).
    CheckConfig {
        #[arg(long, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Receive JSONL or .tlog through the live gap and latency logic; findings as JSON lines.
    Analyze {
        files: Vec<PathBuf>,
        /// Take [gap] and [latency] settings from this daemon config.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Link name for .tlog receipts (default: the file name).
        #[arg(long)]
        link: Option<String>,
    },
    /// Ask a running daemon (its local HTTP port) and print vehicles and links.
    Status {
        /// Read `http.listen` from this config.
        #[arg(long, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
        /// The daemon's HTTP address, instead of the config's.
        #[arg(long)]
        addr: Option<String>,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Ground-station .tlog files.
    Tlog {
        #[command(subcommand)]
        cmd: TlogCommand,
    },
    /// PX4 flight logs: ingest, info, record, export, report.
    Ulog {
        #[command(subcommand)]
        cmd: crate::ulog::cmd::UlogCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum TlogCommand {
    /// Convert .tlog files to receiver JSONL (same schema; `mono_ns` is null).
    Convert {
        files: Vec<PathBuf>,
        /// Link name for the receipts (default: the file name without extension).
        #[arg(long)]
        link: Option<String>,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Message names whose decoded payload goes in `fields`.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "HEARTBEAT,SYSTEM_TIME,STATUSTEXT"
        )]
        fields: Vec<String>,
    },
}
