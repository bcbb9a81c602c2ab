//! The command line: one binary, several verbs (docs/design.md "One binary, several verbs"), one
//! file per verb with its clap arguments. Each verb ends in an [`Exit`], the one table of exit
//! codes ([`exit`]: 0 success, 1 runtime failure, 2 usage, 3 a ULog quarantined, 4 a file
//! rejected, 78 bad config), or an error that [`Exit::for_error`] maps; [`main`] ends the process
//! with it.

pub mod analyze;
pub mod catalog;
pub mod check_config;
pub mod error_text;
pub mod exit;
pub mod mcap;
pub mod range;
pub mod reference;
pub mod reload;
pub mod replay;
pub mod run;
pub mod simulate;
pub mod sortie;
pub mod status;
pub mod tlog;
pub mod ulog;

use clap::{Parser, Subcommand};
pub use exit::Exit;
use std::process::ExitCode;

pub const DEFAULT_CONFIG: &str = "/etc/foxborne-receiver/receiver.toml";

#[derive(Debug, Parser)]
#[command(
    name = "foxborne-receiver",
    version,
    about = "Live MAVLink ground receiver and PX4 flight-log ingest",
    after_help = reference::README
)]
pub struct Cli {
    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Run the receiver daemon: links in, receive log and events out, live alerts.
    #[command(after_help = reference::CONFIG)]
    Run(run::RunArgs),
    /// Validate a config and print the effective settings (exit 78 on error).
    #[command(after_help = reference::CONFIG)]
    CheckConfig(check_config::CheckConfigArgs),
    /// Ask a running daemon to reopen its files (SIGHUP): the unit's ExecReload.
    #[command(after_help = reference::RECEIVE_LOG)]
    Reload(reload::ReloadArgs),
    /// Receive JSONL or .tlog through the live gap and latency logic; findings as JSON lines.
    #[command(after_help = reference::EVENTS)]
    Analyze(analyze::AnalyzeArgs),
    /// Ask a running daemon (its local HTTP port) and print vehicles and links.
    #[command(after_help = reference::HTTP)]
    Status(status::StatusArgs),
    /// Ground-station .tlog files.
    #[command(after_help = reference::RECEIVE_LOG)]
    Tlog {
        #[command(subcommand)]
        cmd: tlog::TlogCommand,
    },
    /// PX4 flight logs: ingest, info, record, export, report.
    #[command(after_help = reference::ULOG)]
    Ulog {
        #[command(subcommand)]
        cmd: ulog::UlogCommand,
    },
    /// Send simulated vehicles' MAVLink to a receiver over UDP (to see it work without a vehicle).
    #[command(after_help = reference::TESTING)]
    Simulate(simulate::SimulateArgs),
    /// The whole range from every site's receipts in NATS JetStream: gaps judged across sites.
    #[command(after_help = reference::RANGE)]
    Range(range::RangeArgs),
    /// One flight log and the ground's records of the same sortie on one UTC timeline.
    #[command(after_help = reference::SORTIE)]
    Sortie(sortie::SortieArgs),
    /// Send a recording's raw frames (.tlog) again at their recorded pace, to a ground station or
    /// a receiver.
    #[command(after_help = reference::REPLAY)]
    Replay(replay::ReplayArgs),
}

/// A usage error found after parsing (clap's own exit with 2 before this).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs the verb and ends the process with its exit code; an error is printed, and mapped by
/// [`Exit::for_error`].
pub fn main(cli: Cli) -> ExitCode {
    let outcome = match cli.verb {
        Verb::Run(args) => run::run(args),
        Verb::CheckConfig(args) => check_config::run(args),
        Verb::Reload(args) => reload::run(args),
        Verb::Analyze(args) => analyze::run(args),
        Verb::Status(args) => status::run(args),
        Verb::Tlog { cmd } => tlog::run(cmd),
        Verb::Ulog { cmd } => ulog::run(cmd),
        Verb::Simulate(args) => simulate::run(args),
        Verb::Range(args) => range::run(args),
        Verb::Sortie(args) => sortie::run(args),
        Verb::Replay(args) => replay::run(args),
    };
    let exit = match outcome {
        Ok(exit) => exit,
        Err(e) => {
            let exit = Exit::for_error(&e);
            if exit != Exit::Success {
                eprintln!("error: {}", error_text::chain(&e));
            }
            exit
        }
    };
    exit.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument of every verb says what it is in `--help` (a blank FILES was reported).
    #[test]
    fn every_argument_has_help_text() {
        use clap::CommandFactory;
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                if !builtin && arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                if sub.get_about().is_none() {
                    missing.push(format!("{path} {} (no about)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "foxborne-receiver", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }
}
