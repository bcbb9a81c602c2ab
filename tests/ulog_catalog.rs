//! The run catalog through the built binary (issue 27): three logs of one vehicle in order give
//! the document's changes; two ingests at once into one catalog, with a reader running beside
//! them; the same bytes twice and another file of the same name; a manifest that disagrees and
//! one that leaves a file out (digests checked against coreutils' `sha256sum`); a catalog cut
//! short set aside and rebuilt; a catalog of a newer schema refused; `ulog catalog rebuild`
//! giving back the same runs.
//!
//! The logs of one vehicle are a corpus log and two derived from it with the project's writer,
//! NAV_DLL_ACT (and one other parameter) changed in their definitions.

mod common;

use foxborne_receiver::ulog::writer::UlogWriter;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The anchored corpus log the vehicle's runs are made from (GPS UTC 2021-04-21, a sys_uuid,
/// NAV_DLL_ACT 2, RTL_RETURN_ALT 60).
const BASE_LOG: &str = "pyulog_sample_log_small.ulg";
const BASE_UUID: &str = "000600000000383638393239510d0035002d";

fn binary(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Command {
    let mut c = Command::new(common::binary());
    c.args(args);
    c
}

fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    binary(args).output().expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lines(o: &Output) -> Vec<Value> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// A parameter value to write instead of the log's own.
enum Set {
    Int(i32),
    Float(f32),
}

/// `src` message by message through the project's writer, with the named parameters set to
/// new values (the messages keep their size, so nothing else moves).
fn derive(src: &Path, dst: &Path, set: &[(&str, Set)]) {
    let bytes = std::fs::read(src).unwrap();
    let start = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
    let mut w = UlogWriter::with_version(Vec::new(), bytes[7], start).unwrap();
    let mut at = 16;
    let mut replaced = 0;
    while at + 3 <= bytes.len() {
        let size = usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
        let msg_type = bytes[at + 2];
        let payload = &bytes[at + 3..at + 3 + size];
        at += 3 + size;
        if msg_type == b'P' {
            let key_len = usize::from(payload[0]);
            let key = std::str::from_utf8(&payload[1..1 + key_len]).unwrap();
            let name = key.split_once(' ').unwrap().1;
            if let Some((_, value)) = set.iter().find(|(n, _)| *n == name) {
                match value {
                    Set::Int(v) => w.parameter_i32(name, *v).unwrap(),
                    Set::Float(v) => w.parameter_f32(name, *v).unwrap(),
                }
                replaced += 1;
                continue;
            }
        }
        w.raw(msg_type, payload).unwrap();
    }
    assert_eq!(
        at,
        bytes.len(),
        "the copy reached the end of {}",
        src.display()
    );
    assert_eq!(replaced, set.len(), "every parameter to set is in the log");
    std::fs::write(dst, w.into_inner()).unwrap();
}

/// The three runs of UGV-05: the corpus log (NAV_DLL_ACT 2), then NAV_DLL_ACT 0 with
/// RTL_RETURN_ALT 80, then NAV_DLL_ACT 1 with RTL_RETURN_ALT back at 60.
fn three_runs(dir: &Path) -> [PathBuf; 3] {
    let base = common::corpus_file("ulog", BASE_LOG);
    let logs = [dir.join("r1.ulg"), dir.join("r2.ulg"), dir.join("r3.ulg")];
    std::fs::copy(&base, &logs[0]).unwrap();
    derive(
        &base,
        &logs[1],
        &[
            ("NAV_DLL_ACT", Set::Int(0)),
            ("RTL_RETURN_ALT", Set::Float(80.0)),
        ],
    );
    derive(&base, &logs[2], &[("NAV_DLL_ACT", Set::Int(1))]);
    logs
}

fn names_file(dir: &Path) -> PathBuf {
    let path = dir.join("vehicles.toml");
    std::fs::write(
        &path,
        format!("# range names\n[[vehicle]]\nname = \"UGV-05\"\nsys_uuid = \"{BASE_UUID}\"\n"),
    )
    .unwrap();
    path
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn three_logs_of_one_vehicle_in_order_give_the_documents_changes() {
    let dir = common::scratch("catalog-three");
    let logs = three_runs(&dir);
    let names = names_file(&dir);
    let (out, catalog) = (dir.join("reports"), dir.join("data/catalog.sqlite"));
    for log in &logs {
        let o = run(&[
            &"ulog",
            &"ingest",
            log,
            &"--out",
            &out,
            &"--catalog",
            &catalog,
            &"--names",
            &names,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let report = |n: &str| read_json(&out.join(format!("{n}.report.json")));
    let (r1, r2, r3) = (report("r1"), report("r2"), report("r3"));
    assert_eq!(r1["vehicle"]["name"], "UGV-05");
    assert_eq!(
        r1["vehicle"]["named_by"],
        format!("{} line 2", names.display())
    );
    assert_eq!(r1["run"]["id"], "R-0001");
    assert_eq!(r1["run"]["previous"], Value::Null);
    assert_eq!(r1["changes"], serde_json::json!([]));
    assert_eq!(
        r1["run"]["start_utc"].as_str().unwrap()[..10],
        *"2021-04-21"
    );

    assert_eq!(r2["run"]["previous"]["id"], "R-0001");
    let c2 = r2["changes"].as_array().unwrap();
    assert_eq!(c2.len(), 1, "{c2:?}");
    assert_eq!(c2[0]["parameter"], "NAV_DLL_ACT");
    assert_eq!(
        (c2[0]["from"].clone(), c2[0]["to"].clone()),
        (2.into(), 0.into())
    );
    assert_eq!(c2[0]["previous_run"], "R-0001");
    assert_eq!(
        c2[0]["text"],
        "NAV_DLL_ACT 2 (Return) to 0 (Disabled) in R-0002, 21 Apr"
    );
    assert_eq!(r2["other_changes"]["count"], 1);
    assert_eq!(
        r2["other_changes"]["parameters"][0]["parameter"],
        "RTL_RETURN_ALT"
    );
    assert_eq!(r2["other_changes"]["parameters"][0]["to"], 80.0);

    let c3 = r3["changes"].as_array().unwrap();
    assert_eq!(c3.len(), 1);
    // The document's own example, on this vehicle's third run.
    assert_eq!(
        c3[0]["text"],
        "NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in R-0003, 21 Apr"
    );
    assert_eq!(
        (c3[0]["from_label"].clone(), c3[0]["to_label"].clone()),
        ("Disabled".into(), "Hold".into())
    );
    assert_eq!(
        r3["other_changes"]["parameters"][0]["from"], 80.0,
        "RTL_RETURN_ALT back to 60"
    );

    let changes = run(&[
        &"ulog",
        &"changes",
        &"--vehicle",
        &"UGV-05",
        &"--catalog",
        &catalog,
    ]);
    assert!(changes.status.success(), "{}", stderr(&changes));
    let listed: Vec<(String, String, bool)> = lines(&changes)
        .iter()
        .map(|c| {
            (
                c["run"].as_str().unwrap().to_string(),
                c["parameter"].as_str().unwrap().to_string(),
                c["failsafe"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("R-0002".into(), "NAV_DLL_ACT".into(), true),
            ("R-0002".into(), "RTL_RETURN_ALT".into(), false),
            ("R-0003".into(), "NAV_DLL_ACT".into(), true),
            ("R-0003".into(), "RTL_RETURN_ALT".into(), false),
        ]
    );
    let failsafe = run(&[
        &"ulog",
        &"changes",
        &"--vehicle",
        &BASE_UUID,
        &"--catalog",
        &catalog,
        &"--failsafe",
    ]);
    assert_eq!(lines(&failsafe).len(), 2, "by sys_uuid, failsafe only");

    let runs = run(&[
        &"ulog",
        &"runs",
        &"--vehicle",
        &"UGV-05",
        &"--catalog",
        &catalog,
    ]);
    let runs = lines(&runs);
    assert_eq!(runs.len(), 3);
    assert!(runs
        .iter()
        .all(|r| r["vehicle"] == "UGV-05" && r["parameters"] == 980));

    // The catalog is a cache of the reports: made again from them, it holds the same runs.
    std::fs::remove_file(&catalog).unwrap();
    let rebuilt = run(&[
        &"ulog",
        &"catalog",
        &"rebuild",
        &"--catalog",
        &catalog,
        &"--reports",
        &out,
    ]);
    assert!(rebuilt.status.success(), "{}", stderr(&rebuilt));
    assert!(String::from_utf8_lossy(&rebuilt.stdout).contains("rebuilt from 3 reports"));
    let again = lines(&run(&[
        &"ulog",
        &"runs",
        &"--vehicle",
        &"UGV-05",
        &"--catalog",
        &catalog,
    ]));
    assert_eq!(again, runs);
    let changes_again = run(&[
        &"ulog",
        &"changes",
        &"--vehicle",
        &"UGV-05",
        &"--catalog",
        &catalog,
    ]);
    assert_eq!(lines(&changes_again), lines(&changes));
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn two_ingests_at_once_into_one_catalog_with_a_reader_beside_them() {
    let dir = common::scratch("catalog-concurrent");
    let logs = common::corpus_logs();
    let (first, second) = logs.split_at(logs.len() / 2);
    let catalog = dir.join("catalog.sqlite");
    let ingest = |files: &[PathBuf], out: &str| {
        let mut c = Command::new(common::binary());
        c.args(["ulog", "ingest"])
            .args(files)
            .arg("--out")
            .arg(dir.join(out))
            .arg("--catalog")
            .arg(&catalog)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        c.spawn().unwrap()
    };
    // Both start on a catalog that does not exist yet: they race to create it too.
    let mut writers = [ingest(first, "a"), ingest(second, "b")];
    let mut reads = 0;
    let mut reads_during = 0;
    loop {
        let running = writers
            .iter_mut()
            .map(|w| w.try_wait().unwrap().is_none())
            .filter(|r| *r)
            .count();
        if running == 0 {
            break;
        }
        let o = run(&[&"ulog", &"runs", &"--catalog", &catalog]);
        if reads == 0 && stderr(&o).contains("no catalog at") {
            // The writers have not made it yet (each reader run takes a few milliseconds).
            continue;
        }
        assert!(
            o.status.success(),
            "a reader during the ingests: {}",
            stderr(&o)
        );
        let seen = lines(&o);
        let mut ids: Vec<&str> = seen.iter().map(|r| r["run"].as_str().unwrap()).collect();
        ids.dedup();
        assert_eq!(ids.len(), seen.len());
        reads += 1;
        if writers.iter_mut().any(|w| w.try_wait().unwrap().is_none()) {
            reads_during += 1;
        }
        assert!(reads < 10_000, "the ingests never finished");
    }
    for w in writers {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    eprintln!("{reads} reads, {reads_during} while an ingest ran");
    assert!(reads_during > 0, "a reader ran while an ingest did");
    let runs = lines(&run(&[&"ulog", &"runs", &"--catalog", &catalog]));
    assert_eq!(runs.len(), logs.len(), "every log is one run, none lost");
    let mut ids: Vec<String> = runs
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), logs.len(), "ids are unique");
    // Every report carries its file's SHA-256, the one coreutils computes.
    let sums = Command::new("sha256sum")
        .args(&logs)
        .output()
        .expect("coreutils sha256sum");
    let sums = String::from_utf8(sums.stdout).unwrap();
    for (log, line) in logs.iter().zip(sums.lines()) {
        let sub = if first.contains(log) { "a" } else { "b" };
        let stem = log.file_stem().unwrap().to_string_lossy();
        let report = read_json(&dir.join(sub).join(format!("{stem}.report.json")));
        assert_eq!(
            report["sha256"],
            line.split_whitespace().next().unwrap(),
            "{stem}"
        );
        assert!(runs
            .iter()
            .any(|r| r["sha256"] == report["sha256"] && r["run"] == report["run"]["id"]));
    }
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn the_same_bytes_twice_change_nothing_and_another_file_of_that_name_is_a_new_run() {
    let dir = common::scratch("catalog-twice");
    let logs = three_runs(&dir);
    let (out, catalog) = (dir.join("reports"), dir.join("catalog.sqlite"));
    let ingest = |log: &Path| {
        run(&[
            &"ulog",
            &"ingest",
            &log,
            &"--out",
            &out,
            &"--catalog",
            &catalog,
        ])
    };
    assert!(ingest(&logs[0]).status.success());
    let before = std::fs::read(&catalog).unwrap();
    let first = read_json(&out.join("r1.report.json"));
    let again = ingest(&logs[0]);
    assert!(again.status.success());
    assert!(
        stderr(&again).contains("catalogued already as R-0001 (same SHA-256): nothing changed"),
        "{}",
        stderr(&again)
    );
    let second = read_json(&out.join("r1.report.json"));
    assert_eq!(second["run"]["id"], "R-0001");
    assert_eq!(second["run"]["new"], false);
    assert_eq!(second["run"]["ingested_utc"], first["run"]["ingested_utc"]);
    assert_eq!(
        lines(&run(&[&"ulog", &"runs", &"--catalog", &catalog])).len(),
        1
    );
    assert_eq!(
        std::fs::read(&catalog).unwrap(),
        before,
        "the catalog file is unchanged"
    );

    // Other bytes under the same name: a new run, said so, its report beside the first's.
    let elsewhere = dir.join("card2");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let same_name = elsewhere.join("r1.ulg");
    std::fs::copy(&logs[1], &same_name).unwrap();
    let o = ingest(&same_name);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("A different file named r1.ulg is run R-0001"),
        "{}",
        stderr(&o)
    );
    let reports: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(reports.len(), 2, "{reports:?}");
    let moved = reports
        .iter()
        .find(|p| *p != &out.join("r1.report.json"))
        .unwrap();
    let report = read_json(moved);
    assert_eq!(report["run"]["id"], "R-0002");
    assert!(moved.to_string_lossy().ends_with(&format!(
        "r1.{}.report.json",
        &report["sha256"].as_str().unwrap()[..12]
    )));
    assert_eq!(
        read_json(&out.join("r1.report.json"))["run"]["id"],
        "R-0001",
        "the first run's report is kept"
    );
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn a_manifest_that_disagrees_or_leaves_a_file_out_rejects_it_before_it_is_read() {
    let dir = common::scratch("catalog-manifest");
    let logs = three_runs(&dir);
    // The sender's manifest, by coreutils: r1 as it is, r2 with another file's digest, no r3.
    let sums = Command::new("sha256sum")
        .current_dir(&*dir)
        .args(["r1.ulg", "r3.ulg"])
        .output()
        .expect("coreutils sha256sum");
    let text = String::from_utf8(sums.stdout).unwrap();
    let (r1_line, r3_line) = (text.lines().next().unwrap(), text.lines().nth(1).unwrap());
    let r3_digest = r3_line[..64].to_string();
    let manifest = dir.join("SHA256SUMS");
    std::fs::write(&manifest, format!("{r1_line}\n{r3_digest}  r2.ulg\n")).unwrap();
    let r2_sum = Command::new("sha256sum").arg(&logs[1]).output().unwrap();
    let r2_digest = String::from_utf8(r2_sum.stdout).unwrap()[..64].to_string();
    let (out, catalog) = (dir.join("reports"), dir.join("catalog.sqlite"));
    let o = run(&[
        &"ulog",
        &"ingest",
        &logs[0],
        &logs[1],
        &logs[2],
        &"--out",
        &out,
        &"--catalog",
        &catalog,
        &"--manifest",
        &manifest,
    ]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    let r2_line = err
        .lines()
        .find(|l| l.contains("r2.ulg: rejected"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        r2_line.contains(&r3_digest) && r2_line.contains(&r2_digest),
        "both digests: {r2_line}"
    );
    assert!(r2_line.contains("line 2 lists r2.ulg"), "{r2_line}");
    let r3_err = err
        .lines()
        .find(|l| l.contains("r3.ulg: rejected"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        r3_err.contains("does not list this file") && r3_err.contains(&r3_digest),
        "{r3_err}"
    );

    let r1 = read_json(&out.join("r1.report.json"));
    assert_eq!(r1["status"], "complete");
    assert_eq!(r1["manifest"]["matches"], true);
    assert_eq!(r1["manifest"]["matched_by"], "path");
    let r2 = read_json(&out.join("r2.report.json"));
    assert_eq!(r2["status"], "rejected");
    assert_eq!(r2["sha256"], r2_digest.as_str());
    assert_eq!(r2["manifest"]["sha256"], r3_digest.as_str());
    assert_eq!(
        r2["validation"],
        serde_json::json!([]),
        "not read: not even its magic"
    );
    assert_eq!(
        r2["run"],
        Value::Null,
        "a file the manifest rejects is no run"
    );
    let r3 = read_json(&out.join("r3.report.json"));
    assert_eq!(r3["manifest"]["entry"], Value::Null);
    let runs = lines(&run(&[&"ulog", &"runs", &"--catalog", &catalog]));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["sha256"], r1["sha256"]);
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn a_catalog_cut_short_is_set_aside_and_rebuilt_and_the_ingest_goes_on() {
    let dir = common::scratch("catalog-truncated");
    let logs = three_runs(&dir);
    let (out, catalog) = (dir.join("reports"), dir.join("catalog.sqlite"));
    let o = run(&[
        &"ulog",
        &"ingest",
        &logs[0],
        &logs[1],
        &"--out",
        &out,
        &"--catalog",
        &catalog,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let before = lines(&run(&[&"ulog", &"runs", &"--catalog", &catalog]));
    let bytes = std::fs::read(&catalog).unwrap();
    assert!(
        bytes.len() > 8192,
        "a catalog of several pages: {}",
        bytes.len()
    );
    std::fs::write(&catalog, &bytes[..bytes.len() / 2]).unwrap();

    let o = run(&[
        &"ulog",
        &"ingest",
        &logs[2],
        &"--out",
        &out,
        &"--catalog",
        &catalog,
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the log is still ingested: {}",
        stderr(&o)
    );
    let err = stderr(&o);
    let aside = dir.join("catalog.sqlite.corrupt-1");
    assert!(err.contains("is damaged"), "{err}");
    assert!(
        err.contains(&format!("set aside as {}", aside.display())),
        "{err}"
    );
    assert!(err.contains("rebuilt from the 2 reports in"), "{err}");
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        &bytes[..bytes.len() / 2],
        "the damaged file is kept"
    );
    let r3 = read_json(&out.join("r3.report.json"));
    assert_eq!(r3["run"]["id"], "R-0003");
    assert_eq!(
        r3["changes"][0]["text"],
        "NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in R-0003, 21 Apr"
    );
    let after = lines(&run(&[&"ulog", &"runs", &"--catalog", &catalog]));
    assert_eq!(after.len(), 3);
    assert_eq!(
        after[..2],
        before[..],
        "the rebuilt catalog holds the runs it held"
    );
}

#[test]
#[cfg_attr(
    foxborne_no_corpus,
    ignore = "corpus not found: ../shared/corpus or $FOXBORNE_CORPUS"
)]
fn a_catalog_of_a_newer_schema_is_refused_before_anything_is_read() {
    let dir = common::scratch("catalog-version");
    let logs = three_runs(&dir);
    let (out, catalog) = (dir.join("reports"), dir.join("catalog.sqlite"));
    assert!(run(&[
        &"ulog",
        &"ingest",
        &logs[0],
        &"--out",
        &out,
        &"--catalog",
        &catalog
    ])
    .status
    .success());
    let conn = rusqlite::Connection::open(&catalog).unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    drop(conn);
    let o = run(&[
        &"ulog",
        &"ingest",
        &logs[1],
        &"--out",
        &out,
        &"--catalog",
        &catalog,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "is schema version 2, written by a newer foxborne-receiver (this one reads version 1)"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!out.join("r2.report.json").exists(), "nothing was ingested");
    // Rebuilt from the reports, it is a catalog this version reads.
    assert!(run(&[
        &"ulog",
        &"catalog",
        &"rebuild",
        &"--catalog",
        &catalog,
        &"--reports",
        &out
    ])
    .status
    .success());
    assert!(run(&[
        &"ulog",
        &"ingest",
        &logs[1],
        &"--out",
        &out,
        &"--catalog",
        &catalog
    ])
    .status
    .success());
    assert_eq!(
        lines(&run(&[&"ulog", &"runs", &"--catalog", &catalog])).len(),
        2
    );
}
