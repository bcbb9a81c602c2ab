//! Ingesting one log file: validate, read, and decide its status. A complete log gets a full
//! report; a truncated or malformed one is quarantined (a copy and a reason file go to the
//! quarantine folder, the original is never touched); an encrypted file, a key file, a file
//! without the ULog magic or with unknown incompatible flags is rejected.
//!
//! This is the I/O shell around the pure reader: it opens files, copies, and reports progress.

use super::collect::Collector;
use super::decoder::Section;
use super::digest::Sha256Reader;
use super::display::human_size;
use super::error::{CutInside, ReadError};
use super::profile::Profile;
use super::reader::StreamReader;
use super::record::Record;
use super::report::{
    Cited, QuarantineCopy, Report, Status, Truncation, ENCRYPTED_REASON, MAGIC_VERIFIED,
};
use anyhow::Context;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Malformed messages listed in a report (all are counted in the reason).
const MALFORMED_LISTED: usize = 20;

/// How to ingest.
#[derive(Default)]
pub struct IngestOptions<'p> {
    pub profile: Option<Profile>,
    /// Where quarantined copies go; `None` reports the status without copying.
    pub quarantine_dir: Option<PathBuf>,
    /// Called now and then with (bytes read, file size).
    pub progress: Option<&'p mut dyn FnMut(u64, u64)>,
}

/// The reason a truncated log is quarantined.
pub fn truncation_reason(inside: CutInside, offset: u64) -> String {
    format!(
        "The flight log ends inside {} at {}. The file was truncated, most likely when power was cut during logging. Nothing from it is shown as complete.",
        inside.describe(),
        human_size(offset)
    )
}

/// The reason a log with a malformed message is quarantined.
pub fn malformed_reason(first: &ReadError, count: usize) -> String {
    let ReadError::Malformed {
        kind,
        offset,
        message,
        detail,
        ..
    } = first
    else {
        return format!(
            "The flight log could not be read: {first}. Nothing from it is shown as complete."
        );
    };
    let more = if count > 1 {
        format!(" ({count} malformed messages in all)")
    } else {
        String::new()
    };
    format!(
        "The flight log has a malformed {kind} message at {} (message {message}, byte {offset}): {detail}{more}. Nothing from it is shown as complete.",
        human_size(*offset)
    )
}

/// Reads the log at `path` and builds its report. I/O failures are errors; everything about
/// the content is in the report's status.
pub fn ingest_file(path: &Path, options: IngestOptions<'_>) -> anyhow::Result<Report> {
    ingest_path(path, options, false)
}

/// As [`ingest_file`], with the file's SHA-256 in the report (`sha256`), taken in the same pass.
pub fn ingest_file_with_sha256(path: &Path, options: IngestOptions<'_>) -> anyhow::Result<Report> {
    ingest_path(path, options, true)
}

fn ingest_path(path: &Path, options: IngestOptions<'_>, hash: bool) -> anyhow::Result<Report> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let size = file
        .metadata()
        .with_context(|| format!("reading the size of {}", path.display()))?
        .len();
    let name = path.display().to_string();
    let profile = options.profile.as_ref();
    let mut report = if hash {
        let mut hashed = Sha256Reader::new(file).with_context(|| format!("hashing {name}"))?;
        let mut report = ingest_reader(&mut hashed, &name, size, profile, options.progress)?;
        report.sha256 = Some(hashed.finish().with_context(|| format!("reading {name}"))?);
        report
    } else {
        ingest_reader(file, &name, size, profile, options.progress)?
    };
    if report.status == Status::Quarantined {
        if let Some(dir) = &options.quarantine_dir {
            report.quarantine = Some(quarantine(path, dir, &report)?);
        }
    }
    Ok(report)
}

/// Messages before the end within which an unreadable one makes a cut look like garbage.
const RECENT_BAD: u64 = 16;

/// The reason a log with bytes that do not read as messages at its end is quarantined.
pub fn garbage_reason(from: u64, end: u64, bad: u64) -> String {
    format!(
        "The flight log has bytes that do not read as ULog messages from byte {} ({}) to its end at {}{}. That is garbage in the file, not a log cut short. Nothing from it is shown as complete.",
        crate::ulog::display::grouped(from),
        human_size(from),
        human_size(end),
        if bad > 0 {
            format!(" ({bad} unreadable messages before it ends inside one)")
        } else {
            String::new()
        }
    )
}

/// The reason a log without a single logged sample is quarantined.
pub fn no_data_reason(after: &str, size: u64) -> String {
    format!(
        "The flight log has no data: it ends after {after} at {}, before any logged sample. Nothing from it is shown as complete.",
        human_size(size)
    )
}

fn cited(e: &ReadError) -> Option<Cited> {
    match e {
        ReadError::Malformed {
            offset, message, ..
        } => Some(Cited {
            message: *message,
            offset: *offset,
            detail: e.to_string(),
        }),
        _ => None,
    }
}

/// The reading part of [`ingest_file`], from any `Read` of `size` bytes named `name`.
pub fn ingest_reader<R: std::io::Read>(
    input: R,
    name: &str,
    size: u64,
    profile: Option<&Profile>,
    mut progress: Option<&mut dyn FnMut(u64, u64)>,
) -> anyhow::Result<Report> {
    // A buffer no larger than the file (plus room to see its end) for small files.
    let capacity = usize::try_from(size.saturating_add(1)).unwrap_or(usize::MAX);
    let mut reader = StreamReader::with_capacity(input, capacity);
    let mut collector = Collector::new();
    let mut malformed: Vec<ReadError> = Vec::new();
    let mut malformed_count = 0usize;
    let mut fatal: Option<ReadError> = None;
    let mut next_progress = 0u64;
    // The last message that did not read as a ULog message (malformed or of unknown type), and
    // how many there were: evidence of garbage rather than a clean cut.
    let mut last_bad: Option<(u64, u64)> = None;
    let mut bad_count = 0u64;
    let mut first_bad_in_run: Option<u64> = None;
    while let Some(item) = reader.next_record() {
        // Look at a record where it lies: moving it out of `item` first costs a
        // store-forwarding stall per message, a fifth of the whole ingest time.
        if let Ok(record) = &item {
            collector.observe(record);
            if let Record::Unknown { .. } = record.record {
                last_bad = Some((record.message, record.offset));
                bad_count += 1;
                first_bad_in_run.get_or_insert(record.offset);
            } else if record.message > 0 {
                first_bad_in_run = None;
            }
        }
        match item {
            Ok(_) => {}
            Err(e @ ReadError::Malformed { .. }) => {
                if let ReadError::Malformed {
                    message, offset, ..
                } = &e
                {
                    last_bad = Some((*message, *offset));
                    bad_count += 1;
                    first_bad_in_run.get_or_insert(*offset);
                }
                malformed_count += 1;
                if malformed.len() < MALFORMED_LISTED {
                    malformed.push(e);
                }
            }
            Err(ReadError::Io { offset, source }) => {
                return Err(source).with_context(|| format!("reading {name} at byte {offset}"));
            }
            Err(e) => {
                fatal = Some(e);
                break;
            }
        }
        if let Some(p) = progress.as_mut() {
            let pos = reader.position();
            if pos >= next_progress {
                p(pos, size);
                next_progress = pos + (size / 200).max(1 << 20);
            }
        }
    }
    if let Some(p) = progress.as_mut() {
        p(reader.position(), size);
    }
    let decoder = reader.decoder();
    let mut report = Report::empty(name, Status::Complete, None);
    report.size_bytes = size;
    if let Some(h) = decoder.header() {
        report.validation = vec![
            format!("PX4 ULog, version {}", h.version),
            MAGIC_VERIFIED.to_string(),
        ];
    }
    let recent_bad = last_bad.is_some_and(|(m, _)| m + RECENT_BAD >= decoder.message_count());
    match fatal {
        Some(ReadError::Encrypted { .. }) => {
            return Ok(rejected(report, ENCRYPTED_REASON.to_string()))
        }
        Some(ReadError::NotUlog { found }) => {
            let reason = format!(
                "The file is not a PX4 flight log (ULog): it starts with {found} where a ULog starts with 55 4C 6F 67 01 12 35."
            );
            return Ok(rejected(report, reason));
        }
        Some(e @ ReadError::UnsupportedIncompatFlags { .. }) => {
            let reason = format!("The flight log uses features Foxborne cannot read safely: {e}.");
            return Ok(rejected(report, reason));
        }
        Some(ReadError::Truncated {
            inside,
            message_offset,
            end,
        }) => {
            report.status = Status::Quarantined;
            // A cut inside a message that starts like a real one, after messages that read
            // cleanly, is what a power loss leaves (so is a tail of zeros). Anything else is
            // garbage, and is called that.
            let clean_cut = inside == CutInside::ZeroRun
                || inside == CutInside::FileHeader
                || inside == CutInside::BeforeAppendedData
                || (!recent_bad && decoder.cut_message().is_none_or(|c| c.plausible));
            report.reason = Some(if clean_cut {
                with_malformed(
                    truncation_reason(inside, message_offset),
                    &malformed,
                    malformed_count,
                )
            } else {
                let from = first_bad_in_run
                    .unwrap_or(message_offset)
                    .min(message_offset);
                let bad = if first_bad_in_run.is_some() {
                    bad_count
                } else {
                    0
                };
                garbage_reason(from, end, bad)
            });
            report.messages = decoder.message_count();
            report.truncation = Some(Truncation {
                offset: message_offset,
                inside: if clean_cut { inside.code() } else { "garbage" }.to_string(),
                description: inside.describe(),
                end,
            });
            report.malformed = malformed.iter().filter_map(cited).collect();
            report.header = None;
            return Ok(report);
        }
        Some(other) => anyhow::bail!("reading {name}: {other}"),
        None => {}
    }
    if let Some(first) = malformed.first() {
        report.status = Status::Quarantined;
        report.reason = Some(malformed_reason(first, malformed_count));
        report.messages = decoder.message_count();
        report.malformed = malformed.iter().filter_map(cited).collect();
        return Ok(report);
    }
    if collector.data_samples() == 0 {
        report.status = Status::Quarantined;
        let after = match decoder.section() {
            _ if decoder.message_count() == 0 => "its file header",
            Section::Definitions => "its definitions",
            Section::Data => "its definitions and subscriptions",
        };
        report.reason = Some(no_data_reason(after, size));
        report.messages = decoder.message_count();
        return Ok(report);
    }
    collector.finish(decoder, profile, &mut report);
    Ok(report)
}

/// A truncation reason that also counts the malformed messages before the cut.
fn with_malformed(reason: String, malformed: &[ReadError], count: usize) -> String {
    let Some(ReadError::Malformed {
        offset, message, ..
    }) = malformed.first()
    else {
        return reason;
    };
    let tail = " Nothing from it is shown as complete.";
    let head = reason.strip_suffix(tail).unwrap_or(&reason);
    format!(
        "{head} Before the cut it has {count} malformed message{}, the first at byte {} (message {}).{tail}",
        if count == 1 { "" } else { "s" },
        crate::ulog::display::grouped(*offset),
        crate::ulog::display::grouped(*message),
    )
}

fn rejected(mut report: Report, reason: String) -> Report {
    report.status = Status::Rejected;
    report.reason = Some(reason);
    report
}

/// Copies the original into `dir` (never moving or changing it) with a reason file beside it.
fn quarantine(path: &Path, dir: &Path, report: &Report) -> anyhow::Result<QuarantineCopy> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating quarantine folder {}", dir.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "log.ulg".into());
    let mut copy = dir.join(&name);
    let mut n = 1;
    while copy.exists() {
        copy = dir.join(format!("{name}.{n}"));
        n += 1;
    }
    std::fs::copy(path, &copy)
        .with_context(|| format!("copying {} to {}", path.display(), copy.display()))?;
    let reason_file = PathBuf::from(format!("{}.reason.txt", copy.display()));
    let mut text = String::new();
    text.push_str(&format!("file: {}\n", path.display()));
    text.push_str(&format!("size: {} bytes\n", report.size_bytes));
    if let Some(t) = &report.truncation {
        text.push_str(&format!(
            "ends inside: {} starting at byte {}\n",
            t.description, t.offset
        ));
    }
    for m in &report.malformed {
        text.push_str(&format!(
            "malformed: message {} at byte {}: {}\n",
            m.message, m.offset, m.detail
        ));
    }
    text.push_str(&format!(
        "reason: {}\n",
        report.reason.as_deref().unwrap_or("")
    ));
    std::fs::write(&reason_file, text)
        .with_context(|| format!("writing {}", reason_file.display()))?;
    Ok(QuarantineCopy {
        copy: copy.display().to_string(),
        reason_file: reason_file.display().to_string(),
    })
}
