//! Shared helpers for the ULog integration tests: finding the shared corpus (never copied into
//! the repository) and listing its logs.
#![allow(dead_code)]

use std::path::PathBuf;

/// The corpus folder: `$FOXBORNE_CORPUS`, else `../shared/corpus` from the crate root. `None`
/// (the test skips) when it is missing, unless `FOXBORNE_REQUIRE_CORPUS=1`, which fails instead.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.join("ulog").is_dir() {
        return Some(dir);
    }
    if std::env::var("FOXBORNE_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!(
            "corpus not found at {} and FOXBORNE_REQUIRE_CORPUS=1",
            dir.display()
        );
    }
    eprintln!("skipping: corpus not found at {}", dir.display());
    None
}

/// Every `.ulg` in the corpus, sorted by name.
pub fn corpus_logs() -> Vec<PathBuf> {
    let Some(dir) = corpus_dir() else {
        return Vec::new();
    };
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir.join("ulog"))
        .expect("reading corpus/ulog")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ulg"))
        .collect();
    logs.sort();
    assert!(!logs.is_empty(), "corpus/ulog has no .ulg files");
    logs
}

/// pyulog's view of a corpus log.
pub fn oracle(log: &std::path::Path) -> serde_json::Value {
    let stem = log.file_stem().unwrap().to_string_lossy();
    let path = log
        .parent()
        .unwrap()
        .join("expected-pyulog-1.3.0")
        .join(format!("{stem}.pyulog.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}
