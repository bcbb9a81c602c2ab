//! The crate's module layering: the pure core (`utc`, `wire`, `monitor`, `receipt`, `ulog`, the
//! config types) sits below the shell (`clock`, `daemon`, `http`, `publish`, `sink`, `range`,
//! `cmd`), and no two modules depend on each other, directly or round a longer loop (issue 41
//! broke the ones there were by moving the shared piece down).
//!
//! The test reads `src/` as text, follows the `mod` declarations from `src/lib.rs` (`#[path]`
//! and inline modules included), resolves every `use` and every path in code (`crate::`,
//! `super::`, `self::`, or a name a `use` brought in) through re-exports to the module that
//! defines the item, and builds, for every module, the graph among its children: an edge A -> B
//! when anything under A names anything under B. What a child takes from its parent's own file
//! (its error type, a shared helper) is the usual shape of a module and makes no edge. A
//! strongly connected component of more than one node is a cycle; the failure prints each with
//! one citation (file:line and the path) per edge, so the loop can be found and cut.
//!
//! Unit tests inside a module count as that module: a test of the pure core that reaches into
//! the shell is a layering fault as much as the code it tests.
//!
//! `cargo test --test suite module_cycles:: -- --nocapture` prints every level's cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Path, // `::`
    Punct(char),
    Str(String),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
}

/// Rust source to tokens, enough to find paths: comments, char and string literals (raw and
/// byte strings included) and numbers are stepped over; lifetimes are not mistaken for chars.
fn tokenize(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if let Some((len, hashes)) = raw_string_start(&b[i..]) {
            // r"..", r#".."#, br#".."#
            let start = i + len;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let mut j = start;
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            let text = String::from_utf8_lossy(&b[start..j.min(b.len())]).into_owned();
            line += text.matches('\n').count();
            out.push(Token {
                tok: Tok::Str(text),
                line,
            });
            i = j + close.len();
        } else if c == b'"' || (c == b'b' && b.get(i + 1) == Some(&b'"')) {
            let start = if c == b'b' { i + 2 } else { i + 1 };
            let mut j = start;
            while j < b.len() && b[j] != b'"' {
                if b[j] == b'\\' {
                    j += 1;
                }
                if j < b.len() && b[j] == b'\n' {
                    line += 1;
                }
                j += 1;
            }
            out.push(Token {
                tok: Tok::Str(String::from_utf8_lossy(&b[start..j.min(b.len())]).into_owned()),
                line,
            });
            i = j + 1;
        } else if c == b'\'' || (c == b'b' && b.get(i + 1) == Some(&b'\'')) {
            let q = if c == b'b' { i + 1 } else { i };
            if b.get(q + 1) == Some(&b'\\') {
                // an escaped char literal (`'\''`, `'\u{..}'`): past the escaped character to
                // the closing quote
                let mut j = q + 3;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
            } else {
                // 'x' is a char (x one UTF-8 character); otherwise a lifetime or label
                let ch_len = src[q + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(q + 1 + ch_len) == Some(&b'\'') {
                    i = q + 2 + ch_len;
                } else {
                    i = q + 1;
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                }
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &src[start..i];
            let word = word.strip_prefix("r#").unwrap_or(word);
            out.push(Token {
                tok: Tok::Ident(word.to_string()),
                line,
            });
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
                // `1..2` is a range, not a float
                if b[i] == b'.' && b.get(i + 1) == Some(&b'.') {
                    break;
                }
                i += 1;
            }
        } else if b[i..].starts_with(b"::") {
            out.push(Token {
                tok: Tok::Path,
                line,
            });
            i += 2;
        } else {
            // skip any other UTF-8 character whole
            let ch = src[i..].chars().next().unwrap();
            if ch.is_ascii() {
                out.push(Token {
                    tok: Tok::Punct(ch),
                    line,
                });
            }
            i += ch.len_utf8();
        }
    }
    out
}

/// `r"`, `r#"`, `br##"`...: the length of the opening and its count of `#`.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let mut j = 0;
    if b.first() == Some(&b'b') {
        j = 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    (b.get(j) == Some(&b'"')).then_some((j + 1, hashes))
}

/// One `use` leaf: the path as written and the name it binds (`None` for a glob).
struct UseLeaf {
    path: Vec<String>,
    name: Option<String>,
    line: usize,
}

/// A use tree from `toks[*i]` (after `use`) to its `;`.
fn parse_use(toks: &[Token], i: &mut usize, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    let line = toks.get(*i).map_or(0, |t| t.line);
    if toks.get(*i).map(|t| &t.tok) == Some(&Tok::Path) {
        *i += 1; // a leading `::`: an extern crate
    }
    loop {
        match toks.get(*i).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => {
                path.push(s.clone());
                *i += 1;
            }
            Some(Tok::Punct('{')) => {
                *i += 1;
                loop {
                    match toks.get(*i).map(|t| &t.tok) {
                        Some(Tok::Punct('}')) => {
                            *i += 1;
                            return;
                        }
                        Some(Tok::Punct(',')) => *i += 1,
                        None => return,
                        _ => parse_use(toks, i, &path, out),
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                *i += 1;
                out.push(UseLeaf {
                    path,
                    name: None,
                    line,
                });
                return;
            }
            _ => return,
        }
        if toks.get(*i).map(|t| &t.tok) == Some(&Tok::Path) {
            *i += 1;
            continue;
        }
        // the end of this leaf: an optional `as name`
        let mut name = path.last().cloned();
        if toks.get(*i).map(|t| &t.tok) == Some(&Tok::Ident("as".into())) {
            if let Some(Tok::Ident(alias)) = toks.get(*i + 1).map(|t| &t.tok) {
                name = Some(alias.clone());
            }
            *i += 2;
        }
        if path.last().map(String::as_str) == Some("self") {
            path.pop();
            if name.as_deref() == Some("self") {
                name = path.last().cloned();
            }
        }
        out.push(UseLeaf { path, name, line });
        return;
    }
}

/// A path named in code, where it was named, and from which module.
struct Reference {
    from: ModPath,
    path: Vec<String>,
    file: String,
    line: usize,
}

#[derive(Default)]
struct Crate {
    /// Every module, file or inline, and the file it lives in.
    modules: BTreeMap<ModPath, String>,
    /// Per module: name -> (the path its `use` names).
    bindings: BTreeMap<ModPath, BTreeMap<String, Vec<String>>>,
    /// Per module: the paths of its glob imports.
    globs: BTreeMap<ModPath, Vec<Vec<String>>>,
    references: Vec<Reference>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut krate = Crate::default();
        krate.read_file(src, &src.join("lib.rs"), Vec::new(), true);
        krate
    }

    /// One file holding module `module`; `owns_dir` when it is `lib.rs`/`mod.rs` (its children
    /// live beside it, not in a folder named after it).
    fn read_file(&mut self, src: &Path, file: &Path, module: ModPath, owns_dir: bool) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let rel = file
            .strip_prefix(src.parent().unwrap())
            .unwrap()
            .display()
            .to_string();
        let dir = file.parent().unwrap().to_path_buf();
        let child_dir = if owns_dir {
            dir.clone()
        } else {
            dir.join(file.file_stem().unwrap())
        };
        self.modules.insert(module.clone(), rel.clone());
        let toks = tokenize(&text);
        // the inline modules open at this point: (module, the brace depth it closes at)
        let mut scopes: Vec<(ModPath, usize, PathBuf)> = vec![(module, 0, child_dir)];
        let mut depth = 0;
        let mut path_attr: Option<String> = None;
        let mut i = 0;
        while i < toks.len() {
            let scope = scopes.last().unwrap().0.clone();
            match &toks[i].tok {
                Tok::Punct('{') => {
                    depth += 1;
                    i += 1;
                }
                Tok::Punct('}') => {
                    if scopes.len() > 1 && scopes.last().unwrap().1 == depth {
                        scopes.pop();
                    }
                    depth -= 1;
                    i += 1;
                }
                Tok::Punct('#') if is_path_attr(&toks[i..]) => {
                    if let Some(Tok::Str(p)) = toks.get(i + 4).map(|t| &t.tok) {
                        path_attr = Some(p.clone());
                    }
                    i += 6;
                }
                Tok::Ident(w) if w == "mod" => {
                    let Some(Tok::Ident(name)) = toks.get(i + 1).map(|t| t.tok.clone()) else {
                        i += 1;
                        continue;
                    };
                    let mut child = scope.clone();
                    child.push(name.clone());
                    let here = scopes.last().unwrap().2.clone();
                    match toks.get(i + 2).map(|t| &t.tok) {
                        Some(Tok::Punct(';')) => {
                            let (path, owns) = match path_attr.take() {
                                Some(p) => (dir.join(p), false),
                                None if here.join(format!("{name}.rs")).is_file() => {
                                    (here.join(format!("{name}.rs")), false)
                                }
                                None => (here.join(&name).join("mod.rs"), true),
                            };
                            self.read_file(src, &path, child, owns);
                            i += 3;
                        }
                        Some(Tok::Punct('{')) => {
                            depth += 1;
                            self.modules.insert(child.clone(), rel.clone());
                            scopes.push((child, depth, here.join(&name)));
                            i += 3;
                        }
                        _ => i += 1,
                    }
                }
                Tok::Ident(w) if w == "use" => {
                    i += 1;
                    let mut leaves = Vec::new();
                    parse_use(&toks, &mut i, &[], &mut leaves);
                    for leaf in leaves {
                        match &leaf.name {
                            Some(name) => {
                                self.bindings
                                    .entry(scope.clone())
                                    .or_default()
                                    .insert(name.clone(), leaf.path.clone());
                            }
                            None => self
                                .globs
                                .entry(scope.clone())
                                .or_default()
                                .push(leaf.path.clone()),
                        }
                        self.references.push(Reference {
                            from: scope.clone(),
                            path: leaf.path,
                            file: rel.clone(),
                            line: leaf.line,
                        });
                    }
                }
                Tok::Ident(first) => {
                    // a path in code: `a::b::c`, not itself the tail of a longer path
                    let starts = i == 0 || toks[i - 1].tok != Tok::Path;
                    if starts && toks.get(i + 1).map(|t| &t.tok) == Some(&Tok::Path) {
                        let line = toks[i].line;
                        let mut path = vec![first.clone()];
                        let mut j = i + 1;
                        while toks.get(j).map(|t| &t.tok) == Some(&Tok::Path) {
                            match toks.get(j + 1).map(|t| &t.tok) {
                                Some(Tok::Ident(s)) => {
                                    path.push(s.clone());
                                    j += 2;
                                }
                                _ => break,
                            }
                        }
                        self.references.push(Reference {
                            from: scope.clone(),
                            path,
                            file: rel.clone(),
                            line,
                        });
                        i = j;
                    } else {
                        i += 1;
                    }
                }
                _ => i += 1,
            }
        }
    }

    fn is_module(&self, m: &[String]) -> bool {
        self.modules.contains_key(m)
    }

    /// The module that defines what `path`, named in module `from`, names; `None` for anything
    /// outside the crate (std, dependencies) or not found.
    fn resolve(&self, from: &[String], path: &[String], budget: usize) -> Option<ModPath> {
        if budget == 0 || path.is_empty() {
            return None;
        }
        let (mut at, rest): (ModPath, &[String]) = match path[0].as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (from.to_vec(), &path[1..]),
            "super" => {
                let mut at = from.to_vec();
                let mut k = 0;
                while path.get(k).map(String::as_str) == Some("super") {
                    at.pop()?;
                    k += 1;
                }
                (at, &path[k..])
            }
            "Self" => return None,
            _ => {
                // a name in scope: a child module, an import of this module, or a glob's
                let mut child = from.to_vec();
                child.push(path[0].clone());
                if self.is_module(&child) {
                    (child, &path[1..])
                } else if let Some(target) = self.binding(from, &path[0], budget) {
                    let mut full = target;
                    full.extend_from_slice(&path[1..]);
                    return self.resolve(from, &full, budget - 1);
                } else {
                    return None;
                }
            }
        };
        for (k, seg) in rest.iter().enumerate() {
            let mut child = at.clone();
            child.push(seg.clone());
            if self.is_module(&child) {
                at = child;
                continue;
            }
            // not a module: an item of `at`, or a name `at` imports (a re-export)
            if let Some(target) = self.binding(&at, seg, budget) {
                let mut full = target;
                full.extend_from_slice(&rest[k + 1..]);
                return self.resolve(&at, &full, budget - 1).or(Some(at));
            }
            return Some(at);
        }
        Some(at)
    }

    /// What `name` is bound to in module `m` by a `use` (named or glob), as a crate path.
    fn binding(&self, m: &[String], name: &str, budget: usize) -> Option<Vec<String>> {
        if let Some(path) = self.bindings.get(m).and_then(|b| b.get(name)) {
            let target = self.resolve(m, path, budget.checked_sub(1)?)?;
            // the binding names an item of `target` (or the module itself)
            let mut full = vec!["crate".to_string()];
            full.extend(target.iter().cloned());
            let last = path.last()?;
            if target.last() != Some(last) {
                full.push(last.clone());
            }
            return Some(full);
        }
        for glob in self.globs.get(m).into_iter().flatten() {
            let Some(source) = self.resolve(m, glob, budget.checked_sub(1)?) else {
                continue;
            };
            let mut child = source.clone();
            child.push(name.to_string());
            if self.is_module(&child)
                || self
                    .bindings
                    .get(&source)
                    .is_some_and(|b| b.contains_key(name))
            {
                let mut full = vec!["crate".to_string()];
                full.extend(child);
                return Some(full);
            }
        }
        None
    }
}

/// `#[path = "x.rs"]`
fn is_path_attr(t: &[Token]) -> bool {
    t.len() > 5
        && t[1].tok == Tok::Punct('[')
        && t[2].tok == Tok::Ident("path".into())
        && t[3].tok == Tok::Punct('=')
        && matches!(t[4].tok, Tok::Str(_))
        && t[5].tok == Tok::Punct(']')
}

/// An edge of one level's graph, with the first place that makes it.
type Edges = BTreeMap<(String, String), String>;

/// The graph among the children of `parent`. What a child takes from `parent`'s own file (its
/// error type, a shared helper) is the usual shape of a module and makes no edge; what `parent`
/// re-exports from a child is followed to that child.
fn level_graph(
    krate: &Crate,
    dependencies: &[Dependency],
    parent: &[String],
) -> (BTreeSet<String>, Edges) {
    let node_of = |m: &[String]| -> Option<String> {
        if !m.starts_with(parent) {
            return None;
        }
        let mut n = parent.to_vec();
        n.push(m.get(parent.len())?.clone());
        Some(n.join("::"))
    };
    let mut nodes = BTreeSet::new();
    for m in krate.modules.keys() {
        if let Some(n) = node_of(m) {
            nodes.insert(n);
        }
    }
    let mut edges = Edges::new();
    for d in dependencies {
        let (Some(from), Some(to)) = (node_of(&d.from), node_of(&d.to)) else {
            continue;
        };
        if from != to {
            edges.entry((from, to)).or_insert_with(|| d.at.clone());
        }
    }
    (nodes, edges)
}

/// One module naming another, and where it first does.
struct Dependency {
    from: ModPath,
    to: ModPath,
    at: String,
}

/// Every reference resolved once (to a module of the crate; std and dependencies left out).
fn dependencies(krate: &Crate) -> Vec<Dependency> {
    krate
        .references
        .iter()
        .filter_map(|r| {
            let to = krate.resolve(&r.from, &r.path, 16)?;
            Some(Dependency {
                from: r.from.clone(),
                to,
                at: format!("{}:{} {}", r.file, r.line, r.path.join("::")),
            })
        })
        .collect()
}

/// Tarjan's strongly connected components with more than one node.
fn cycles(nodes: &BTreeSet<String>, edges: &Edges) -> Vec<Vec<String>> {
    let index_of: BTreeMap<&String, usize> =
        nodes.iter().enumerate().map(|(i, n)| (n, i)).collect();
    let names: Vec<&String> = nodes.iter().collect();
    let mut adj = vec![Vec::new(); nodes.len()];
    for (a, b) in edges.keys() {
        adj[index_of[a]].push(index_of[b]);
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, adj: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &adj[v] {
            match s.index[w] {
                None => {
                    visit(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let n = nodes.len();
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(v, &adj, &mut s);
        }
    }
    let mut out: Vec<Vec<String>> = s
        .out
        .into_iter()
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect();
    out.sort();
    out
}

/// Every level's cycles, printed with the edges inside each, and how many there are.
fn report(krate: &Crate) -> (String, usize) {
    let mut text = String::new();
    let mut count = 0;
    let dependencies = dependencies(krate);
    let parents: BTreeSet<ModPath> = krate
        .modules
        .keys()
        .filter(|m| {
            krate
                .modules
                .keys()
                .any(|c| c.len() == m.len() + 1 && c.starts_with(m))
        })
        .cloned()
        .collect();
    for parent in &parents {
        let (nodes, edges) = level_graph(krate, &dependencies, parent);
        let found = cycles(&nodes, &edges);
        if found.is_empty() {
            continue;
        }
        let name = if parent.is_empty() {
            "crate".to_string()
        } else {
            parent.join("::")
        };
        count += found.len();
        let _ = writeln!(text, "{name}: {} cycle(s)", found.len());
        for component in found {
            let _ = writeln!(text, "  {{{}}}", component.join(", "));
            for ((a, b), at) in &edges {
                if component.contains(a) && component.contains(b) {
                    let _ = writeln!(text, "    {a} -> {b}   ({at})");
                }
            }
        }
    }
    (text, count)
}

fn crate_src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn no_module_cycle_at_any_level() {
    let krate = Crate::read(&crate_src());
    let (text, cycles) = report(&krate);
    print!("{text}");
    assert_eq!(
        cycles, 0,
        "module cycles (a -> b: a names something of b, first at the place shown); break each by \
         moving the shared piece down into the lower module or a small module both use:\n{text}"
    );
}

#[test]
fn the_graph_sees_the_crate() {
    // the reader must find the modules and the edges it is meant to judge: a reader that
    // silently found nothing would pass the test above
    let krate = Crate::read(&crate_src());
    for m in [
        "service::stop",
        "ulog::export::spill",
        "catalog::labels",
        "wire::scanner::tests",
    ] {
        let path: ModPath = m.split("::").map(String::from).collect();
        assert!(krate.is_module(&path), "module {m} not found");
    }
    let (_, edges) = level_graph(&krate, &dependencies(&krate), &[]);
    for (a, b) in [
        ("cmd", "config"),
        ("daemon", "wire"),
        ("http", "status"),
        ("monitor", "receipt"),
        ("receipt", "utc"),
    ] {
        assert!(
            edges.contains_key(&(a.to_string(), b.to_string())),
            "edge {a} -> {b} not found"
        );
    }
}

#[test]
fn a_cycle_is_found_through_a_re_export() {
    // a -> b through a name b re-exports from c, and c -> a: a cycle of three
    let mut krate = Crate::default();
    for m in ["", "a", "b", "c"] {
        let path: ModPath = if m.is_empty() { vec![] } else { vec![m.into()] };
        krate.modules.insert(path, format!("{m}.rs"));
    }
    krate.bindings.entry(vec!["b".into()]).or_default().insert(
        "Thing".into(),
        vec!["crate".into(), "c".into(), "Thing".into()],
    );
    for (from, path) in [("a", "crate::b::Thing"), ("c", "super::a::f")] {
        krate.references.push(Reference {
            from: vec![from.into()],
            path: path.split("::").map(String::from).collect(),
            file: format!("{from}.rs"),
            line: 1,
        });
    }
    let (nodes, edges) = level_graph(&krate, &dependencies(&krate), &[]);
    let found = cycles(&nodes, &edges);
    assert_eq!(
        found,
        vec![vec!["a".to_string(), "c".to_string()]],
        "{edges:?}"
    );
}
