//! The run catalog through the built binary (issue 27): three logs of one vehicle in order give
//! the document's changes; two ingests at once into one catalog, with a reader running beside
//! them; the same bytes twice and another file of the same name; a manifest that disagrees and
//! one that leaves a file out (digests checked against coreutils' `sha256sum`); a catalog cut
//! short set aside and rebuilt; a catalog of a newer schema refused; `ulog catalog rebuild`
//! giving back the same runs.
//!
//! The logs of one vehicle are a corpus log and two derived from it with the project's writer,
//! NAV_DLL_ACT (and one other parameter) changed in their definitions.

use crate::common;

use foxborne_receiver::ulog::writer::UlogWriter;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The anchored corpus log the vehicle's runs are made from (GPS UTC 2021-04-21, a sys_uuid,
/// NAV_DLL_ACT 2, RTL_RETURN_ALT 60).
const BASE_LOG: &str = "pyulog_sample_log_small.ulg";
const BASE_UUID: &str = "000600000000383638393239510d0035002d";

/// `foxborne-receiver ulog ARGS...`.
fn ulog(args: &[&str]) -> Output {
    Command::new(common::binary())
        .arg("ulog")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
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

/// A scratch folder with UGV-05's three logs, a report folder and a catalog.
struct Fixture {
    dir: common::Scratch,
    logs: [PathBuf; 3],
    out: PathBuf,
    catalog: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let dir = common::scratch(name);
        let logs = three_runs(&dir);
        let (out, catalog) = (dir.join("reports"), dir.join("data/catalog.sqlite"));
        Fixture {
            dir,
            logs,
            out,
            catalog,
        }
    }

    /// `ulog VERB ARGS... --catalog CATALOG`.
    fn ulog(&self, args: &[&str]) -> Output {
        let mut all = args.to_vec();
        all.extend(["--catalog", text(&self.catalog)]);
        ulog(&all)
    }

    /// `ulog ingest LOGS... --out OUT --catalog CATALOG ARGS...`.
    fn ingest(&self, logs: &[&Path], args: &[&str]) -> Output {
        let mut all = vec!["ingest"];
        all.extend(logs.iter().map(|l| text(l)));
        all.extend(["--out", text(&self.out)]);
        all.extend(args);
        self.ulog(&all)
    }

    /// `ulog runs`, one JSON value per line.
    fn runs(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["runs"];
        all.extend(args);
        let o = self.ulog(&all);
        assert_ok(&o);
        lines(&o)
    }

    fn report(&self, name: &str) -> Value {
        read_json(&self.out.join(format!("{name}.report.json")))
    }
}

fn assert_ok(o: &Output) {
    common::assert_success(o, "ulog");
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn three_logs_of_one_vehicle_in_order_give_the_documents_changes() {
    let f = Fixture::new("catalog-three");
    let names = names_file(&f.dir);
    for log in &f.logs {
        assert_ok(&f.ingest(&[log], &["--names", text(&names)]));
    }
    let (r1, r2, r3) = (f.report("r1"), f.report("r2"), f.report("r3"));
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

    let changes = f.ulog(&["changes", "--vehicle", "UGV-05"]);
    assert_ok(&changes);
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
    let failsafe = f.ulog(&["changes", "--vehicle", BASE_UUID, "--failsafe"]);
    assert_eq!(lines(&failsafe).len(), 2, "by sys_uuid, failsafe only");

    let runs = f.runs(&["--vehicle", "UGV-05"]);
    assert_eq!(runs.len(), 3);
    assert!(runs
        .iter()
        .all(|r| r["vehicle"] == "UGV-05" && r["parameters"] == 980));

    // The catalog is a cache of the reports: made again from them, it holds the same runs.
    std::fs::remove_file(&f.catalog).unwrap();
    let rebuilt = f.ulog(&["catalog", "rebuild", "--reports", text(&f.out)]);
    assert_ok(&rebuilt);
    assert!(String::from_utf8_lossy(&rebuilt.stdout).contains("rebuilt from 3 reports"));
    assert_eq!(f.runs(&["--vehicle", "UGV-05"]), runs);
    assert_eq!(
        lines(&f.ulog(&["changes", "--vehicle", "UGV-05"])),
        lines(&changes)
    );
    // With a names file, the rebuild names the vehicle again.
    std::fs::write(
        &names,
        format!("[[vehicle]]\nname = \"UGV-06\"\nsys_uuid = \"{BASE_UUID}\"\n"),
    )
    .unwrap();
    assert_ok(&f.ulog(&[
        "catalog",
        "rebuild",
        "--reports",
        text(&f.out),
        "--names",
        text(&names),
    ]));
    assert_eq!(f.runs(&["--vehicle", "UGV-06"]).len(), 3);
    assert!(f.runs(&["--vehicle", "UGV-05"]).is_empty());
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn two_ingests_at_once_into_one_catalog_with_a_reader_beside_them() {
    let dir = common::scratch("catalog-concurrent");
    let logs = common::corpus_logs();
    let (first, second) = logs.split_at(logs.len() / 2);
    let catalog = dir.join("catalog.sqlite");
    let ingest = |files: &[PathBuf], out: &str| {
        Command::new(common::binary())
            .args(["ulog", "ingest"])
            .args(files)
            .arg("--out")
            .arg(dir.join(out))
            .arg("--catalog")
            .arg(&catalog)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let read = || ulog(&["runs", "--catalog", text(&catalog)]);
    // Both start on a catalog that does not exist yet: they race to create it too.
    let mut writers = [ingest(first, "a"), ingest(second, "b")];
    let mut running = || {
        writers
            .iter_mut()
            .map(|w| w.try_wait().unwrap().is_none())
            .filter(|still| *still)
            .count()
    };
    let (mut reads, mut reads_during) = (0, 0);
    while running() > 0 {
        let o = read();
        if reads == 0 && stderr(&o).contains("no catalog at") {
            // The writers have not made it yet (each reader run takes a few milliseconds).
            continue;
        }
        assert!(
            o.status.success(),
            "a reader during the ingests: {}",
            stderr(&o)
        );
        let mut ids: Vec<String> = lines(&o).iter().map(|r| r["run"].to_string()).collect();
        let seen = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), seen, "no run twice");
        reads += 1;
        if running() > 0 {
            reads_during += 1;
        }
        assert!(reads < 10_000, "the ingests never finished");
    }
    for w in writers {
        common::assert_success(
            &w.wait_with_output().unwrap(),
            "an ingest beside the reader",
        );
    }
    eprintln!("{reads} reads, {reads_during} while an ingest ran");
    assert!(reads_during > 0, "a reader ran while an ingest did");
    let runs = lines(&read());
    assert_eq!(runs.len(), logs.len(), "every log is one run, none lost");
    let mut ids: Vec<String> = runs.iter().map(|r| r["run"].to_string()).collect();
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
        let catalogued =
            |r: &&Value| r["sha256"] == report["sha256"] && r["run"] == report["run"]["id"];
        assert!(runs.iter().any(|r| catalogued(&r)), "{stem}");
    }
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn the_same_bytes_twice_change_nothing_and_another_file_of_that_name_is_a_new_run() {
    let f = Fixture::new("catalog-twice");
    assert_ok(&f.ingest(&[&f.logs[0]], &[]));
    let before = std::fs::read(&f.catalog).unwrap();
    let first = f.report("r1");
    let again = f.ingest(&[&f.logs[0]], &[]);
    assert_ok(&again);
    let said = "catalogued already as R-0001 (same SHA-256): nothing changed";
    assert!(stderr(&again).contains(said), "{}", stderr(&again));
    let second = f.report("r1");
    assert_eq!(second["run"]["id"], "R-0001");
    assert_eq!(second["run"]["new"], false);
    assert_eq!(second["run"]["ingested_utc"], first["run"]["ingested_utc"]);
    assert_eq!(f.runs(&[]).len(), 1);
    assert_eq!(
        std::fs::read(&f.catalog).unwrap(),
        before,
        "the catalog file is unchanged"
    );

    // Other bytes under the same name: a new run, said so, its report beside the first's.
    let elsewhere = f.dir.join("card2");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let same_name = elsewhere.join("r1.ulg");
    std::fs::copy(&f.logs[1], &same_name).unwrap();
    let o = f.ingest(&[&same_name], &[]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("A different file named r1.ulg is run R-0001"),
        "{}",
        stderr(&o)
    );
    let reports: Vec<PathBuf> = std::fs::read_dir(&f.out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(reports.len(), 2, "{reports:?}");
    let moved = reports
        .iter()
        .find(|p| *p != &f.out.join("r1.report.json"))
        .unwrap();
    let report = read_json(moved);
    assert_eq!(report["run"]["id"], "R-0002");
    let sha = &report["sha256"].as_str().unwrap()[..12];
    assert!(
        moved
            .to_string_lossy()
            .ends_with(&format!("r1.{sha}.report.json")),
        "{moved:?}"
    );
    assert_eq!(
        f.report("r1")["run"]["id"],
        "R-0001",
        "the first run's report is kept"
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_manifest_that_disagrees_or_leaves_a_file_out_rejects_it_before_it_is_read() {
    let f = Fixture::new("catalog-manifest");
    let digest = |log: &Path| {
        let o = Command::new("sha256sum")
            .arg(log)
            .output()
            .expect("coreutils sha256sum");
        String::from_utf8(o.stdout).unwrap()[..64].to_string()
    };
    let (r1, r2, r3) = (digest(&f.logs[0]), digest(&f.logs[1]), digest(&f.logs[2]));
    // The sender's manifest: r1 as it is, r2 with another file's digest, no r3.
    let manifest = f.dir.join("SHA256SUMS");
    std::fs::write(&manifest, format!("{r1}  r1.ulg\n{r3}  r2.ulg\n")).unwrap();
    let logs: Vec<&Path> = f.logs.iter().map(PathBuf::as_path).collect();
    let o = f.ingest(&logs, &["--manifest", text(&manifest)]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    let said = |name: &str| {
        err.lines()
            .find(|l| l.contains(&format!("{name}: rejected")))
            .unwrap_or_else(|| panic!("{err}"))
            .to_string()
    };
    let r2_said = said("r2.ulg");
    assert!(
        r2_said.contains(&r3) && r2_said.contains(&r2),
        "both digests: {r2_said}"
    );
    assert!(
        r2_said.contains("SHA256SUMS line 2 lists r2.ulg"),
        "{r2_said}"
    );
    let r3_said = said("r3.ulg");
    assert!(
        r3_said.contains("does not list this file") && r3_said.contains(&r3),
        "{r3_said}"
    );

    let report1 = f.report("r1");
    assert_eq!(report1["status"], "complete");
    assert_eq!(report1["manifest"]["matches"], true);
    assert_eq!(report1["manifest"]["matched_by"], "path");
    let report2 = f.report("r2");
    assert_eq!(report2["status"], "rejected");
    assert_eq!(report2["sha256"], r2.as_str());
    assert_eq!(report2["manifest"]["sha256"], r3.as_str());
    assert_eq!(
        report2["validation"],
        serde_json::json!([]),
        "not read: not even its magic"
    );
    assert_eq!(
        report2["run"],
        Value::Null,
        "a file the manifest rejects is no run"
    );
    assert_eq!(f.report("r3")["manifest"]["entry"], Value::Null);
    let runs = f.runs(&[]);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["sha256"], report1["sha256"]);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_catalog_cut_short_is_set_aside_and_rebuilt_and_the_ingest_goes_on() {
    let f = Fixture::new("catalog-truncated");
    assert_ok(&f.ingest(&[&f.logs[0], &f.logs[1]], &[]));
    let before = f.runs(&[]);
    let bytes = std::fs::read(&f.catalog).unwrap();
    assert!(
        bytes.len() > 8192,
        "a catalog of several pages: {}",
        bytes.len()
    );
    let cut = &bytes[..bytes.len() / 2];
    std::fs::write(&f.catalog, cut).unwrap();

    let o = f.ingest(&[&f.logs[2]], &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "the log is still ingested: {}",
        stderr(&o)
    );
    let err = stderr(&o);
    let aside = f.dir.join("data/catalog.sqlite.corrupt-1");
    assert!(err.contains("is damaged"), "{err}");
    assert!(
        err.contains(&format!("set aside as {}", aside.display())),
        "{err}"
    );
    assert!(err.contains("rebuilt from the 2 reports in"), "{err}");
    assert_eq!(
        std::fs::read(&aside).unwrap(),
        cut,
        "the damaged file is kept"
    );
    let r3 = f.report("r3");
    assert_eq!(r3["run"]["id"], "R-0003");
    assert_eq!(
        r3["changes"][0]["text"],
        "NAV_DLL_ACT 0 (Disabled) to 1 (Hold) in R-0003, 21 Apr"
    );
    let after = f.runs(&[]);
    assert_eq!(after.len(), 3);
    assert_eq!(
        after[..2],
        before[..],
        "the rebuilt catalog holds the runs it held"
    );
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn a_catalog_of_a_newer_schema_is_refused_before_anything_is_read() {
    let f = Fixture::new("catalog-version");
    assert_ok(&f.ingest(&[&f.logs[0]], &[]));
    let conn = rusqlite::Connection::open(&f.catalog).unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    drop(conn);
    let o = f.ingest(&[&f.logs[1]], &[]);
    assert_eq!(o.status.code(), Some(1));
    let said =
        "is schema version 2, written by a newer foxborne-receiver (this one reads version 1)";
    assert!(stderr(&o).contains(said), "{}", stderr(&o));
    assert!(
        !f.out.join("r2.report.json").exists(),
        "nothing was ingested"
    );
    // Rebuilt from the reports, it is a catalog this version reads.
    assert_ok(&f.ulog(&["catalog", "rebuild", "--reports", text(&f.out)]));
    assert_ok(&f.ingest(&[&f.logs[1]], &[]));
    assert_eq!(f.runs(&[]).len(), 2);
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn the_daemon_config_gives_the_catalogs_folder_and_names_by_system_id() {
    let dir = common::scratch("catalog-config");
    let config = dir.join("receiver.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"{}\"\n[[link]]\nname = \"radio1\"\nudp = \"127.0.0.1:14550\"\n[gap]\nvehicles = {{ 1 = \"SITL-1\" }}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    // A SITL log: no sys_uuid, ver_hw SITL, MAV_SYS_ID 1.
    let log = common::corpus_file("ulog", "stifael_14_19_29.ulg");
    let out = dir.join("reports");
    assert_ok(&ulog(&[
        "ingest",
        text(&log),
        "--out",
        text(&out),
        "--config",
        text(&config),
    ]));
    assert!(dir.join("data/catalog.sqlite").is_file());
    let report = read_json(&out.join("stifael_14_19_29.report.json"));
    assert_eq!(report["vehicle"]["name"], "SITL-1");
    assert_eq!(report["vehicle"]["identity"], "ver_hw SITL, MAV_SYS_ID 1");
    assert_eq!(
        report["vehicle"]["named_by"],
        format!("gap.vehicles in {}", config.display())
    );
    assert_eq!(
        report["run"]["start_utc"],
        Value::Null,
        "GPS UTC is zero throughout"
    );
    let runs = ulog(&["runs", "--config", text(&config), "--vehicle", "SITL-1"]);
    let runs = lines(&runs);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["run"], "R-0001");
    // Without a catalog the verbs that need one say how to give it.
    let o = ulog(&["runs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--catalog FILE, or --config FILE"),
        "{}",
        stderr(&o)
    );
}
