//! The `ulog` verbs through the built binary: exit codes 0, 3 and 4, the report path printed,
//! and the original of a quarantined log left untouched.

use crate::common;

fn temp(name: &str) -> common::Scratch {
    common::scratch(name)
}

#[test]
#[cfg_attr(foxborne_no_corpus, ignore = "needs the corpus (README)")]
fn ingest_exit_codes_through_the_binary() {
    let log = common::corpus_file("ulog", "pyulog_sample_log_small.ulg");
    let dir = temp("codes");
    let out = common::ulog_ingest(&log, &dir).output().unwrap();
    common::assert_exit(&out, 0);
    let report_path = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["status"], "complete");
    assert!(report["reason"].is_null());

    // Cut inside a message: quarantined, exit 3, original untouched, copy in the quarantine.
    let bytes = std::fs::read(&log).unwrap();
    let cut = dir.join("cut.ulg");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).unwrap();
    let quarantine = dir.join("quarantine");
    let out = common::ulog_ingest(&cut, &dir)
        .arg("--quarantine")
        .arg(&quarantine)
        .output()
        .unwrap();
    common::assert_exit(&out, 3);
    assert_eq!(std::fs::read(&cut).unwrap(), &bytes[..bytes.len() / 2 + 7]);
    assert!(quarantine.join("cut.ulg").exists());
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("cut.report.json")).unwrap()).unwrap();
    assert_eq!(report["status"], "quarantined");
    assert!(report["reason"].as_str().unwrap().contains("The file was truncated, most likely when power was cut during logging. Nothing from it is shown as complete."));

    // Encrypted header: rejected, exit 4, with the contract sentence.
    let enc = dir.join("enc.ulg");
    let mut e = b"ULogEnc".to_vec();
    e.extend_from_slice(&[1u8; 40]);
    std::fs::write(&enc, e).unwrap();
    let out = common::ulog_ingest(&enc, std::path::Path::new("-"))
        .output()
        .unwrap();
    common::assert_exit(&out, 4);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["status"], "rejected");
    assert_eq!(
        report["reason"],
        "The flight log is encrypted. Foxborne does not decrypt logs. Import the decrypted .ulg exported from your key holder."
    );
    let _ = std::fs::remove_dir_all(&dir);
}
