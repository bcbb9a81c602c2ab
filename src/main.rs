//! Entry point: parse the command line, run the verb, map the outcome to an exit code
//! (0 ok, 1 runtime failure, 2 usage, 3 quarantined, 4 rejected, 78 bad config).

use clap::Parser;
use foxborne_receiver::cli::{Cli, TlogCommand, Verb};
use foxborne_receiver::config::Config;
use std::process::ExitCode;

const EXIT_CONFIG: u8 = 78;

fn main() -> ExitCode {
    let cli = Cli::parse();
    foxborne_receiver::logging::init();
    match cli.verb {
        Verb::Run { config } => {
            let config = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(e) => return fail(anyhow::anyhow!(e).context("cannot start the runtime")),
            };
            match runtime.block_on(foxborne_receiver::daemon::run(config)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Verb::CheckConfig { config } => match Config::load(&config)
            .and_then(|c| c.check_environment().map(|warnings| (c, warnings)))
        {
            Ok((c, warnings)) => {
                for w in warnings {
                    eprintln!("warning: {w}");
                }
                println!(
                    "{}",
                    serde_json::to_string_pretty(&c.effective()).expect("JSON")
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(EXIT_CONFIG)
            }
        },
        Verb::Tlog {
            cmd:
                TlogCommand::Convert {
                    files,
                    link,
                    out,
                    fields,
                },
        } => {
            match foxborne_receiver::tlog_convert::convert(
                &files,
                link.as_deref(),
                out.as_deref(),
                &fields,
            ) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Verb::Status { config, addr, json } => {
            let addr = match addr {
                Some(a) => a,
                None => match Config::load(&config) {
                    Ok(c) => c.http_listen.to_string().replace("0.0.0.0", "127.0.0.1"),
                    Err(e) => {
                        eprintln!("error: {e} (or give --addr)");
                        return ExitCode::from(EXIT_CONFIG);
                    }
                },
            };
            match foxborne_receiver::status_cmd::run(&addr, json) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            }
        }
        Verb::Analyze {
            files,
            config,
            link,
        } => match foxborne_receiver::analyze::run(&files, config.as_deref(), link.as_deref()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => match e.downcast_ref::<foxborne_receiver::config::ConfigError>() {
                Some(_) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(EXIT_CONFIG)
                }
                None => fail(e),
            },
        },
        Verb::Ulog { cmd } => match foxborne_receiver::ulog::cmd::run(cmd) {
            Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => fail(e),
        },
    }
}

fn fail(e: anyhow::Error) -> ExitCode {
    eprintln!("error: {e:#}");
    ExitCode::FAILURE
}
