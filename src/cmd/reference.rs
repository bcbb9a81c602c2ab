//! The last line of each verb's `--help`: the docs page that is its reference, in the source
//! tree and where the `.deb` installs it (Cargo.toml's `[package.metadata.deb]` assets ship
//! `docs/*.md` there). `tests/suite/docs_links.rs` checks every verb names a page that exists.

macro_rules! page {
    ($page:literal) => {
        concat!(
            "Reference: docs/",
            $page,
            " (installed: /usr/share/doc/foxborne-receiver/docs/",
            $page,
            ")"
        )
    };
}

/// `run`, `check-config`.
pub const CONFIG: &str = page!("config.md");
/// `reload`, `tlog convert`.
pub const RECEIVE_LOG: &str = page!("receive-log.md");
/// `analyze`.
pub const EVENTS: &str = page!("events.md");
/// `status`.
pub const HTTP: &str = page!("http.md");
/// `ulog` and its verbs.
pub const ULOG: &str = page!("ulog.md");
/// `sortie`.
pub const SORTIE: &str = page!("sortie.md");
/// `replay`.
pub const REPLAY: &str = page!("replay.md");
/// `range`.
pub const RANGE: &str = page!("range.md");
/// `simulate`.
pub const TESTING: &str = page!("testing.md");
/// The binary's own `--help`: the front door.
pub const README: &str =
    "Documentation: README.md and docs/ (installed: /usr/share/doc/foxborne-receiver/)";
