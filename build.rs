//! Build script, two jobs.
//!
//! **The MAVLink field table** that `src/wire/table.rs` includes, generated from the XML message
//! definitions shipped inside the pinned `mavlink` crate's source
//! (`mavlink/message_definitions/v1.0/ardupilotmega.xml` and every file it includes). For every
//! message: id, name, and its fields in definition (XML) order, each with its type, array length,
//! whether it is a MAVLink 2 extension, and its byte offset in the payload. Offsets follow
//! MAVLink's field reordering: the non-extension fields sorted by the size of their base type,
//! largest first, stably; then the extension fields in XML order. The unit test
//! `crc_extra_from_the_table_matches_the_crate` recomputes every CRC_EXTRA from this table. The
//! definitions directory is given in `FOXBORNE_MAVLINK_DEFINITIONS`, or found offline with
//! `cargo metadata` on a one-dependency manifest (see `mavlink_crate_dir`). The output is deterministic: messages
//! sorted by id, nothing taken from the environment but the definitions.
//!
//! **Which test kits this machine has**, for the test targets: the shared corpus of real data
//! (`$FOXBORNE_CORPUS`, or `../shared/corpus` beside the crate), the Python references, the
//! browser kit, nats-server and root. For each one missing (and its `FOXBORNE_REQUIRE_*` not
//! `1`) it sets a `cfg(foxborne_no_*)`, under which the tests that need it are `#[ignore]`d with
//! the reason: the skip shows in the test summary instead of passing as `ok`. With
//! `FOXBORNE_REQUIRE_*=1` those tests run, and a missing kit fails them. Only paths that exist are
//! watched, so a second build with nothing changed compiles nothing (see `tools_cfg`).

use quick_xml::events::Event;
use quick_xml::Reader;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const DIALECT: &str = "ardupilotmega.xml";
const MAVLINK_VERSION: &str = "0.21.0";

struct Field {
    name: String,
    base: &'static str,
    size: usize,
    count: Option<usize>,
    extension: bool,
    enum_name: Option<String>,
}

struct Message {
    id: u32,
    name: String,
    fields: Vec<Field>,
}

fn main() {
    corpus_cfg();
    tools_cfg();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=FOXBORNE_MAVLINK_DEFINITIONS");
    let dir = definitions_dir();
    let mut messages = BTreeMap::new();
    let mut seen = Vec::new();
    parse_file(&dir, DIALECT, &mut messages, &mut seen);
    let code = generate(&messages);
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("mavlink_table.rs"), code).expect("write mavlink_table.rs");
}

fn definitions_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("FOXBORNE_MAVLINK_DEFINITIONS") {
        let dir = PathBuf::from(dir);
        if !dir.join(DIALECT).is_file() {
            fail(&format!(
                "FOXBORNE_MAVLINK_DEFINITIONS={} holds no {DIALECT}",
                dir.display()
            ));
        }
        return dir;
    }
    let crate_dir = mavlink_crate_dir();
    let dir = crate_dir.join("mavlink/message_definitions/v1.0");
    if !dir.join(DIALECT).is_file() {
        fail(&format!(
            "{} not found in the mavlink crate source at {}",
            DIALECT,
            crate_dir.display()
        ));
    }
    dir
}

/// Where cargo unpacked the `mavlink` package this build compiles.
///
/// `cargo metadata` on our own manifest resolves the whole graph, dev-dependencies included,
/// and offline it fails unless every one of them was downloaded: a `cargo build --release` on
/// a fresh machine never downloads the dev-dependencies. So the question is asked of a
/// one-dependency manifest written into `OUT_DIR` (`mavlink` with no features, a subset of what
/// this build already fetched) with our `Cargo.lock` beside it, so it resolves to the very
/// versions being built. It runs from our manifest directory so that the same cargo
/// configuration (source replacement, vendoring) applies, and `--offline`: it never touches the
/// network.
fn mavlink_crate_dir() -> PathBuf {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("mavlink-locate");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/mavlink-locate");
    let manifest = format!(
        "[package]\nname = \"foxborne-mavlink-locate\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         [lib]\npath = \"lib.rs\"\n\
         [dependencies]\nmavlink = {{ version = \"={MAVLINK_VERSION}\", default-features = false }}\n\
         [workspace]\n"
    );
    std::fs::write(out.join("Cargo.toml"), manifest).expect("write the locator manifest");
    std::fs::write(out.join("lib.rs"), "").expect("write the locator lib.rs");
    let lock = manifest_dir.join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    if lock.is_file() {
        std::fs::copy(&lock, out.join("Cargo.lock")).expect("copy Cargo.lock for the locator");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target = std::env::var("TARGET").expect("TARGET");
    let output = Command::new(cargo)
        .current_dir(&manifest_dir)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &target, "--manifest-path"])
        .arg(out.join("Cargo.toml"))
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => fail(&format!("could not run cargo metadata: {e}")),
    };
    if !output.status.success() {
        fail(&format!(
            "cargo metadata --offline could not locate the mavlink {MAVLINK_VERSION} package: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let meta: serde_json::Value = serde_json::from_slice(&output.stdout).expect("metadata JSON");
    let manifest_path = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "mavlink" && p["version"] == MAVLINK_VERSION)
        .and_then(|p| p["manifest_path"].as_str())
        .unwrap_or_else(|| {
            fail(&format!(
                "no mavlink {MAVLINK_VERSION} package in cargo metadata"
            ))
        });
    PathBuf::from(manifest_path)
        .parent()
        .expect("crate dir")
        .to_path_buf()
}

/// Stops the build with what went wrong and exactly what to set instead.
fn fail(what: &str) -> ! {
    eprintln!(
        "error: {what}\n\
         The MAVLink field table is generated from the dialect XML shipped in the mavlink \
         {MAVLINK_VERSION} crate. Set FOXBORNE_MAVLINK_DEFINITIONS to that crate's \
         `mavlink/message_definitions/v1.0` directory (the one holding {DIALECT}), for example \
         FOXBORNE_MAVLINK_DEFINITIONS=$CARGO_HOME/registry/src/<index>/mavlink-{MAVLINK_VERSION}/mavlink/message_definitions/v1.0"
    );
    std::process::exit(1);
}

/// Base type name as MAVLink writes it into CRC_EXTRA, and its size in bytes.
fn base_type(xml: &str) -> (&'static str, usize) {
    match xml {
        "uint8_t" | "uint8_t_mavlink_version" => ("uint8_t", 1),
        "int8_t" => ("int8_t", 1),
        "char" => ("char", 1),
        "uint16_t" => ("uint16_t", 2),
        "int16_t" => ("int16_t", 2),
        "uint32_t" => ("uint32_t", 4),
        "int32_t" => ("int32_t", 4),
        "float" => ("float", 4),
        "uint64_t" => ("uint64_t", 8),
        "int64_t" => ("int64_t", 8),
        "double" => ("double", 8),
        other => panic!("unknown MAVLink field type `{other}`"),
    }
}

fn parse_file(
    dir: &Path,
    file: &str,
    messages: &mut BTreeMap<u32, Message>,
    seen: &mut Vec<String>,
) {
    if seen.iter().any(|f| f == file) {
        return;
    }
    seen.push(file.to_string());
    let path = dir.join(file);
    println!("cargo:rerun-if-changed={}", path.display());
    let xml = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut reader = Reader::from_str(&xml);
    reader.config_mut().trim_text(true);
    reader.config_mut().expand_empty_elements = true;
    let mut stack: Vec<String> = Vec::new();
    let mut message: Option<Message> = None;
    let mut in_extensions = false;
    let mut includes = Vec::new();
    loop {
        let event = reader
            .read_event()
            .unwrap_or_else(|e| panic!("{}: XML error: {e}", path.display()));
        match event {
            Event::Eof => break,
            Event::Start(tag) => {
                let name = String::from_utf8_lossy(tag.name().as_ref()).to_string();
                let attr = |key: &str| {
                    tag.attributes()
                        .map(|a| a.expect("attribute"))
                        .find(|a| a.key.as_ref() == key.as_bytes())
                        .map(|a| String::from_utf8_lossy(&a.value).to_string())
                };
                let parent = stack.last().map(String::as_str);
                match (name.as_str(), parent) {
                    ("message", Some("messages")) => {
                        let id = attr("id").expect("message id");
                        message = Some(Message {
                            id: id.parse().expect("numeric message id"),
                            name: attr("name").expect("message name"),
                            fields: Vec::new(),
                        });
                        in_extensions = false;
                    }
                    ("extensions", Some("message")) => in_extensions = true,
                    ("field", Some("message")) => {
                        let ty = attr("type").expect("field type");
                        let (base, count) = match ty.split_once('[') {
                            Some((b, n)) => {
                                let n = n.trim_end_matches(']').parse().expect("array length");
                                (b.to_string(), Some(n))
                            }
                            None => (ty.clone(), None),
                        };
                        let (base, size) = base_type(&base);
                        let m = message.as_mut().expect("field inside a message");
                        m.fields.push(Field {
                            name: attr("name").expect("field name"),
                            base,
                            size,
                            count,
                            extension: in_extensions,
                            enum_name: attr("enum"),
                        });
                    }
                    _ => {}
                }
                stack.push(name);
            }
            Event::Text(text) if stack.last().map(String::as_str) == Some("include") => {
                let text = text.decode().expect("include text");
                includes.push(text.trim().to_string());
            }
            Event::End(_) => {
                let closed = stack.pop();
                if closed.as_deref() == Some("message") {
                    let m = message.take().expect("message");
                    // The first definition of an id wins, as in mavgen's merge of includes.
                    messages.entry(m.id).or_insert(m);
                }
            }
            _ => {}
        }
    }
    for include in includes {
        parse_file(dir, &include, messages, seen);
    }
}

fn generate(messages: &BTreeMap<u32, Message>) -> String {
    let mut code = String::new();
    writeln!(
        code,
        "// Generated by build.rs from the mavlink {MAVLINK_VERSION} crate's {DIALECT} and its includes. Do not edit."
    )
    .unwrap();
    writeln!(code, "pub static MESSAGES: &[MessageDef] = &[").unwrap();
    for m in messages.values() {
        // Wire order: stable sort of the base fields by type size, largest first; then extensions.
        let mut wire: Vec<usize> = (0..m.fields.len())
            .filter(|&i| !m.fields[i].extension)
            .collect();
        wire.sort_by_key(|&i| std::cmp::Reverse(m.fields[i].size));
        let base_count = wire.len();
        wire.extend((0..m.fields.len()).filter(|&i| m.fields[i].extension));
        let mut offsets = vec![0usize; m.fields.len()];
        let mut wire_ranks = vec![0usize; m.fields.len()];
        let mut at = 0;
        let mut base_len = 0;
        for (rank, &i) in wire.iter().enumerate() {
            if rank == base_count {
                base_len = at;
            }
            offsets[i] = at;
            wire_ranks[i] = rank;
            at += m.fields[i].size * m.fields[i].count.unwrap_or(1);
        }
        if base_count == wire.len() {
            base_len = at;
        }
        assert!(at <= 255, "{}: payload of {at} bytes", m.name);
        writeln!(
            code,
            "    MessageDef {{ id: {}, name: {:?}, base_len: {base_len}, len: {at}, fields: &[",
            m.id, m.name
        )
        .unwrap();
        for (i, f) in m.fields.iter().enumerate() {
            let ty = match f.base {
                "uint8_t" => "U8",
                "int8_t" => "I8",
                "char" => "Char",
                "uint16_t" => "U16",
                "int16_t" => "I16",
                "uint32_t" => "U32",
                "int32_t" => "I32",
                "float" => "F32",
                "uint64_t" => "U64",
                "int64_t" => "I64",
                "double" => "F64",
                other => unreachable!("{other}"),
            };
            writeln!(
                code,
                "        FieldDef {{ name: {:?}, key: {:?}, ty: FieldType::{ty}, count: {}, offset: {}, wire_rank: {}, extension: {}, enum_name: {:?} }},",
                f.name,
                format!("\"{}\":", f.name),
                f.count.map_or(0, |n| n),
                offsets[i],
                wire_ranks[i],
                f.extension,
                f.enum_name
            )
            .unwrap();
        }
        writeln!(code, "    ] }},").unwrap();
    }
    writeln!(code, "];").unwrap();
    // Direct index for the ids below 256 (the messages most traffic carries): position in
    // MESSAGES, or u16::MAX.
    let mut low = [u16::MAX; 256];
    for (i, id) in messages.keys().enumerate() {
        if *id < 256 {
            low[*id as usize] = i as u16;
        }
    }
    writeln!(code, "static LOW_IDS: [u16; 256] = {low:?};").unwrap();
    code
}

/// The programs some tests need besides the corpus: for each one missing, unless its
/// `FOXBORNE_REQUIRE_*` is `1`, `cfg(foxborne_no_<what>)`, under which those tests are
/// `#[ignore]`d with the reason, so the summary says what did not run instead of a test that
/// returned early passing as `ok`. Where it is set to `1` (CI), the tests run, and a missing
/// program fails them.
///
/// Only paths that exist are watched: cargo takes a watched path that does not exist as changed
/// on every build, which recompiled the whole crate each time on a machine without the kits. So
/// a kit installed later is noticed when one of the variables below changes, when the existing
/// `.venv/bin` or `tests/board/node_modules` change, or after `touch build.rs` (the README's
/// testing page says so). Nothing is printed: a plain build of the daemon has no business
/// talking about test kits, and `cargo test` names every test it ignores, with the reason.
fn tools_cfg() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    for var in ["FOXBORNE_PYTHON", "FOXBORNE_CHROMIUM"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let required = |var: &str| {
        println!("cargo::rerun-if-env-changed={var}");
        std::env::var(var).as_deref() == Ok("1")
    };
    let (python_required, browser_required) = (
        required("FOXBORNE_REQUIRE_PYTHON"),
        required("FOXBORNE_REQUIRE_BROWSER"),
    );
    // A required kit is not looked for, and its folders are not watched: CI requires them all,
    // and its venv and node_modules are still being filled while the cold build compiles, which
    // would rerun this (and rebuild the crate) on the next cargo command.
    let venv_bin = manifest_dir.join(".venv/bin");
    if !python_required || !browser_required {
        watch_if_present(&venv_bin);
    }
    let node_modules = manifest_dir.join("tests/board/node_modules");
    if !browser_required {
        watch_if_present(&node_modules);
    }
    let python = std::env::var_os("FOXBORNE_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| venv_bin.join("python"));
    let imports = |modules: &str| {
        Command::new(&python)
            .args(["-c", &format!("import {modules}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let chromium = || {
        std::env::var_os("FOXBORNE_CHROMIUM")
            .map(PathBuf::from)
            .or_else(|| on_path("chromium"))
    };
    let root = || {
        std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1))
                == Some("0")
        })
    };
    type Present<'a> = Box<dyn Fn() -> bool + 'a>;
    let checks: [(&str, &str, Present); 5] = [
        (
            "python",
            "FOXBORNE_REQUIRE_PYTHON",
            Box::new(|| {
                imports(
                    "pymavlink, pyulog, pyarrow, pandas, numpy, duckdb, polars, mcap, jsonschema, geographiclib",
                )
            }),
        ),
        (
            "mavproxy",
            "FOXBORNE_REQUIRE_PYTHON",
            Box::new(|| {
                imports("pymavlink, MAVProxy") && python.with_file_name("mavproxy.py").is_file()
            }),
        ),
        (
            "browser",
            "FOXBORNE_REQUIRE_BROWSER",
            Box::new(|| {
                chromium().is_some()
                    && on_path("chromedriver").is_some()
                    && imports("selenium")
                    && node_modules.join("axe-core").is_dir()
            }),
        ),
        (
            "nats",
            "FOXBORNE_REQUIRE_NATS",
            Box::new(|| on_path("nats-server").is_some()),
        ),
        ("faults", "FOXBORNE_REQUIRE_FAULTS", Box::new(root)),
    ];
    for (what, require, present) in checks {
        println!("cargo::rustc-check-cfg=cfg(foxborne_no_{what})");
        if !required(require) && !present() {
            println!("cargo::rustc-cfg=foxborne_no_{what}");
        }
    }
}

/// Watches `path` when it exists (see [`tools_cfg`] for why a missing one is never watched).
fn watch_if_present(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// Where `program` is on `PATH`, if it is.
fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

fn corpus_cfg() {
    println!("cargo::rustc-check-cfg=cfg(foxborne_no_corpus)");
    println!("cargo::rerun-if-env-changed=FOXBORNE_CORPUS");
    println!("cargo::rerun-if-env-changed=FOXBORNE_REQUIRE_CORPUS");
    let corpus = std::env::var_os("FOXBORNE_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"))
                .join("../shared/corpus")
        });
    // Present: watched, so its going is noticed. Missing: not watched (see `tools_cfg`); a corpus
    // that appears later is noticed by setting FOXBORNE_CORPUS or `touch build.rs`.
    watch_if_present(&corpus);
    let required = std::env::var("FOXBORNE_REQUIRE_CORPUS").as_deref() == Ok("1");
    if !corpus.is_dir() && !required {
        println!("cargo::rustc-cfg=foxborne_no_corpus");
    }
}
