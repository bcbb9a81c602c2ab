//! Entry point: parse the command line, start logging, run the verb; `cmd` maps its outcome to
//! the exit code.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = foxborne_receiver::cmd::Cli::parse();
    foxborne_receiver::logging::init();
    foxborne_receiver::cmd::main(cli)
}
