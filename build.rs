//! Build script: tells the test targets whether the shared corpus of real data is there.
//!
//! When `$FOXBORNE_CORPUS` (or `../shared/corpus` beside the crate) is missing at build time and
//! `FOXBORNE_REQUIRE_CORPUS` is not `1`, it sets `cfg(foxborne_no_corpus)`, under which every test
//! that reads the corpus is `#[ignore]`d with the reason: the skip shows in the test summary
//! instead of passing as `ok`. With `FOXBORNE_REQUIRE_CORPUS=1` those tests run, and a missing
//! corpus or file fails them.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(foxborne_no_corpus)");
    println!("cargo::rerun-if-env-changed=FOXBORNE_CORPUS");
    println!("cargo::rerun-if-env-changed=FOXBORNE_REQUIRE_CORPUS");
    println!("cargo::rerun-if-changed=build.rs");
    let corpus = std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"))
                .join("../shared/corpus")
        });
    // Watching the folder (or where it would be) reruns this when it appears or goes.
    println!("cargo::rerun-if-changed={}", corpus.display());
    let required = std::env::var("FOXBORNE_REQUIRE_CORPUS").as_deref() == Ok("1");
    if !corpus.is_dir() && !required {
        println!("cargo::rustc-cfg=foxborne_no_corpus");
        println!(
            "cargo::warning=corpus not found at {}: the tests that read it are ignored (set FOXBORNE_CORPUS)",
            corpus.display()
        );
    }
}
