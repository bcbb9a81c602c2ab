//! Every field of every frame of every corpus `.tlog`, as `tlog convert --fields all` writes it,
//! against pymavlink's decode of the same file (`tests/pymavlink_fields.py`): same names in the
//! same order, integers equal, floats equal as the type they are on the wire, strings equal.
//!
//! Needs the corpus (ignored without it, see `common::corpus_dir`) and a Python with pymavlink:
//! `$FOXBORNE_PYTHON`, else `.venv/bin/python` in the crate; without it the test is ignored
//! (the build script looks), unless `FOXBORNE_REQUIRE_PYTHON=1` (CI), when it fails.

use crate::common;

use foxborne_receiver::wire::{dialect, table};
use serde_json::Value;
use std::process::Command;

#[test]
#[cfg_attr(
    any(foxborne_no_python, foxborne_no_corpus),
    ignore = "needs the Python references and the corpus (README)"
)]
fn every_field_of_every_corpus_frame_equals_pymavlink() {
    let corpus = common::corpus_dir();
    let python = common::python_with(&["pymavlink"]);
    let tlogs = common::corpus_files("tlog", "tlog");
    assert!(
        !tlogs.is_empty(),
        "no .tlog in {}",
        corpus.join("tlog").display()
    );
    let out = common::scratch("fields");
    std::fs::create_dir_all(&out).unwrap();
    let mut pairs = Vec::new();
    for tlog in &tlogs {
        let jsonl = out.join(tlog.file_stem().unwrap()).with_extension("jsonl");
        common::run_ok(
            Command::new(common::binary())
                .args(["tlog", "convert", "--fields", "all", "--out"])
                .arg(&jsonl)
                .arg(tlog),
            &format!("tlog convert {}", tlog.display()),
        );
        pairs.push(tlog.clone());
        pairs.push(jsonl);
    }
    let run = common::run_ok(
        common::python_script(&python, "pymavlink_fields.py").args(&pairs),
        "pymavlink_fields.py",
    );
    let report: Value = serde_json::from_slice(&run.stdout).expect("the script's JSON report");

    assert_eq!(
        report["examples"],
        Value::Array(vec![]),
        "mismatching frames"
    );
    let (mut frames, mut fields) = (0u64, 0u64);
    for (file, r) in report["files"].as_object().unwrap() {
        assert_eq!(r["mismatched_frames"], 0, "{file}");
        assert_eq!(
            r["pymavlink_only"],
            Value::Array(vec![]),
            "{file}: frames pymavlink returns and we do not"
        );
        let ours_only: Vec<(String, String)> = r["ours_only"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["msg"].as_str().unwrap().into(),
                    x["src"].as_str().unwrap().into(),
                )
            })
            .collect();
        let known: Vec<(String, String)> = common::PYMAVLINK_LOSES
            .iter()
            .filter(|(f, _, _)| f == file)
            .map(|(_, m, s)| (m.to_string(), s.to_string()))
            .collect();
        assert_eq!(ours_only, known, "{file}: frames only we return");
        assert_eq!(r["compared"], r["pymavlink"], "{file}");
        frames += r["compared"].as_u64().unwrap();
        fields += r["fields_compared"].as_u64().unwrap();
    }
    assert_eq!(report["files"].as_object().unwrap().len(), tlogs.len());
    // The corpus holds 249,946 receipts; every one but the known one was compared.
    assert!(frames >= 249_000, "only {frames} frames compared");
    assert!(fields >= 2_000_000, "only {fields} field values compared");

    // Fields newer than pymavlink 2.4.50's dialect: they must be extensions in our table.
    for (msg, extra) in report["ours_extra_fields"].as_object().unwrap() {
        let def = table::lookup(dialect::id_of(msg).unwrap()).unwrap();
        for name in extra.as_array().unwrap() {
            let field = def
                .fields
                .iter()
                .find(|f| f.name == name.as_str().unwrap())
                .unwrap();
            assert!(field.extension, "{msg}.{name} is not an extension field");
        }
    }
    eprintln!("compared {frames} frames, {fields} field values with pymavlink: all equal");
}
