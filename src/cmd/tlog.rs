//! `tlog convert`: ground-station `.tlog` files to receiver JSONL in the receive-log schema.
//! The record stamp becomes `recv_utc` (with pymavlink's two link bits cleared), `mono_ns` is
//! null, and rejects are summarised on stderr with their byte offsets. Files are streamed, so
//! memory stays flat whatever their size; a file that is not a `.tlog` is refused (exit 4).

use super::analyze::file_stem;
use super::{Exit, UsageError};
use crate::analyze::WrongKindOfFile;
use crate::receipt::{self, Arrival, LineOptions, UtcMillis};
use crate::sniff::{sniff, FileKind, HEAD_LEN};
use crate::tlog::read_tlog;
use crate::wire::fields::FieldSelection;
use crate::wire::signing::SigningKeys;
use crate::wire::ScanItem;
use anyhow::Context;
use clap::Subcommand;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Rejected records named one by one per file; past this only their count is given.
const MAX_REJECTS_SHOWN: u64 = 20;

#[derive(Debug, Subcommand)]
pub enum TlogCommand {
    /// Convert .tlog files to receiver JSONL (same schema; `mono_ns` is null).
    #[command(after_help = super::reference::RECEIVE_LOG)]
    Convert {
        /// Ground-station telemetry logs (.tlog: 8-byte big-endian µs time + MAVLink frame).
        #[arg(value_name = "FILE.tlog", required = true)]
        files: Vec<PathBuf>,
        /// Link name for the receipts (default: the file name without extension).
        #[arg(long)]
        link: Option<String>,
        /// Write here instead of standard output.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Message names whose decoded payload goes in `fields`, or `all` for every message.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = crate::wire::fields::DEFAULT_FIELDS_ARG
        )]
        fields: Vec<String>,
    },
}

pub fn run(cmd: TlogCommand) -> anyhow::Result<Exit> {
    match cmd {
        TlogCommand::Convert {
            files,
            link,
            out,
            fields,
        } => convert(&files, link.as_deref(), out.as_deref(), &fields),
    }
}

pub fn convert(
    files: &[PathBuf],
    link: Option<&str>,
    out: Option<&Path>,
    fields: &[String],
) -> anyhow::Result<Exit> {
    if files.is_empty() {
        return Err(UsageError("tlog convert: no .tlog files given".into()).into());
    }
    let fields_for =
        FieldSelection::parse(fields).map_err(|e| UsageError(format!("--fields: {e}")))?;
    let options = LineOptions {
        fields_for,
        signatures_checked: false,
    };
    let mut sink: Box<dyn Write> = match out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let keys = SigningKeys::default();
    let mut clock = UtcMillis::default();
    let mut line = Vec::with_capacity(512);
    for file in files {
        let input =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        let mut input = BufReader::with_capacity(1 << 20, input);
        let head = input.fill_buf()?;
        match sniff(&head[..head.len().min(HEAD_LEN)]) {
            FileKind::Tlog | FileKind::Empty => {}
            other => {
                return Err(WrongKindOfFile {
                    file: file.display().to_string(),
                    wanted: "a .tlog",
                    found: other.describe(),
                }
                .into())
            }
        }
        let name = link.map(str::to_string).unwrap_or_else(|| file_stem(file));
        let link_json = receipt::json_string(&name);
        let (mut receipts, mut rejects) = (0u64, 0u64);
        read_tlog(input, &keys, |record| {
            match record.item {
                ScanItem::Frame(frame) => {
                    let arrival = Arrival {
                        utc_ns: record.utc_us as i64 * 1000,
                        mono_ns: None,
                        link_json: &link_json,
                        src_json: None,
                    };
                    line.clear();
                    receipt::write_line(&mut line, &mut clock, &arrival, &frame, &options);
                    sink.write_all(&line)?;
                    receipts += 1;
                }
                ScanItem::Reject(r) => {
                    rejects += 1;
                    if rejects <= MAX_REJECTS_SHOWN {
                        eprintln!(
                            "{}: byte {}: {} ({} bytes), not a receipt",
                            file.display(),
                            record.offset,
                            r.reason.as_str(),
                            r.bytes
                        );
                    }
                }
            }
            Ok(())
        })?;
        if rejects > MAX_REJECTS_SHOWN {
            eprintln!(
                "{}: ... {} more rejected records not listed",
                file.display(),
                rejects - MAX_REJECTS_SHOWN
            );
        }
        eprintln!(
            "{}: {receipts} receipts, {rejects} rejected records",
            file.display()
        );
    }
    sink.flush()?;
    Ok(Exit::Success)
}
