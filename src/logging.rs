//! Logging set-up: human-readable lines on stderr, `RUST_LOG` to change the level (default
//! `info`). Nothing per frame is logged above TRACE.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
