//! `tlog convert`: ground-station `.tlog` files to receiver JSONL in the receive-log schema.
//! The record stamp becomes `recv_utc` (with pymavlink's two link bits cleared), `mono_ns` is
//! null, and rejects are summarised on stderr with their byte offsets.

use crate::mavlink::fields::FieldSelection;
use crate::mavlink::signing::SigningKeys;
use crate::mavlink::ScanItem;
use crate::receipt::{self, Arrival, LineOptions, UtcMillis};
use crate::tlog::TlogReader;
use anyhow::{bail, Context};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Rejected records named one by one per file; past this only their count is given.
const MAX_REJECTS_SHOWN: u64 = 20;

pub fn convert(
    files: &[PathBuf],
    link: Option<&str>,
    out: Option<&Path>,
    fields: &[String],
) -> anyhow::Result<()> {
    if files.is_empty() {
        bail!("no .tlog files given");
    }
    let fields_for = FieldSelection::parse(fields).context("--fields")?;
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
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let name = link.map(str::to_string).unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default()
        });
        let link_json = receipt::json_string(&name);
        let (mut receipts, mut rejects) = (0u64, 0u64);
        for record in TlogReader::new(&bytes, &keys) {
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
        }
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
    Ok(())
}
