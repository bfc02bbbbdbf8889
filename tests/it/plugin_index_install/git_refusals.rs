//! What `install --git` refuses before building: a `--rev` git would read
//! as an option, and a `--path` that leaves the clone through a committed
//! symlink; each beside a revision or path that is taken (and fails later,
//! at git or cargo, showing it got that far without building anything).

use crate::common;

use std::fs;

use super::git::{cargo_dir, git};
use common::index::World;

/// A repository with a real directory `inner` and a committed symlink
/// `out` to a directory outside it; its `file://` URL.
fn repo(w: &World) -> String {
    let outside = w.sb.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    let repo = w.sb.path().join("repo");
    fs::create_dir_all(repo.join("inner")).unwrap();
    fs::write(repo.join("inner/README"), "not a crate\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("out")).unwrap();
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "first"]);
    format!("file://{}", repo.display())
}

/// `app plugin install --git URL ARGS…` with cargo on PATH, expecting
/// `code` and `needle` on stderr, with nothing installed and no build
/// directory left.
fn install(w: &World, url: &str, args: &[&str], code: i32, needle: &str) {
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "--git", url])
        .args(args)
        .env(
            "PATH",
            format!("{}:{}", cargo_dir().display(), w.sb.path_var()),
        )
        .env("CARGO_NET_OFFLINE", "true");
    let ran = common::run::Run::new(cmd)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(code);
    assert!(ran.stderr.contains(needle), "{needle:?}: {ran:?}");
    assert!(!w.plugin_dir().join(".receipts.json").exists(), "{ran:?}");
    let builds = w.cache_dir().join("builds");
    let left = fs::read_dir(&builds).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "{builds:?} {ran:?}");
}

#[test]
fn a_rev_that_looks_like_an_option_never_reaches_git() {
    let Some(w) = World::new() else { return };
    if common::require_tool("git", "git").is_none() {
        return;
    }
    let url = repo(&w);
    for rev in ["--rev=--orphan=x", "--rev=-q", "--rev="] {
        let shown = rev.trim_start_matches("--rev=");
        install(
            &w,
            &url,
            &[rev],
            2,
            &format!("--rev '{shown}' is not a commit, tag or branch"),
        );
    }
    // Positive control: a name git can read as a revision reaches git,
    // which says it has no such one.
    install(
        &w,
        &url,
        &["--rev", "no-such-tag"],
        8,
        "git checkout no-such-tag failed",
    );
}

#[test]
fn a_path_that_leaves_the_clone_through_a_symlink_is_refused() {
    let Some(w) = World::new() else { return };
    if common::require_tool("git", "git").is_none() {
        return;
    }
    let url = repo(&w);
    install(
        &w,
        &url,
        &["--path", "out"],
        2,
        "--path out leaves the repository through a symlink (it resolves to ",
    );
    install(
        &w,
        &url,
        &["--path", "missing"],
        2,
        "--path missing does not exist in the repository",
    );
    install(
        &w,
        &url,
        &["--path", "../x"],
        2,
        "must stay inside the repository",
    );
    // Positive control: a directory inside the clone reaches cargo, which
    // finds no crate there.
    install(&w, &url, &["--path", "inner"], 8, "cargo install failed");
}
