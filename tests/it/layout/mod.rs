//! The workspace's shape, checked: no import cycles between sibling modules
//! of any crate, and no source file over about 500 lines.
//!
//! Modules are read from the file tree (`src/a.rs`, `src/a/mod.rs`,
//! `src/a/b.rs`); a reference is any `crate::…`, `super::…` or `self::…`
//! path outside comments and `#[cfg(test)]` code. A reference from
//! `sink::mqtt` to `relay` is an edge `sink → relay` between the siblings
//! under their common parent, so a cycle is always between modules of one
//! level. `APP_LAYOUT_PRINT=1 cargo test --test it layout:: -- --nocapture`
//! prints each crate's edges: the picture of who depends on whom.
//!
//! Known debts are listed in `KNOWN_CYCLES` and `LONG_FILES` below; the test
//! fails when a new one appears, when a listed file grows, and when a listed
//! debt is paid (so the list only shrinks).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use modgraph::{cycles, graph_of, rust_files};

mod modgraph;

/// Lines a source file may have.
const MAX_LINES: usize = 500;

/// Cycles not yet broken: (crate source dir, modules in the cycle, sorted).
const KNOWN_CYCLES: &[(&str, &[&str])] = &[];

/// Files over `MAX_LINES` not yet split, with the length they may not exceed.
const LONG_FILES: &[(&str, usize)] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every crate's source directory in the workspace.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![
        root.join("src"),
        root.join("sdk/src"),
        root.join("fetch/src"),
        root.join("fetch/protocol/src"),
    ];
    for group in ["plugins", "bench", "packaging"] {
        let Ok(entries) = fs::read_dir(root.join(group)) else {
            continue;
        };
        for entry in entries.flatten() {
            let src = entry.path().join("src");
            if src.is_dir() {
                dirs.push(src);
            }
        }
    }
    dirs.sort();
    dirs
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_import_cycles_between_modules() {
    // The detector sees a cycle where there is one (a ↔ b through a nested
    // module and a grouped use) and none in a one-way chain.
    let fixture = tempfile::tempdir().expect("tempdir");
    let src = fixture.path();
    fs::create_dir_all(src.join("a")).expect("mkdir");
    fs::write(src.join("lib.rs"), "mod a; mod b; mod c;").expect("write");
    fs::write(src.join("a/mod.rs"), "mod inner;").expect("write");
    fs::write(src.join("a/inner.rs"), "use crate::{b::B, c};").expect("write");
    fs::write(
        src.join("b.rs"),
        "// crate::c::X in a comment\nfn f() { super::a::g(\"crate::c\") }",
    )
    .expect("write");
    fs::write(
        src.join("c.rs"),
        "#[cfg(test)]\nmod tests { use crate::a::g; }",
    )
    .expect("write");
    // Test code in a file of its own is test code too.
    fs::create_dir_all(src.join("c")).expect("mkdir");
    fs::write(src.join("c/tests.rs"), "use crate::a::g;").expect("write");
    let graph = graph_of(src);
    assert_eq!(
        cycles(&graph),
        vec![vec!["a".to_string(), "b".to_string()]],
        "edges: {graph:?}"
    );
    fs::write(src.join("b.rs"), "fn f() {}").expect("write");
    assert!(cycles(&graph_of(src)).is_empty());

    let root = root();
    let print = std::env::var_os("APP_LAYOUT_PRINT").is_some();
    let mut found = Vec::new();
    for dir in crate_dirs(&root) {
        let graph = graph_of(&dir);
        if print {
            println!("{}:", rel(&root, &dir));
            for (from, tos) in &graph {
                let tos: Vec<String> = tos.iter().map(|t| t.join("::")).collect();
                println!("  {} → {}", from.join("::"), tos.join(", "));
            }
        }
        for cycle in cycles(&graph) {
            found.push((rel(&root, &dir), cycle));
        }
    }
    let known: Vec<(String, Vec<String>)> = KNOWN_CYCLES
        .iter()
        .map(|(d, c)| (d.to_string(), c.iter().map(|s| s.to_string()).collect()))
        .collect();
    let new: Vec<_> = found.iter().filter(|c| !known.contains(c)).collect();
    let gone: Vec<_> = known.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        new.is_empty(),
        "import cycles (break them, e.g. move the shared type to a module both use): {new:#?}"
    );
    assert!(
        gone.is_empty(),
        "these cycles are gone: take them out of KNOWN_CYCLES in tests/it/layout.rs: {gone:#?}"
    );
}

fn long_files(root: &Path, files: &[PathBuf]) -> BTreeMap<String, usize> {
    let mut long = BTreeMap::new();
    for file in files {
        let text = fs::read_to_string(file).expect("read a source file");
        let lines = text.lines().count();
        if lines > MAX_LINES {
            long.insert(rel(root, file), lines);
        }
    }
    long
}

#[test]
fn no_source_file_over_500_lines() {
    let root = root();
    let mut files = Vec::new();
    for dir in crate_dirs(&root) {
        rust_files(&dir, &mut files);
    }
    rust_files(&root.join("tests"), &mut files);
    rust_files(&root.join("fuzz/fuzz_targets"), &mut files);
    // The count sees a long file where there is one.
    let fixture = tempfile::tempdir().expect("tempdir");
    let long_one = fixture.path().join("long.rs");
    fs::write(&long_one, "fn f() {}\n".repeat(MAX_LINES + 1)).expect("write");
    let short_one = fixture.path().join("short.rs");
    fs::write(&short_one, "fn f() {}\n".repeat(MAX_LINES)).expect("write");
    let seen = long_files(fixture.path(), &[long_one, short_one]);
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        vec![("long.rs".to_string(), MAX_LINES + 1)]
    );

    let long = long_files(&root, &files);
    let mut problems = Vec::new();
    for (file, lines) in &long {
        match LONG_FILES.iter().find(|(f, _)| f == file) {
            None => problems.push(format!(
                "{file}: {lines} lines (at most {MAX_LINES}: split it by concern)"
            )),
            Some((_, cap)) if lines > cap => problems.push(format!(
                "{file}: {lines} lines, was {cap}: split it rather than grow it"
            )),
            Some(_) => {}
        }
    }
    for (file, _) in LONG_FILES {
        if !long.contains_key(*file) {
            problems.push(format!(
                "{file} is {MAX_LINES} lines or fewer now: take it out of LONG_FILES"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
