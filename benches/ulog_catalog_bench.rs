//! The run catalog's cost on the ingest (issue 27): the corpus ingested the way `ulog ingest`
//! does it (read, report, JSON written to a file), side by side in every round:
//!
//! - **before**: the ingest as it was before the catalog (no SHA-256);
//! - **sha256**: with the file's SHA-256 taken in the same pass and the report's new keys
//!   (`vehicle`, ...), no catalog: what every `ulog ingest` now does;
//! - **catalog**: that, plus each run recorded in a new catalog (opened once per round, as one
//!   `ulog ingest` command opens it), its previous run found and the changes computed;
//! - **again**: the same logs once more into that catalog (same bytes: nothing recorded).
//!
//! Then a large log made by the project's writer (`FOXBORNE_BENCH_BYTES`, default 1.1 GB; 0
//! skips it; written in `FOXBORNE_BENCH_DIR`, default the temp folder, and deleted) through the
//! first three modes once each, where SHA-256 is slower than the ingest.
//!
//! Run: `cargo bench --bench ulog_catalog_bench` (`-- ROUNDS`, default 7). The median round of
//! each mode is reported, with its ratio to `before`.

#[path = "ulog_common/mod.rs"]
mod ulog_common;

use foxborne_receiver::cmd::catalog::{CatalogArgs, IngestCatalogArgs, IngestSession};
use foxborne_receiver::cmd::ulog::report_path;
use foxborne_receiver::cmd::Exit;
use foxborne_receiver::ulog::digest::sha256_hex;
use foxborne_receiver::ulog::ingest::{ingest_file, ingest_file_with_sha256, IngestOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;
use ulog_common::{bench_dir, big_log_bytes, corpus_logs, write_big_log};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Before,
    Sha256,
    Catalog,
    Again,
}

const MODES: [Mode; 4] = [Mode::Before, Mode::Sha256, Mode::Catalog, Mode::Again];

fn options(quarantine: &Path) -> IngestOptions<'static> {
    IngestOptions {
        profile: None,
        quarantine_dir: Some(quarantine.to_path_buf()),
        progress: None,
    }
}

fn session(catalog: Option<PathBuf>, out: &Path) -> IngestSession {
    let args = IngestCatalogArgs {
        location: CatalogArgs {
            catalog,
            config: None,
        },
        names: None,
        manifest: None,
    };
    IngestSession::start(&args, Some(out)).expect("session")
}

/// One mode over every log: the time of each log, and the whole.
fn round(mode: Mode, logs: &[PathBuf], dir: &Path, catalog: &Path) -> (f64, Vec<f64>) {
    let out = dir.join(format!("{mode:?}"));
    std::fs::create_dir_all(&out).unwrap();
    let quarantine = out.join("quarantine");
    let t0 = Instant::now();
    let mut session = match mode {
        Mode::Before => None,
        Mode::Sha256 => Some(session(None, &out)),
        Mode::Catalog | Mode::Again => Some(session(Some(catalog.to_path_buf()), &out)),
    };
    let mut each = Vec::with_capacity(logs.len());
    for log in logs {
        let t = Instant::now();
        let path = report_path(&out, log);
        let json = match session.as_mut() {
            None => {
                let report = ingest_file(log, options(&quarantine)).expect("ingest");
                serde_json::to_string_pretty(&report).unwrap()
            }
            Some(s) => {
                let report = ingest_file_with_sha256(log, options(&quarantine)).expect("ingest");
                let finished = s.finish(log, report, Some(path.clone())).expect("finish");
                assert_eq!(finished.exit, Exit::Success, "{}", log.display());
                serde_json::to_string_pretty(&finished.json).unwrap()
            }
        };
        std::fs::write(&path, format!("{json}\n")).unwrap();
        each.push(t.elapsed().as_secs_f64());
    }
    drop(session);
    (t0.elapsed().as_secs_f64(), each)
}

/// The large log once through `before`, `sha256` and `catalog`.
fn large_log(scratch: &Path) {
    let target = big_log_bytes();
    if target == 0 {
        return;
    }
    let path = bench_dir().join(format!("foxborne-catalog-bench-{}.ulg", std::process::id()));
    let size = write_big_log(&path, target).expect("writing the large log");
    let logs = [path.clone()];
    println!();
    println!("### A large log: {size} bytes written by the project's writer, once per mode");
    println!();
    println!("| mode | wall time | throughput | against before |");
    println!("| --- | ---: | ---: | ---: |");
    let catalog = scratch.join("large/catalog.sqlite");
    let mut before = 0.0;
    for mode in [Mode::Before, Mode::Sha256, Mode::Catalog] {
        let (t, _) = round(mode, &logs, &scratch.join("large"), &catalog);
        if mode == Mode::Before {
            before = t;
        }
        println!(
            "| {} | {:.2} s | {:.0} MB/s | {:.2}x |",
            format!("{mode:?}").to_lowercase(),
            t,
            size as f64 / t / 1e6,
            t / before
        );
    }
    let _ = std::fs::remove_file(&path);
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(7);
    let logs = corpus_logs();
    if logs.is_empty() {
        println!("corpus not found: nothing to measure");
        return;
    }
    let bytes: u64 = logs
        .iter()
        .map(|l| std::fs::metadata(l).unwrap().len())
        .sum();
    let scratch = tempfile::tempdir().unwrap();
    let mut totals: Vec<Vec<f64>> = vec![Vec::new(); MODES.len()];
    let mut per_log: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); logs.len()]; MODES.len()];
    let mut catalog_size = 0;
    for r in 0..rounds {
        let dir = scratch.path().join(format!("round{r}"));
        let catalog = dir.join("catalog.sqlite");
        for (m, mode) in MODES.iter().enumerate() {
            let (total, each) = round(*mode, &logs, &dir, &catalog);
            totals[m].push(total);
            for (i, t) in each.into_iter().enumerate() {
                per_log[m][i].push(t);
            }
        }
        catalog_size = std::fs::metadata(&catalog).unwrap().len();
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let before = median(totals[0].clone());
    println!(
        "### The corpus ({} logs, {bytes} bytes) through the ingest, median of {rounds} rounds",
        logs.len()
    );
    println!();
    println!("| mode | wall time | throughput | against before |");
    println!("| --- | ---: | ---: | ---: |");
    for (m, mode) in MODES.iter().enumerate() {
        let t = median(totals[m].clone());
        println!(
            "| {} | {:.1} ms | {:.0} MB/s | {:.2}x |",
            format!("{mode:?}").to_lowercase(),
            t * 1e3,
            bytes as f64 / t / 1e6,
            t / before
        );
    }
    // The per-byte part of the new cost: SHA-256 alone over the corpus in memory.
    let contents: Vec<Vec<u8>> = logs.iter().map(|l| std::fs::read(l).unwrap()).collect();
    let hashing = median(
        (0..rounds)
            .map(|_| {
                let t = Instant::now();
                for c in &contents {
                    std::hint::black_box(sha256_hex(&c[..]).unwrap());
                }
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    println!();
    println!(
        "SHA-256 alone over the same bytes in memory: {:.1} ms ({:.0} MB/s).",
        hashing * 1e3,
        bytes as f64 / hashing / 1e6
    );
    println!();
    println!("Catalog after one corpus: {catalog_size} bytes.");
    println!();
    println!("| log | size | before | sha256 | catalog | again | catalog / before |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (i, log) in logs.iter().enumerate() {
        let t: Vec<f64> = (0..MODES.len())
            .map(|m| median(per_log[m][i].clone()))
            .collect();
        println!(
            "| {} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2}x |",
            log.file_name().unwrap().to_string_lossy(),
            std::fs::metadata(log).unwrap().len(),
            t[0] * 1e3,
            t[1] * 1e3,
            t[2] * 1e3,
            t[3] * 1e3,
            t[2] / t[0]
        );
    }
    large_log(scratch.path());
}
