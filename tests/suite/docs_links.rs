//! The docs as a reader meets them (issue 41): every relative link of README.md and docs/*.md
//! leads to a file of the crate, every `#anchor` to a heading of its page (GitHub's slugs),
//! external links are well formed (never fetched: no network), every verb's `--help` names its
//! reference page in docs/, and docs/config.md states the range of every number the example
//! config does. Reads only the crate and the built binary: no kit needed.

use crate::common;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, sorted.
fn pages() -> Vec<PathBuf> {
    let docs = crate_dir().join("docs");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap_or_else(|e| panic!("reading {}: {e}", docs.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, crate_dir().join("README.md"));
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The page's lines outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// `line` with its code spans (`` `...` ``, ``` ``...`` ```) taken out, so code that looks like
/// a link (`v[0](x)`) is not read as one.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let fence = &rest[start..start + ticks];
        let after = &rest[start + ticks..];
        match after.find(fence) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                return out;
            }
        }
    }
    out.push_str(rest);
    out
}

/// GitHub's anchor for a heading's text: lower case; letters, digits, `-` and `_` kept; spaces
/// become `-`; everything else (backticks, punctuation) dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The anchors of a page's headings; a repeated heading gets `-1`, `-2`, ... as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// The targets of the inline links and images (`[text](target)`, `![alt](target)`) on a line.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end]
            .trim()
            .trim_start_matches('<')
            .trim_end_matches('>');
        // A title after the target (`(page.md "Title")`) is not part of it.
        targets.push(target.split_whitespace().next().unwrap_or("").to_string());
        rest = &after[end..];
    }
    targets
}

/// What is wrong with an external link's syntax (it is never fetched), if anything.
fn bad_url(url: &str) -> Option<&'static str> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        return Some("no host");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("a space in it");
    }
    None
}

/// How many links one page of the tree under `root` has, and every broken one, as
/// `page:line: (target): why`.
fn check_links(page: &Path, root: &Path) -> (usize, Vec<String>) {
    let text = read(page);
    let root = root.canonicalize().unwrap();
    let name = page
        .strip_prefix(&root)
        .unwrap_or(page)
        .display()
        .to_string();
    let mut broken = Vec::new();
    let mut links = 0;
    for (number, line) in prose_lines(&text) {
        for target in link_targets(line) {
            links += 1;
            let mut fail = |why: String| broken.push(format!("{name}:{number}: ({target}): {why}"));
            if target.is_empty() {
                fail("empty link".into());
                continue;
            }
            if target.starts_with("http://") || target.starts_with("https://") {
                if let Some(why) = bad_url(&target) {
                    fail(why.into());
                }
                continue;
            }
            if target.contains("://") || target.starts_with("mailto:") {
                fail("only relative, http and https links are expected".into());
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.to_path_buf()
            } else {
                page.parent().unwrap().join(path)
            };
            let Ok(found) = file.canonicalize() else {
                fail("no such file".into());
                continue;
            };
            if !found.starts_with(&root) {
                fail("leads out of the tree".into());
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if found.extension().is_none_or(|e| e != "md") {
                fail("an anchor into a file that is not a page".into());
            } else if !anchors(&read(&found)).contains(anchor) {
                fail(format!("no heading `#{anchor}` in {}", found.display()));
            }
        }
    }
    (links, broken)
}

#[test]
fn github_slugs_are_made_as_github_makes_them() {
    assert_eq!(
        slug(" `analyze`: the same findings offline"),
        "analyze-the-same-findings-offline"
    );
    assert_eq!(
        slug("`.tlog` files and `tlog convert`"),
        "tlog-files-and-tlog-convert"
    );
    assert_eq!(slug("Publish, retention"), "publish-retention");
    assert_eq!(
        slug("The radio's own numbers: RADIO_STATUS"),
        "the-radios-own-numbers-radio_status"
    );
    let text = "# A\n## Notes\n```\n# not a heading\n```\n### Notes\n";
    let found: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(found, ["a", "notes", "notes-1"]);
}

#[test]
fn links_are_read_outside_code_only() {
    assert_eq!(
        link_targets("see [the page](docs/a.md#x), ![pic](b.png) and `v[0](x)`"),
        ["docs/a.md#x", "b.png"]
    );
    assert_eq!(link_targets("``a](b)`` and [c](d.md \"title\")"), ["d.md"]);
    assert_eq!(bad_url("https://example.com/a b"), Some("a space in it"));
    assert_eq!(bad_url("https:///path"), Some("no host"));
    assert_eq!(bad_url("https://github.com/rust-fuzz/cargo-fuzz"), None);
}

#[test]
fn every_link_of_the_readme_and_the_docs_leads_somewhere() {
    let pages = pages();
    assert!(pages.len() > 5, "{pages:?}");
    let root = crate_dir();
    let mut links = 0;
    let mut broken = Vec::new();
    for page in &pages {
        let (found, wrong) = check_links(page, &root);
        links += found;
        broken.extend(wrong);
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README alone links every page: a reader that found none would pass vacuously.
    assert!(
        links > 50,
        "only {links} links found in {} pages",
        pages.len()
    );
}

#[test]
fn a_broken_link_and_a_missing_anchor_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let docs = tree.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let page = docs.join("page.md");
    std::fs::write(
        &page,
        "# Page\n\n[ok](#page) [gone](nowhere.md) [no anchor](#missing) [bad](https://) \
         [out](../../x.md)\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("x.md"), "# X\n").unwrap();
    let (links, broken) = check_links(&page, &tree);
    assert_eq!((links, broken.len()), (5, 4), "{broken:#?}");
    assert!(
        broken[0].contains("(nowhere.md): no such file"),
        "{broken:#?}"
    );
    assert!(broken[1].contains("no heading `#missing`"), "{broken:#?}");
    assert!(broken[2].contains("no host"), "{broken:#?}");
    assert!(
        broken[3].contains("(../../x.md): leads out of the tree"),
        "{broken:#?}"
    );
}

/// The verbs under `path` (`[]` for the binary itself), as its `--help` lists them.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect()
}

fn help_of(path: &[String]) -> String {
    let out = common::run_ok(
        Command::new(common::binary()).args(path).arg("--help"),
        &format!("foxborne-receiver {} --help", path.join(" ")),
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_verb_names_its_reference_page() {
    let root_help = help_of(&[]);
    assert!(
        root_help.contains("Documentation: README.md and docs/"),
        "{root_help}"
    );
    let mut to_visit: Vec<Vec<String>> = subcommands(&root_help)
        .into_iter()
        .map(|verb| vec![verb])
        .collect();
    assert!(to_visit.len() >= 10, "verbs: {to_visit:?}");
    let mut checked = Vec::new();
    let mut missing = Vec::new();
    while let Some(path) = to_visit.pop() {
        let help = help_of(&path);
        let verb = path.join(" ");
        let lines: Vec<&str> = help
            .lines()
            .filter(|l| l.starts_with("Reference: "))
            .collect();
        let [line] = lines[..] else {
            missing.push(format!(
                "`{verb} --help` has {} `Reference:` lines (give it one: \
                 #[command(after_help = reference::PAGE)], src/cmd/reference.rs)",
                lines.len()
            ));
            continue;
        };
        let page = line
            .strip_prefix("Reference: ")
            .and_then(|l| l.split_whitespace().next())
            .unwrap();
        let installed = format!("(installed: /usr/share/doc/foxborne-receiver/{page})");
        if !page.starts_with("docs/") || !page.ends_with(".md") || !line.ends_with(&installed) {
            missing.push(format!(
                "`{verb} --help`: `{line}` is not `Reference: docs/PAGE.md {installed}`"
            ));
        } else if !crate_dir().join(page).is_file() {
            missing.push(format!(
                "`{verb} --help` names {page}, which does not exist"
            ));
        }
        checked.push(verb);
        for sub in subcommands(&help) {
            to_visit.push(path.iter().cloned().chain([sub]).collect());
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    for verb in [
        "run",
        "tlog convert",
        "ulog ingest",
        "ulog catalog rebuild",
        "range",
    ] {
        assert!(
            checked.iter().any(|c| c == verb),
            "{verb} not reached: {checked:?}"
        );
    }
}

/// Each `name: MIN to MAX UNIT` the example config states beside its keys.
fn stated_ranges(text: &str) -> Vec<(String, String)> {
    let mut ranges = Vec::new();
    for (at, _) in text.match_indices(": ") {
        let name_start = text[..at]
            .rfind(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .map_or(0, |i| i + 1);
        let name = &text[name_start..at];
        let words: Vec<&str> = text[at + 2..].split_whitespace().take(4).collect();
        let [min, "to", max, unit] = words[..] else {
            continue;
        };
        let unit = unit.trim_end_matches([',', ';', ')', '.']);
        let number = |s: &str| !s.is_empty() && s.parse::<f64>().is_ok();
        if !name.is_empty() && number(min) && number(max) && unit.chars().all(char::is_alphabetic) {
            ranges.push((name.to_string(), format!("{min} to {max} {unit}")));
        }
    }
    ranges
}

#[test]
fn the_config_page_states_every_range_the_example_config_states() {
    let example = read(&crate_dir().join("config/receiver.toml"));
    let page = read(&crate_dir().join("docs/config.md"));
    let ranges = stated_ranges(&example);
    assert!(ranges.len() >= 20, "{ranges:?}");
    let missing: Vec<String> = ranges
        .iter()
        .filter(|(name, range)| {
            !page.lines().any(|l| {
                l.starts_with('|') && l.contains(&format!("{name}`")) && l.contains(range.as_str())
            })
        })
        .map(|(name, range)| format!("{name}: {range}"))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/config.md has no row stating: {missing:#?}"
    );
}
