//! The run catalog's side of the `ulog` verbs: `ulog runs`, `ulog changes`, `ulog catalog
//! rebuild`, and what `ulog ingest` does with `--catalog` (or `--config`), `--names` and
//! `--manifest`: the manifest check before a log is read, and each report's `manifest`,
//! `vehicle`, `run`, `changes` and `other_changes`. The thin shell around `crate::catalog`: it
//! reads the files and the clock, and prints.

use super::{Exit, UsageError};
use crate::catalog::changes::{run_id, Change, RunRef, Worded};
use crate::catalog::facts::{utc_text, RunFacts};
use crate::catalog::manifest::{Entry, Lookup, Manifest};
use crate::catalog::rebuild::{rebuild, recover, Rebuilt, Recovery};
use crate::catalog::store::{Catalog, Placement, Recorded, RunRow, StoreError};
use crate::catalog::vehicle::{Identity, Names};
use crate::config::Config;
use crate::ulog::digest::sha256_hex;
use crate::ulog::report::{Report, Status};
use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The catalog's file name in the data directory.
pub const CATALOG_FILE: &str = "catalog.sqlite";

/// Where the catalog is.
#[derive(Debug, Clone, Args)]
pub struct CatalogArgs {
    /// The run catalog, an SQLite file (default with --config: <data_dir>/catalog.sqlite)
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// A daemon config: its data_dir holds the catalog, its [gap] vehicles name vehicles by MAV_SYS_ID
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl CatalogArgs {
    fn config(&self) -> anyhow::Result<Option<Config>> {
        self.config
            .as_deref()
            .map(|p| Config::load(p).with_context(|| format!("reading {}", p.display())))
            .transpose()
    }

    fn path(&self, config: Option<&Config>) -> Option<PathBuf> {
        self.catalog
            .clone()
            .or_else(|| config.map(|c| c.data_dir.join(CATALOG_FILE)))
    }

    /// The catalog of a verb that needs one.
    fn required(&self) -> anyhow::Result<(PathBuf, Option<Config>)> {
        let config = self.config()?;
        let path = self.path(config.as_ref()).ok_or_else(|| {
            UsageError(
                "give the catalog: --catalog FILE, or --config FILE for <data_dir>/catalog.sqlite"
                    .into(),
            )
        })?;
        Ok((path, config))
    }
}

/// What `ulog ingest` takes for the catalog and the manifest.
#[derive(Debug, Clone, Args)]
pub struct IngestCatalogArgs {
    #[command(flatten)]
    pub location: CatalogArgs,
    /// Range names for the logs' vehicles: a TOML file of [[vehicle]] tables (see docs/ulog.md)
    #[arg(long, value_name = "FILE")]
    pub names: Option<PathBuf>,
    /// Check each log against this SHA-256 manifest (sha256sum format) before reading it: a file whose digest differs, or that it does not list, is rejected (exit 4)
    #[arg(long, value_name = "SHA256SUMS")]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub location: CatalogArgs,
    /// Only this vehicle's runs: its range name, its identity or its sys_uuid
    #[arg(long)]
    pub vehicle: Option<String>,
}

#[derive(Debug, Args)]
pub struct ChangesArgs {
    #[command(flatten)]
    pub location: CatalogArgs,
    /// The vehicle: its range name, its identity or its sys_uuid
    #[arg(long)]
    pub vehicle: String,
    /// Only the failsafe parameters
    #[arg(long)]
    pub failsafe: bool,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Make the catalog again from the ingest reports on disk (it is a cache of them)
    #[command(after_help = super::reference::ULOG)]
    Rebuild(RebuildArgs),
}

#[derive(Debug, Args)]
pub struct RebuildArgs {
    #[command(flatten)]
    pub location: CatalogArgs,
    /// Folders holding ingest reports (*.report.json), as `ulog ingest --out` wrote them
    #[arg(long = "reports", value_name = "DIR", required = true, num_args = 1..)]
    pub reports: Vec<PathBuf>,
    /// Name the vehicles again from this names file (default: the names in the reports)
    #[arg(long, value_name = "FILE")]
    pub names: Option<PathBuf>,
}

fn load_names(file: Option<&Path>, config: Option<(&Config, &Path)>) -> anyhow::Result<Names> {
    let mut names = match file {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("reading names file {}", f.display()))?;
            Names::parse(&text, &f.display().to_string())?
        }
        None => Names::default(),
    };
    if let Some((config, path)) = config {
        names.add_by_system_id(
            &config.gap.vehicles,
            &format!("gap.vehicles in {}", path.display()),
        );
    }
    Ok(names)
}

fn config_with_path<'c>(
    args: &'c CatalogArgs,
    config: &'c Option<Config>,
) -> Option<(&'c Config, &'c Path)> {
    config.as_ref().zip(args.config.as_deref())
}

/// `ulog runs`: one JSON line per run, in history order.
pub fn run_runs(args: RunsArgs) -> anyhow::Result<Exit> {
    let catalog = open_existing(&args.location)?;
    let mut out = std::io::stdout().lock();
    for run in catalog.runs(args.vehicle.as_deref())? {
        let (findings, parameters) = catalog.run_counts(run.id)?;
        let s = &run.summary;
        let vehicle = s.vehicle.as_ref();
        let line = json!({
            "run": run_id(run.id),
            "vehicle": vehicle.map(|v| &v.name),
            "identity": vehicle.map(|v| &v.identity),
            "named_by": vehicle.and_then(|v| v.named_by.as_ref()),
            "status": s.status,
            "reason": s.reason,
            "file": s.file,
            "sha256": s.sha256,
            "size_bytes": s.size_bytes,
            "start_utc": s.start_utc_us.and_then(utc_text),
            "duration_s": s.duration_s,
            "ingested_utc": utc_text(run.ingested_utc_us),
            "findings": findings,
            "parameters": parameters,
            "report": run.report,
        });
        writeln!(out, "{line}")?;
    }
    Ok(Exit::Success)
}

/// `ulog changes`: every parameter change between the vehicle's runs, in order, one JSON line
/// each (failsafe parameters first within a run).
pub fn run_changes(args: ChangesArgs) -> anyhow::Result<Exit> {
    let catalog = open_existing(&args.location)?;
    let mut out = std::io::stdout().lock();
    for step in catalog.history(&args.vehicle)? {
        let (previous, run) = (run_ref(&step.previous), run_ref(&step.run));
        let others = if args.failsafe {
            &[][..]
        } else {
            &step.diff.other[..]
        };
        let listed = step
            .diff
            .failsafe
            .iter()
            .map(|c| (true, c))
            .chain(others.iter().map(|c| (false, c)));
        for (failsafe, change) in listed {
            let mut line = serde_json::to_value(Worded::new(change, &previous, &run))?;
            line["vehicle"] = json!(step.run.summary.vehicle.as_ref().map(|v| &v.name));
            line["failsafe"] = json!(failsafe);
            writeln!(out, "{line}")?;
        }
    }
    Ok(Exit::Success)
}

/// `ulog catalog ...`.
pub fn run_catalog(cmd: CatalogCommand) -> anyhow::Result<Exit> {
    match cmd {
        CatalogCommand::Rebuild(args) => {
            let (path, config) = args.location.required()?;
            // Only --names names the vehicles again: a rebuild given --config for the catalog's
            // place keeps the names the reports were written with.
            let names = match &args.names {
                None => None,
                Some(file) => Some(load_names(
                    Some(file),
                    config_with_path(&args.location, &config),
                )?),
            };
            let rebuilt = rebuild(&path, &args.reports, names.as_ref())?;
            let dirs: Vec<String> = args
                .reports
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            print_skipped(&rebuilt);
            println!(
                "catalog {} rebuilt from {} reports in {}: {} runs",
                path.display(),
                rebuilt.reports,
                dirs.join(", "),
                rebuilt.runs
            );
            Ok(Exit::Success)
        }
    }
}

fn print_skipped(rebuilt: &Rebuilt) {
    for (report, why) in &rebuilt.skipped {
        eprintln!("{}: left out of the catalog: it {why}", report.display());
    }
}

fn open_existing(location: &CatalogArgs) -> anyhow::Result<Catalog> {
    let (path, _) = location.required()?;
    if !path.exists() {
        anyhow::bail!(
            "no catalog at {} (ulog ingest --catalog makes one)",
            path.display()
        );
    }
    Ok(Catalog::open(&path)?)
}

fn run_ref(run: &RunRow) -> RunRef {
    RunRef {
        id: run.id,
        start_utc_us: run.summary.start_utc_us,
    }
}

/// What the manifest said of one file.
#[derive(Debug, Clone)]
struct ManifestCheck {
    entry: Option<Entry>,
    matched_by: Option<&'static str>,
    actual: String,
}

impl ManifestCheck {
    fn matches(&self) -> bool {
        self.entry.as_ref().is_some_and(|e| e.sha256 == self.actual)
    }
}

/// A report ready to be written.
pub struct Finished {
    pub json: Value,
    /// Where to write it, when not where it would go by its name.
    pub path: Option<PathBuf>,
    /// A failure when the catalog could not record it, or the file changed while it was read
    /// (the report is still written).
    pub exit: Exit,
}

/// The catalog and manifest over one `ulog ingest`.
pub struct IngestSession {
    manifest: Option<Manifest>,
    checks: HashMap<PathBuf, ManifestCheck>,
    names: Names,
    catalog: Option<OpenCatalog>,
}

struct OpenCatalog {
    path: PathBuf,
    /// `None` while it is being recovered.
    open: Option<Catalog>,
    /// Where reports are written, to rebuild from.
    report_dirs: Vec<PathBuf>,
}

impl IngestSession {
    /// Reads the manifest and the names, and opens the catalog (a damaged one is set aside and
    /// rebuilt from the reports in `report_dir`). A catalog of another schema version stops the
    /// ingest before anything is read.
    pub fn start(
        args: &IngestCatalogArgs,
        report_dir: Option<&Path>,
    ) -> anyhow::Result<IngestSession> {
        let config = args.location.config()?;
        let names = load_names(
            args.names.as_deref(),
            config_with_path(&args.location, &config),
        )?;
        let manifest = match &args.manifest {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading manifest {}", path.display()))?;
                let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
                let dir = std::fs::canonicalize(dir.unwrap_or(Path::new(".")))
                    .with_context(|| format!("finding the folder of {}", path.display()))?;
                Some(Manifest::parse(&text, &path.display().to_string(), &dir)?)
            }
            None => None,
        };
        let catalog = match args.location.path(config.as_ref()) {
            Some(path) => {
                let report_dirs: Vec<PathBuf> = report_dir
                    .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()))
                    .into_iter()
                    .collect();
                let mut c = OpenCatalog {
                    path,
                    open: None,
                    report_dirs,
                };
                c.reopen()?;
                Some(c)
            }
            None => None,
        };
        Ok(IngestSession {
            manifest,
            checks: HashMap::new(),
            names,
            catalog,
        })
    }

    /// With `--manifest`: hashes `file` and checks it against the manifest before it is read.
    /// `Some` is the report of a file the manifest rejects.
    pub fn check_manifest(&mut self, file: &Path) -> anyhow::Result<Option<Report>> {
        let Some(manifest) = &self.manifest else {
            return Ok(None);
        };
        let open =
            || std::fs::File::open(file).with_context(|| format!("opening {}", file.display()));
        let actual = sha256_hex(std::io::BufReader::with_capacity(1 << 20, open()?))
            .with_context(|| format!("reading {}", file.display()))?;
        let size = open()?.metadata().map(|m| m.len()).unwrap_or(0);
        let absolute = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        let (entry, matched_by, shared) = match manifest.lookup(&absolute) {
            Lookup::ByPath(e) => (Some(e.clone()), Some("path"), Vec::new()),
            Lookup::ByName(e) => (Some(e.clone()), Some("file name"), Vec::new()),
            Lookup::NotListed { same_name } => {
                (None, None, same_name.into_iter().map(|e| e.line).collect())
            }
        };
        let check = ManifestCheck {
            entry,
            matched_by,
            actual: actual.clone(),
        };
        let reason = match &check.entry {
            Some(_) if check.matches() => None,
            Some(e) => Some(format!(
                "The file's SHA-256 differs from the manifest's: {} line {} lists {} as {}; the file's is {actual}. The file was not read.",
                manifest.file, e.line, e.name, e.sha256
            )),
            None if shared.is_empty() => Some(format!(
                "The manifest {} does not list this file (its SHA-256 is {actual}). The file was not read.",
                manifest.file
            )),
            None => Some(format!(
                "The manifest {} does not list this file by its path, and lists its name more than once (lines {}), so it cannot tell which is meant (the file's SHA-256 is {actual}). The file was not read.",
                manifest.file,
                shared.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
            )),
        };
        self.checks.insert(file.to_path_buf(), check);
        Ok(reason.map(|reason| {
            let mut report =
                Report::empty(&file.display().to_string(), Status::Rejected, Some(reason));
            report.size_bytes = size;
            report.sha256 = Some(actual);
            report
        }))
    }

    /// The report's JSON with what the session adds, the catalog's record of it made.
    /// `report_path` is where the report would go (`None` with `--out -`).
    pub fn finish(
        &mut self,
        file: &Path,
        report: Report,
        report_path: Option<PathBuf>,
    ) -> anyhow::Result<Finished> {
        let mut exit = Exit::Success;
        let check = self.checks.remove(file);
        if let (Some(c), Some(read)) = (&check, &report.sha256) {
            if c.matches() && *read != c.actual {
                eprintln!(
                    "error: {}: the file changed while it was read: its SHA-256 was {} when checked against the manifest and {read} when read",
                    file.display(),
                    c.actual
                );
                exit = Exit::Failure;
            }
        }
        let rejected_by_manifest = check.as_ref().is_some_and(|c| !c.matches());
        let mut json = serde_json::to_value(&report).context("serialising the report")?;
        json["manifest"] = match (&check, &self.manifest) {
            (Some(c), Some(m)) => json!({
                "file": m.file,
                "entry": c.entry.as_ref().map(|e| &e.name),
                "line": c.entry.as_ref().map(|e| e.line),
                "matched_by": c.matched_by,
                "sha256": c.entry.as_ref().map(|e| &e.sha256),
                "matches": c.matches() && report.sha256.as_deref() == Some(c.actual.as_str()),
            }),
            _ => Value::Null,
        };
        json["vehicle"] = json!(Identity::from_report(&json).map(|id| self.names.resolve(&id)));
        json["run"] = Value::Null;
        json["changes"] = Value::Null;
        json["other_changes"] = Value::Null;
        let mut path = None;
        if let (Some(catalog), false) = (&mut self.catalog, rejected_by_manifest) {
            let report_path = report_path.map(|p| beside_other_run(p, &json));
            if let Some((p, true)) = &report_path {
                path = Some(p.clone());
            }
            match catalog.record(file, &json, report_path.map(|(p, _)| p)) {
                Ok(recorded) => add_run(&mut json, file, &recorded, &catalog.path),
                Err(e) => {
                    eprintln!("error: {}: not catalogued: {e:#}", file.display());
                    exit = Exit::Failure;
                }
            }
        }
        Ok(Finished { json, path, exit })
    }
}

/// Where a report goes with a catalog: by its log's name, unless a report of another file of
/// that name is there already (it is another run's only copy): then beside it, named with the
/// start of its SHA-256. The flag says it moved.
fn beside_other_run(path: PathBuf, json: &Value) -> (PathBuf, bool) {
    let there: Option<Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let ours = json["sha256"].as_str().unwrap_or_default();
    match there {
        Some(other) if other["sha256"].as_str().is_some_and(|s| s != ours) => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let stem = name.strip_suffix(".report.json").unwrap_or(&name);
            let moved = path.with_file_name(format!(
                "{stem}.{}.report.json",
                &ours[..ours.len().min(12)]
            ));
            (moved, true)
        }
        _ => (path, false),
    }
}

impl OpenCatalog {
    /// Opens the catalog again, setting it aside and rebuilding it when it is damaged.
    fn reopen(&mut self) -> anyhow::Result<()> {
        self.open = None;
        match Catalog::open(&self.path) {
            Ok(c) => {
                self.open = Some(c);
                return Ok(());
            }
            Err(e) if e.is_corrupt() => self.recover(&e)?,
            Err(e) => return Err(e.into()),
        }
        self.open = Some(Catalog::open(&self.path)?);
        Ok(())
    }

    fn recover(&mut self, damage: &StoreError) -> anyhow::Result<()> {
        self.open = None;
        // The reports name their vehicles already: the rebuild keeps those names.
        match recover(&self.path, &self.report_dirs, None)? {
            Recovery::AlreadyDone => eprintln!(
                "{damage}: another ingest set it aside and rebuilt it; this ingest goes on"
            ),
            Recovery::Rebuilt { set_aside, rebuilt } => {
                print_skipped(&rebuilt);
                let from = if self.report_dirs.is_empty() {
                    "no reports (this ingest writes none to disk)".to_string()
                } else {
                    format!(
                        "the {} reports in {}",
                        rebuilt.reports,
                        self.report_dirs
                            .iter()
                            .map(|d| d.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                eprintln!(
                    "{damage}: set aside as {} and rebuilt from {from} ({} runs; add reports kept elsewhere with `ulog catalog rebuild --reports DIR...`); this ingest goes on",
                    set_aside.display(),
                    rebuilt.runs
                );
            }
        }
        Ok(())
    }

    /// Records one report, recovering once from a catalog found damaged on the way.
    fn record(
        &mut self,
        file: &Path,
        json: &Value,
        report: Option<PathBuf>,
    ) -> anyhow::Result<Recorded> {
        let facts = RunFacts::from_report(json)
            .with_context(|| format!("the report of {}", file.display()))?;
        let placement = Placement {
            id: None,
            ingested_utc_us: chrono::Utc::now().timestamp_micros(),
            report: report.map(|p| {
                let dir = p.parent().and_then(|d| std::fs::canonicalize(d).ok());
                match (dir, p.file_name()) {
                    (Some(d), Some(n)) => d.join(n).display().to_string(),
                    _ => p.display().to_string(),
                }
            }),
        };
        for attempt in 0..2 {
            let catalog = match &mut self.open {
                Some(c) => c,
                None => {
                    self.reopen()?;
                    self.open.as_mut().expect("reopened")
                }
            };
            match catalog.record(&facts, &placement) {
                Ok(r) => return Ok(r),
                Err(e) if e.is_corrupt() && attempt == 0 => self.recover(&e)?,
                Err(e) => return Err(e.into()),
            }
        }
        unreachable!("the second attempt returns")
    }
}

fn plain_change(c: &Change) -> Value {
    json!({"parameter": c.parameter, "from": c.from, "to": c.to})
}

/// The report's `run`, `changes` and `other_changes`; what is worth saying goes to stderr.
fn add_run(json: &mut Value, file: &Path, recorded: &Recorded, catalog: &Path) {
    let run = &recorded.run;
    let this = run_ref(run);
    let shown = file.display();
    let mut notes = Vec::new();
    if !recorded.new {
        notes.push(format!(
            "These bytes are catalogued already as {} (same SHA-256): nothing changed.",
            run_id(run.id)
        ));
    }
    for other in &recorded.same_name {
        notes.push(format!(
            "A different file named {} is run {} (SHA-256 {}); this one is a new run, {}.",
            run.summary.file_name,
            run_id(other.id),
            other.summary.sha256,
            run_id(run.id)
        ));
    }
    if let Some(later) = &recorded.overtaken {
        notes.push(format!(
            "{} started before {}, which was ingested earlier: {}'s changes now count from {} (ulog changes lists them).",
            run_id(run.id),
            run_id(later.id),
            run_id(later.id),
            run_id(run.id)
        ));
    }
    let (changes, others) = match &recorded.previous {
        Some((previous, diff)) => {
            let before = run_ref(previous);
            let changes: Vec<Worded> = diff
                .failsafe
                .iter()
                .map(|c| Worded::new(c, &before, &this))
                .collect();
            for c in &changes {
                eprintln!(
                    "{shown}: failsafe parameter changed since {}: {}",
                    c.previous_run, c.text
                );
            }
            (
                changes,
                diff.other.iter().map(plain_change).collect::<Vec<_>>(),
            )
        }
        None => (Vec::new(), Vec::new()),
    };
    for note in &notes {
        eprintln!("{shown}: {note}");
    }
    json["run"] = json!({
        "id": run_id(run.id),
        "catalog": std::fs::canonicalize(catalog).unwrap_or_else(|_| catalog.to_path_buf()),
        "new": recorded.new,
        "ingested_utc": utc_text(run.ingested_utc_us),
        "start_utc": run.summary.start_utc_us.and_then(utc_text),
        "duration_s": run.summary.duration_s,
        "previous": recorded.previous.as_ref().map(|(p, _)| json!({
            "id": run_id(p.id),
            "file": p.summary.file,
            "sha256": p.summary.sha256,
            "start_utc": p.summary.start_utc_us.and_then(utc_text),
        })),
        "notes": notes,
    });
    json["changes"] = json!(changes);
    json["other_changes"] = json!({"count": others.len(), "parameters": others});
}
