//! Logging set-up. Under systemd (stderr connected to the journal, `JOURNAL_STREAM` set) events
//! go to journald with their fields as structured journal fields (`SYSID`, `STATE`, `TITLE`, ...);
//! on a terminal or elsewhere, human-readable lines on stderr. `RUST_LOG` sets the level
//! (default `info`). Nothing per frame is logged above TRACE.

use std::io::IsTerminal;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        if let Ok(journald) = tracing_journald::layer() {
            let _ = tracing_subscriber::registry()
                .with(filter)
                .with(journald.with_syslog_identifier("foxborne-receiver".into()))
                .try_init();
            return;
        }
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
