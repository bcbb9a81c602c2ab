//! Helpers shared by the integration tests: where the corpus is, and the built binary.
#![allow(dead_code)]

use std::path::PathBuf;

/// `$FOXBORNE_CORPUS`, or `../shared/corpus` beside the crate. `None` (the test skips) when it
/// is missing, unless `FOXBORNE_REQUIRE_CORPUS=1`, when a missing corpus fails the test.
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("FOXBORNE_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!(
            "corpus not found at {} and FOXBORNE_REQUIRE_CORPUS=1",
            dir.display()
        );
    }
    eprintln!("corpus not found at {}: skipping", dir.display());
    None
}

/// Files in a corpus subfolder with the given extension, sorted.
pub fn corpus_files(sub: &str, ext: &str) -> Vec<PathBuf> {
    let Some(dir) = corpus_dir() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.join(sub).display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_foxborne-receiver"))
}
