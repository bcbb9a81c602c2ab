//! The sender's SHA-256 manifest, as `sha256sum` writes it (`SHA256SUMS`): one line per file,
//! `<64 hex digits>  <name>` (or ` *<name>` in binary mode, a leading `\` when the name has
//! escaped characters), or the BSD form `sha256sum --tag` writes, `SHA256 (<name>) = <digits>`.
//! Parsed from its text; asked which entry lists a file. Pure: the caller reads the files.

use std::path::{Component, Path, PathBuf};

/// One listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name as listed (a path relative to the manifest's folder, or absolute).
    pub name: String,
    /// Lower-case hex.
    pub sha256: String,
    /// 1-based line in the manifest.
    pub line: usize,
}

/// A parsed manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The manifest's path, as given (for messages).
    pub file: String,
    /// The folder its names are relative to.
    dir: PathBuf,
    entries: Vec<Entry>,
}

/// Why a manifest cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ManifestError {
    #[error("manifest {file} line {line}: not a sha256sum line (64 hex digits, two spaces or ` *`, then the file name): {text:?}")]
    BadLine {
        file: String,
        line: usize,
        text: String,
    },
    #[error("manifest {file} line {line}: {name} is listed again with another digest (first on line {first})")]
    Conflict {
        file: String,
        line: usize,
        first: usize,
        name: String,
    },
}

/// Which entry lists a file.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup<'m> {
    /// Listed under its path, relative to the manifest's folder.
    ByPath(&'m Entry),
    /// No entry names its path, and exactly one has its file name (a manifest made where the
    /// logs sat in their dated folders, `log/2026-09-24/14_13_19.ulg`, for files copied flat).
    ByName(&'m Entry),
    /// Not listed; or only by a name several entries share, with other digests.
    NotListed { same_name: Vec<&'m Entry> },
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `sha256sum`'s escaping of names with a backslash or a newline.
fn unescape(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// (digest, name) of one line, if it is one.
fn parse_line(line: &str) -> Option<(String, String)> {
    if let Some(rest) = line.strip_prefix("SHA256 (") {
        let (name, digest) = rest.rsplit_once(") = ")?;
        return is_hex64(digest).then(|| (digest.to_ascii_lowercase(), name.to_string()));
    }
    let (escaped, line) = match line.strip_prefix('\\') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let digest = line.get(..64)?;
    let rest = line.get(64..)?;
    let name = rest
        .strip_prefix("  ")
        .or_else(|| rest.strip_prefix(" *"))?;
    if !is_hex64(digest) || name.is_empty() {
        return None;
    }
    let name = if escaped {
        unescape(name)
    } else {
        name.to_string()
    };
    Some((digest.to_ascii_lowercase(), name))
}

/// `path` with `.` and `..` taken out, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

impl Manifest {
    /// Parses the manifest `file` (its text, and the folder its names are relative to). Blank
    /// lines are skipped; anything else that is not a sha256sum line is an error, as is one name
    /// listed twice with two digests.
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Manifest, ManifestError> {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.trim().is_empty() {
                continue;
            }
            let Some((sha256, name)) = parse_line(line) else {
                return Err(ManifestError::BadLine {
                    file: file.to_string(),
                    line: i + 1,
                    text: line.chars().take(120).collect(),
                });
            };
            if let Some(first) = entries.iter().find(|e| e.name == name) {
                if first.sha256 != sha256 {
                    return Err(ManifestError::Conflict {
                        file: file.to_string(),
                        line: i + 1,
                        first: first.line,
                        name,
                    });
                }
                continue;
            }
            entries.push(Entry {
                name,
                sha256,
                line: i + 1,
            });
        }
        Ok(Manifest {
            file: file.to_string(),
            dir: dir.to_path_buf(),
            entries,
        })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry that lists the file at `path` (as absolute and free of `..` as the caller can
    /// make it; the manifest's folder should be given the same way).
    pub fn lookup(&self, path: &Path) -> Lookup<'_> {
        let wanted = normalize(path);
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| normalize(&self.dir.join(&e.name)) == wanted)
        {
            return Lookup::ByPath(e);
        }
        let file_name = wanted.file_name();
        let same_name: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|e| file_name.is_some() && Path::new(&e.name).file_name() == file_name)
            .collect();
        match same_name.as_slice() {
            [one] => Lookup::ByName(one),
            _ => Lookup::NotListed { same_name },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

    fn manifest(text: &str) -> Manifest {
        Manifest::parse(text, "SHA256SUMS", Path::new("/in")).unwrap()
    }

    #[test]
    fn reads_every_form_sha256sum_writes() {
        let text = format!(
            "{A}  14_13_19.ulg\n{} *log/2026-09-24/15_00_00.ulg\r\n\n\\{A}  odd\\\\name\\n.ulg\nSHA256 (tagged.ulg) = {B}\n",
            B.to_ascii_uppercase()
        );
        let m = manifest(&text);
        let names: Vec<(&str, &str, usize)> = m
            .entries()
            .iter()
            .map(|e| (e.name.as_str(), e.sha256.as_str(), e.line))
            .collect();
        assert_eq!(
            names,
            [
                ("14_13_19.ulg", A, 1),
                ("log/2026-09-24/15_00_00.ulg", B, 2),
                ("odd\\name\n.ulg", A, 4),
                ("tagged.ulg", B, 5),
            ]
        );
    }

    #[test]
    fn a_line_that_is_not_a_digest_is_refused_with_its_number() {
        let err = Manifest::parse(
            &format!("{A}  a.ulg\n{}  b.ulg\n", &A[..63]),
            "SHA256SUMS",
            Path::new("."),
        )
        .unwrap_err();
        assert!(
            matches!(err, ManifestError::BadLine { line: 2, .. }),
            "{err}"
        );
        assert!(err
            .to_string()
            .starts_with("manifest SHA256SUMS line 2: not a sha256sum line"));
        let err =
            Manifest::parse(&format!("{A}  a.ulg\n{B}  a.ulg\n"), "S", Path::new(".")).unwrap_err();
        assert!(matches!(
            err,
            ManifestError::Conflict {
                line: 2,
                first: 1,
                ..
            }
        ));
        // The same entry twice is harmless.
        assert_eq!(
            manifest(&format!("{A}  a.ulg\n{A}  a.ulg\n"))
                .entries()
                .len(),
            1
        );
    }

    #[test]
    fn a_file_is_found_by_its_path_else_by_a_unique_name() {
        let m = manifest(&format!(
            "{A}  ./14_13_19.ulg\n{B}  log/2026-09-24/15_00_00.ulg\n{A}  a/dup.ulg\n{B}  b/dup.ulg\n"
        ));
        assert!(
            matches!(m.lookup(Path::new("/in/14_13_19.ulg")), Lookup::ByPath(e) if e.line == 1)
        );
        assert!(matches!(
            m.lookup(Path::new("/in/log/x/../2026-09-24/15_00_00.ulg")),
            Lookup::ByPath(e) if e.line == 2
        ));
        assert!(
            matches!(m.lookup(Path::new("/elsewhere/15_00_00.ulg")), Lookup::ByName(e) if e.line == 2)
        );
        assert!(matches!(m.lookup(Path::new("/in/b/dup.ulg")), Lookup::ByPath(e) if e.line == 4));
        assert!(
            matches!(m.lookup(Path::new("/elsewhere/dup.ulg")), Lookup::NotListed { same_name } if same_name.len() == 2)
        );
        assert!(
            matches!(m.lookup(Path::new("/in/other.ulg")), Lookup::NotListed { same_name } if same_name.is_empty())
        );
    }
}
