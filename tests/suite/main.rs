//! The integration tests, as one test binary: each file here is a module for one area (the
//! daemon's links, alerts, the HTTP face, the ULog verbs, the sortie, ...), and `common` holds
//! what they share. One binary instead of one per file: each linked the whole crate, which was
//! most of the suite's build time, and the modules' tests now run side by side.
//!
//! Run one area with `cargo test --test suite daemon_alerts::`.

mod common;

mod analyze_corpus;
mod board_browser;
mod corpus_radio;
mod corpus_tlog;
mod daemon_alerts;
mod daemon_files;
mod daemon_links;
mod daemon_service;
mod daemon_tcp;
mod docs_links;
mod faults;
mod fields_pymavlink;
mod forward;
mod http_face;
mod http_pressure;
mod isolation;
mod mavproxy;
mod mcap_export;
mod module_cycles;
mod new_user;
mod properties_fields;
mod properties_wire;
mod range_nats;
mod redundancy;
mod replay;
mod sortie;
mod traffic;
mod ulog_binary;
mod ulog_catalog;
mod ulog_cli;
mod ulog_corpus;
mod ulog_differential;
mod ulog_events;
mod ulog_export;
mod ulog_format;
mod ulog_honest;
mod ulog_properties;
mod ulog_report;
mod ulog_rules;
mod ulog_truncation;
mod ulog_versions;
mod webhooks;
