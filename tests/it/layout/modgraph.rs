//! The module graph of one crate, read from its files: which sibling
//! modules use which, and the cycles among them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src`: `a/b.rs` and `a/b/mod.rs` are
/// `["a", "b"]`; `lib.rs`, `main.rs` and `bin/*.rs` are roots (`[]`).
fn module_of(src: &Path, file: &Path) -> Option<Vec<String>> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return Some(Vec::new());
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts)
}

/// The code of a file without comments, string contents and `#[cfg(test)]`
/// items (a test module's `use super::*` is not a dependency of the module).
fn code_of(text: &str) -> String {
    let cut = text.find("#[cfg(test)]").unwrap_or(text.len());
    let text = &text[..cut];
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_str = false;
                    out.push('"');
                }
                _ => {}
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' => {
                in_str = true;
                out.push('"');
            }
            // A char literal such as '"' would open a string.
            '\'' => {
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("\"'") {
                    chars.next();
                    chars.next();
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every path starting with `crate`, `super` or `self` in `code`, use-tree
/// groups expanded: `crate::a::{b, c::d}` gives `crate::a::b`, `crate::a::c::d`.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let word_start =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || b"_$:".contains(&bytes[i - 1]));
        if word_start {
            for head in ["crate::", "super::", "self::"] {
                if code[i..].starts_with(head) {
                    let prefix = vec![head.trim_end_matches(':').to_string()];
                    let mut pos = i + head.len();
                    parse_tree(code, &mut pos, prefix, &mut found);
                    i = pos;
                    break;
                }
            }
        }
        i += 1;
    }
    found
}

fn skip_ws(code: &str, pos: &mut usize) {
    while code[*pos..].starts_with(|c: char| c.is_whitespace()) {
        *pos += 1;
    }
}

fn ident(code: &str, pos: &mut usize) -> Option<String> {
    let start = *pos;
    while code[*pos..].starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        *pos += 1;
    }
    (*pos > start).then(|| code[start..*pos].to_string())
}

fn parse_tree(code: &str, pos: &mut usize, mut path: Vec<String>, out: &mut Vec<Vec<String>>) {
    loop {
        skip_ws(code, pos);
        if code[*pos..].starts_with('{') {
            *pos += 1;
            loop {
                skip_ws(code, pos);
                if code[*pos..].starts_with('}') || *pos >= code.len() {
                    *pos += 1;
                    return;
                }
                parse_tree(code, pos, path.clone(), out);
                skip_ws(code, pos);
                if code[*pos..].starts_with(',') {
                    *pos += 1;
                } else if code[*pos..].starts_with('}') {
                    *pos += 1;
                    return;
                } else {
                    return;
                }
            }
        }
        match ident(code, pos) {
            Some(seg) => path.push(seg),
            None => {
                if code[*pos..].starts_with('*') {
                    *pos += 1;
                }
                break;
            }
        }
        if code[*pos..].starts_with("::") {
            *pos += 2;
        } else {
            break;
        }
    }
    // `a as b`: the alias is not a path.
    out.push(path);
}

/// The module a path names: `crate::`/`super::`/`self::` resolved against
/// `from`, then the longest prefix that is a module of the crate.
fn target_of(
    path: &[String],
    from: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self") => {
            base = from.to_vec();
            rest = &path[1..];
        }
        Some("super") => {
            base = from.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let mut full = base;
    full.extend(rest.iter().cloned());
    (0..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|p| modules.contains(p))
}

/// The sibling edge a reference from `from` to `to` makes: the first
/// segments where they part under their common parent, or none when one
/// contains the other.
fn sibling_edge(from: &[String], to: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// Each crate's sibling edges: `module → module` it uses.
pub type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

pub fn graph_of(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().filter_map(|f| module_of(src, f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let Some(from) = module_of(src, file) else {
            continue;
        };
        // A `tests.rs` (declared `#[cfg(test)] mod tests;`) is test code, as
        // an inline `#[cfg(test)] mod tests { … }` is: its uses are not edges.
        if from.last().is_some_and(|m| m == "tests") {
            continue;
        }
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        for path in paths_in(&code_of(&text)) {
            let Some(to) = target_of(&path, &from, &modules) else {
                continue;
            };
            if let Some((a, b)) = sibling_edge(&from, &to) {
                graph.entry(a).or_default().insert(b);
            }
        }
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan).
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Vec<String>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.join("::"));
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.found.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    let nodes: Vec<&Vec<String>> = graph.keys().collect();
    for v in nodes {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}
