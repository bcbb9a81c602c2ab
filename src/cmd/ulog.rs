//! The `ulog` verbs: argument definitions and their entry point.
//!
//! - `ulog ingest FILE.ulg... [--out DIR] [--quarantine DIR] [--profile NAME]`: one JSON report
//!   per log, `<out>/<log name>.report.json` (the path is printed), or the JSON itself with
//!   `--out -`. Quarantined copies go to `--quarantine`, by default `<out>/quarantine`
//!   (`./quarantine` with `--out -`).
//! - `ulog info FILE [--profile NAME]`: a human summary.
//! - `ulog record FILE --message N | --offset B`: one record decoded (the evidence inspector).
//! - `ulog export FILE... --format parquet|csv --out DIR`: every topic instance as a table in
//!   `<out>/<log name>/`, with parameters, logged messages, info and dropouts beside them.
//! - `ulog report FILE --out report.html [--ground GROUND...]`: the post-sortie report, one
//!   offline HTML file; with the ground's records, a ground lane on the plots' time axis (the
//!   `sortie` timeline's ground side).
//! - `ulog ingest ... --catalog FILE | --config FILE [--names FILE] [--manifest SHA256SUMS]`,
//!   `ulog runs`, `ulog changes`, `ulog catalog rebuild`: the run catalog and the manifest check,
//!   in `crate::cmd::catalog`.
//!
//! Exit codes: 0 all complete; 3 a log quarantined; 4 a file rejected (4 wins over 3); 1 a
//! runtime failure (a file that cannot be opened or written), which wins over both. `record`
//! gives 2 when the log has no such message or offset.

use super::Exit;
use crate::ulog::display::human_size;
use crate::ulog::ingest::{ingest_file, ingest_file_with_sha256, IngestOptions};
use crate::ulog::inspect::{inspect, Target};
use crate::ulog::profile::Profile;
use crate::ulog::report::{Report, Status};
use anyhow::Context;
use clap::{Args, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, Subcommand)]
pub enum UlogCommand {
    /// Validate, read and report on PX4 flight logs (.ulg)
    #[command(after_help = super::reference::ULOG)]
    Ingest(IngestArgs),
    /// Print a human summary of one flight log
    #[command(after_help = super::reference::ULOG)]
    Info(InfoArgs),
    /// Print one record of a flight log, by message number or byte offset
    #[command(after_help = super::reference::ULOG)]
    Record(RecordArgs),
    /// Export every topic, every field, to Parquet or CSV (one file per topic instance)
    #[command(after_help = super::reference::ULOG)]
    Export(ExportArgs),
    /// Write the post-sortie report: one self-contained HTML file with plots
    #[command(after_help = super::reference::ULOG)]
    Report(ReportArgs),
    /// List the catalogued runs, one JSON line each, in the order they were flown
    #[command(after_help = super::reference::ULOG)]
    Runs(super::catalog::RunsArgs),
    /// List every parameter change between one vehicle's runs, in order, one JSON line each
    #[command(after_help = super::reference::ULOG)]
    Changes(super::catalog::ChangesArgs),
    /// Look after the run catalog
    #[command(after_help = super::reference::ULOG)]
    Catalog {
        #[command(subcommand)]
        cmd: super::catalog::CatalogCommand,
    },
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Flight logs to export
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Table format, or mcap: one MCAP file per log for Foxglove, `<out>/<log name>.mcap`
    /// (or the --out file itself, for one log and an --out ending in .mcap)
    #[arg(long, value_enum, default_value = "parquet")]
    pub format: super::mcap::ExportFormat,
    /// Parquet page compression: none (fastest) or snappy (about half the size)
    #[arg(long, value_enum, default_value = "none")]
    pub compression: crate::ulog::table::Codec,
    /// Folder for the tables: each log's go to `<out>/<log name>/`
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The flight log (.ulg) to report on
    pub file: PathBuf,
    /// The HTML file to write
    #[arg(long)]
    pub out: PathBuf,
    /// Expected-topic profile: Q4, T4, or a TOML file with `name` and `topics`
    #[arg(long)]
    pub profile: Option<String>,
    /// The ground's records of the sortie (receive logs, events files, .tlog files): drawn as a
    /// ground lane on the plots' time axis, placed as `sortie` places them
    #[arg(long, num_args = 1.., value_name = "GROUND")]
    pub ground: Vec<PathBuf>,
    #[command(flatten)]
    pub ground_options: super::sortie::GroundOptions,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Flight logs to ingest
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Folder for the reports, or `-` to print the JSON
    #[arg(long, default_value = ".")]
    pub out: String,
    /// Folder for quarantined copies and their reason files
    #[arg(long)]
    pub quarantine: Option<PathBuf>,
    /// Expected-topic profile: Q4, T4, or a TOML file with `name` and `topics`
    #[arg(long)]
    pub profile: Option<String>,
    #[command(flatten)]
    pub catalog: super::catalog::IngestCatalogArgs,
}

#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The flight log (.ulg) to summarise
    pub file: PathBuf,
    /// Expected-topic profile: Q4, T4, or a TOML file with `name` and `topics`
    #[arg(long)]
    pub profile: Option<String>,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The flight log (.ulg) holding the record
    pub file: PathBuf,
    /// Message number (1 is the first message after the 16-byte header; 0 is the header)
    #[arg(long, conflicts_with = "offset", required_unless_present = "offset")]
    pub message: Option<u64>,
    /// Byte offset of (or inside) the message
    #[arg(long)]
    pub offset: Option<u64>,
}

/// Runs one `ulog` verb and returns the process exit code.
pub fn run(cmd: UlogCommand) -> anyhow::Result<Exit> {
    match cmd {
        UlogCommand::Ingest(args) => run_ingest(args),
        UlogCommand::Info(args) => run_info(args),
        UlogCommand::Record(args) => run_record(args),
        UlogCommand::Export(args) => run_export(args),
        UlogCommand::Report(args) => run_report(args),
        UlogCommand::Runs(args) => super::catalog::run_runs(args),
        UlogCommand::Changes(args) => super::catalog::run_changes(args),
        UlogCommand::Catalog { cmd } => super::catalog::run_catalog(cmd),
    }
}

fn run_export(args: ExportArgs) -> anyhow::Result<Exit> {
    let format = match args.format.tables() {
        Some(format) => format,
        None => return super::mcap::export_files(&args.files, &args.out),
    };
    let mut exit = Exit::Success;
    crate::ulog::export::export_files(
        &args.files,
        &args.out,
        format,
        args.compression,
        |i, result| exit = exit.worst(report_export(&args.files[i], result)),
    )
    .context("nothing exported")?;
    Ok(exit)
}

/// Prints what the export of `file` did; returns its exit code.
fn report_export(
    file: &std::path::Path,
    result: Result<crate::ulog::export::ExportSummary, crate::ulog::export::ExportError>,
) -> Exit {
    let mut exit = Exit::Success;
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Exit::Failure;
        }
    };
    if let Some(why) = &summary.rejected {
        eprintln!("{}: rejected, nothing exported: {why}", file.display());
        return Exit::Rejected;
    }
    let rows: u64 = summary.topics.iter().map(|(_, n)| n).sum();
    let skipped = summary.skipped_samples();
    println!(
        "{}: {} topic tables ({} rows{}) and {} in {}",
        file.display(),
        summary.topics.len(),
        rows,
        if skipped > 0 {
            format!(", {skipped} samples skipped")
        } else {
            String::new()
        },
        summary.side_tables.join(", "),
        summary.dir.display()
    );
    if skipped > 0 {
        // The log itself is sound (its status, and so the exit code, is unchanged), but
        // these samples are in no table.
        let tables: Vec<String> = summary
            .skipped
            .iter()
            .map(|(name, n)| format!("{name}: {n}"))
            .collect();
        eprintln!(
            "{}: warning: {skipped} samples not exported: their topic's format was redefined after its table was made, and a table has one format ({})",
            file.display(),
            tables.join(", ")
        );
    }
    if rows == 0 && summary.stopped.is_none() && summary.first_malformed.is_none() {
        eprintln!(
            "{}: quarantined: the log has no data (not one logged sample); only empty tables were written",
            file.display()
        );
        exit = exit.worst(Exit::Quarantined);
    }
    if let Some(why) = &summary.stopped {
        eprintln!(
            "{}: quarantined: only the data before the problem was exported: {why}",
            file.display()
        );
        exit = exit.worst(Exit::Quarantined);
    }
    if let Some(first) = &summary.first_malformed {
        eprintln!(
            "{}: quarantined: {} malformed messages were skipped, the first: {first}",
            file.display(),
            summary.malformed
        );
        exit = exit.worst(Exit::Quarantined);
    }
    exit
}

fn run_report(args: ReportArgs) -> anyhow::Result<Exit> {
    let profile = load_profile(args.profile.as_deref())?;
    let lane = if args.ground.is_empty() {
        None
    } else {
        match super::sortie::load(&args.file, &args.ground, &args.ground_options)? {
            Ok(loaded) => Some(crate::sortie::lane::ground_lane(&loaded.sortie)),
            // A refused ground record: nothing is written.
            Err(Exit::Failure) => return Ok(Exit::Failure),
            // The flight log is not complete (said on stderr): its report is still written, as
            // without --ground, with no lane (nothing in it is complete to place).
            Err(_) => None,
        }
    };
    let html = crate::ulog::html::report_file(&args.file, profile.as_ref(), lane.as_ref())?;
    std::fs::write(&args.out, html.html)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("{}", args.out.display());
    Ok(Exit::from(html.status))
}

fn load_profile(name: Option<&str>) -> anyhow::Result<Option<Profile>> {
    name.map(|n| Profile::load(n).with_context(|| format!("loading profile `{n}`")))
        .transpose()
}

fn run_ingest(args: IngestArgs) -> anyhow::Result<Exit> {
    let profile = load_profile(args.profile.as_deref())?;
    let to_stdout = args.out == "-";
    let out_dir = PathBuf::from(&args.out);
    let quarantine_dir = args.quarantine.clone().unwrap_or_else(|| {
        if to_stdout {
            PathBuf::from("quarantine")
        } else {
            out_dir.join("quarantine")
        }
    });
    if !to_stdout {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("creating report folder {}", out_dir.display()))?;
    }
    let mut session =
        super::catalog::IngestSession::start(&args.catalog, (!to_stdout).then_some(&*out_dir))?;
    let mut exit = Exit::Success;
    for file in &args.files {
        let checked = session
            .check_manifest(file)
            .and_then(|rejected| match rejected {
                Some(report) => Ok(report),
                None => ingest_one(file, profile.clone(), &quarantine_dir),
            });
        let report = match checked {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {}: {e:#}", file.display());
                exit = exit.worst(Exit::Failure);
                continue;
            }
        };
        if let Some(reason) = &report.reason {
            // The reason rounds the offset for people; the exact bytes go alongside it.
            let exact = match &report.truncation {
                Some(t) => format!(
                    " (the message starts at byte {}; the file ends at byte {})",
                    t.offset, t.end
                ),
                None => String::new(),
            };
            eprintln!(
                "{}: {}: {reason}{exact}",
                file.display(),
                status_word(report.status)
            );
        }
        let status = report.status;
        let default_path = (!to_stdout).then(|| report_path(&out_dir, file));
        let finished = session.finish(file, report, default_path)?;
        exit = exit.worst(finished.exit);
        let json =
            serde_json::to_string_pretty(&finished.json).context("serialising the report")?;
        if to_stdout {
            println!("{json}");
        } else {
            let path = finished.path.unwrap_or_else(|| report_path(&out_dir, file));
            if let Err(e) = std::fs::write(&path, format!("{json}\n")) {
                eprintln!("error: writing {}: {e}", path.display());
                exit = exit.worst(Exit::Failure);
                continue;
            }
            println!("{}", path.display());
        }
        exit = exit.worst(Exit::from(status));
    }
    Ok(exit)
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Complete => "complete",
        Status::Quarantined => "quarantined",
        Status::Rejected => "rejected",
    }
}

/// `<out>/<log name>.report.json`, the log name being the file name without `.ulg`.
pub fn report_path(out_dir: &Path, log: &Path) -> PathBuf {
    let stem = log
        .file_stem()
        .map_or_else(|| "log".into(), |s| s.to_string_lossy().into_owned());
    out_dir.join(format!("{stem}.report.json"))
}

fn ingest_one(
    file: &Path,
    profile: Option<Profile>,
    quarantine_dir: &Path,
) -> anyhow::Result<Report> {
    let show_progress = std::io::stderr().is_terminal();
    let name = file
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let mut progress = |done: u64, total: u64| {
        let pct = (done * 100).checked_div(total).unwrap_or(100);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{name}: {pct:>3}% of {}", human_size(total));
        if done >= total {
            let _ = writeln!(err);
        }
    };
    let options = IngestOptions {
        profile,
        quarantine_dir: Some(quarantine_dir.to_path_buf()),
        progress: if show_progress {
            Some(&mut progress)
        } else {
            None
        },
    };
    ingest_file_with_sha256(file, options)
}

fn run_info(args: InfoArgs) -> anyhow::Result<Exit> {
    let profile = load_profile(args.profile.as_deref())?;
    let options = IngestOptions {
        profile,
        quarantine_dir: None,
        progress: None,
    };
    let report = ingest_file(&args.file, options)?;
    print!("{}", crate::ulog::summary::render(&report));
    Ok(Exit::from(report.status))
}

fn run_record(args: RecordArgs) -> anyhow::Result<Exit> {
    let target = match (args.message, args.offset) {
        (Some(n), _) => Target::Message(n),
        (None, Some(b)) => Target::Offset(b),
        (None, None) => anyhow::bail!("give --message N or --offset B"),
    };
    let file = std::fs::File::open(&args.file)
        .with_context(|| format!("opening {}", args.file.display()))?;
    match inspect(file, target) {
        Ok(text) => {
            print!("{text}");
            Ok(Exit::Success)
        }
        Err(e) => {
            eprintln!("error: {}: {e}", args.file.display());
            Ok(Exit::from(&e))
        }
    }
}
