//! The command line: one binary, several verbs (docs/design.md "One binary, several verbs"), one
//! file per verb with its clap arguments, and the one place where an outcome becomes an exit
//! code: 0 success (a closed output pipe included), 1 runtime failure, 2 usage, 3 a ULog
//! quarantined, 4 a file rejected (wrong kind, encrypted, unsupported), 78 bad config.

pub mod analyze;
pub mod catalog;
pub mod check_config;
pub mod mcap;
pub mod range;
pub mod reload;
pub mod replay;
pub mod run;
pub mod simulate;
pub mod sortie;
pub mod status;
pub mod tlog;
pub mod ulog;

use crate::analyze::WrongKindOfFile;
use crate::config::ConfigError;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

pub const DEFAULT_CONFIG: &str = "/etc/foxborne-receiver/receiver.toml";

pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_REJECTED: u8 = 4;
pub const EXIT_CONFIG: u8 = 78;

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
    Run(run::RunArgs),
    /// Validate a config and print the effective settings (exit 78 on error).
    CheckConfig(check_config::CheckConfigArgs),
    /// Ask a running daemon to reopen its files (SIGHUP): the unit's ExecReload.
    Reload(reload::ReloadArgs),
    /// Receive JSONL or .tlog through the live gap and latency logic; findings as JSON lines.
    Analyze(analyze::AnalyzeArgs),
    /// Ask a running daemon (its local HTTP port) and print vehicles and links.
    Status(status::StatusArgs),
    /// Ground-station .tlog files.
    Tlog {
        #[command(subcommand)]
        cmd: tlog::TlogCommand,
    },
    /// PX4 flight logs: ingest, info, record, export, report.
    Ulog {
        #[command(subcommand)]
        cmd: ulog::UlogCommand,
    },
    /// Send simulated vehicles' MAVLink to a receiver over UDP (to see it work without a vehicle).
    Simulate(simulate::SimulateArgs),
    /// The whole range from every site's receipts in NATS JetStream: gaps judged across sites.
    Range(range::RangeArgs),
    /// One flight log and the ground's records of the same sortie on one UTC timeline.
    Sortie(sortie::SortieArgs),
    /// Send a recording's raw frames (.tlog) again at their recorded pace, to a ground station or
    /// a receiver.
    Replay(replay::ReplayArgs),
}

/// A usage error found after parsing (clap's own exit with 2 before this).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Runs the verb and maps its outcome to the process exit code.
pub fn main(cli: Cli) -> ExitCode {
    let outcome = match cli.verb {
        Verb::Run(args) => run::run(args),
        Verb::CheckConfig(args) => check_config::run(args),
        Verb::Reload(args) => reload::run(args),
        Verb::Analyze(args) => analyze::run(args),
        Verb::Status(args) => status::run(args),
        Verb::Tlog { cmd } => tlog::run(cmd),
        Verb::Ulog { cmd } => ulog::run(cmd).map(|code| code.clamp(0, 255) as u8),
        Verb::Simulate(args) => simulate::run(args),
        Verb::Range(args) => range::run(args),
        Verb::Sortie(args) => sortie::run(args),
        Verb::Replay(args) => replay::run(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => match exit_code_for(&e) {
            0 => ExitCode::SUCCESS,
            code => {
                eprintln!("error: {e:#}");
                ExitCode::from(code)
            }
        },
    }
}

/// The one place an error becomes an exit code. A closed output pipe (`... | head`) is not a
/// failure: the reader has all it wanted.
pub fn exit_code_for(e: &anyhow::Error) -> u8 {
    let in_chain =
        |check: &dyn Fn(&(dyn std::error::Error + 'static)) -> bool| e.chain().any(check);
    if in_chain(&|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    }) {
        return 0;
    }
    if in_chain(&|c| c.is::<ConfigError>()) {
        return EXIT_CONFIG;
    }
    if in_chain(&|c| c.is::<WrongKindOfFile>()) {
        return EXIT_REJECTED;
    }
    if in_chain(&|c| c.is::<UsageError>()) {
        return EXIT_USAGE;
    }
    EXIT_FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

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

    #[test]
    fn each_error_kind_has_its_exit_code() {
        let pipe: anyhow::Error = std::io::Error::from(std::io::ErrorKind::BrokenPipe).into();
        assert_eq!(exit_code_for(&pipe.context("writing receipts")), 0);
        let config = ConfigError::Parse {
            file: "r.toml".into(),
            message: "x".into(),
        };
        assert_eq!(exit_code_for(&anyhow::Error::from(config)), EXIT_CONFIG);
        let wrong = WrongKindOfFile {
            file: "a.ulg".into(),
            wanted: "a .tlog",
            found: "a PX4 ULog".into(),
        };
        assert_eq!(
            exit_code_for(&Err::<(), _>(wrong).context("converting").unwrap_err()),
            EXIT_REJECTED
        );
        assert_eq!(
            exit_code_for(&UsageError("no files".into()).into()),
            EXIT_USAGE
        );
        assert_eq!(
            exit_code_for(&anyhow::anyhow!("disk on fire")),
            EXIT_FAILURE
        );
    }
}
