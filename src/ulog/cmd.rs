//! The `ulog` verbs: argument definitions and their entry point.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum UlogCommand {}

/// Runs one `ulog` verb and returns the process exit code.
pub fn run(cmd: UlogCommand) -> anyhow::Result<i32> {
    match cmd {}
}
