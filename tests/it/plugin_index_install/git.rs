//! Builds from source with the real `cargo` and `git`: `install --git` and
//! an index's source entry.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::index::{World, FUTURE};
use serde_json::{json, Value};

/// The target directory shared by the tests that build a Rust plugin, so
/// the SDK and its dependencies are built once.
fn shared_rust_target() -> PathBuf {
    common::app_bin()
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("skeleton-test")
}

/// Where `cargo` is, for a PATH that has it.
pub(super) fn cargo_dir() -> PathBuf {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::tools::find_program("cargo").expect("cargo"));
    cargo.parent().expect("cargo's directory").to_path_buf()
}

pub(super) fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.org",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// How long a run that builds a plugin with cargo may take: a build from a
/// cold shared target dir on a loaded 2-core CI machine, with the suite beside it.
const BUILD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

#[test]
fn install_git_builds_a_rust_plugin_with_cargo() {
    let Some(w) = World::new() else { return };
    if common::require_tool("git", "git").is_none() {
        return;
    }
    // A repository holding a plugin made by `app plugin new --lang rust`,
    // with its lock file committed (what `--locked` uses).
    let repo = w.sb.path().join("repo");
    w.app(&[
        "plugin",
        "new",
        "gitdemo",
        "--lang",
        "rust",
        "--dir",
        repo.to_str().unwrap(),
    ])
    .code(0);
    let path_var = format!("{}:{}", cargo_dir().display(), w.sb.path_var());
    let offline = |cmd: &mut Command| {
        cmd.env("PATH", &path_var)
            .env("CARGO_NET_OFFLINE", "true")
            .env("CARGO_TARGET_DIR", shared_rust_target());
    };
    let mut lock = Command::new("cargo");
    lock.args(["generate-lockfile"])
        .current_dir(&repo)
        .stdin(Stdio::null());
    offline(&mut lock);
    let out = lock.output().expect("cargo generate-lockfile");
    assert!(out.status.success(), "{out:?}");
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "first"]);
    let url = format!("file://{}", repo.display());

    // Without cargo on PATH: a clear error naming rustup, nothing written.
    w.refused(
        &["plugin", "install", "--git", &url],
        8,
        &["needs cargo, which is not on PATH; install Rust with rustup"],
    );

    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "--git", &url]);
    offline(&mut cmd);
    let ran = common::run::Run::new(cmd).timeout(BUILD_TIMEOUT).assert();
    let ran = ran.code(0).stdout_has("installed plugin 'gitdemo' 0.1.0");
    assert!(ran.stdout.contains(&format!("from git+{url}")), "{ran:?}");
    w.app(&["gitdemo", "hello", "there"])
        .code(0)
        .stdout_has("there");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".receipts.json")).unwrap())
            .unwrap();
    let git_record = &record["plugins"]["gitdemo"]["git"];
    assert_eq!(git_record["url"], url);
    assert_eq!(
        git_record["commit"].as_str().map(str::len),
        Some(40),
        "{record}"
    );
    // Nothing of the build is left behind.
    let builds = w.cache_dir().join("builds");
    assert!(
        fs::read_dir(&builds).map(|d| d.count()).unwrap_or(0) == 0,
        "{builds:?}"
    );
    // The repository has not moved: upgrade builds nothing.
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "upgrade", "--all"]);
    offline(&mut cmd);
    common::run::Run::new(cmd)
        .assert()
        .code(0)
        .stdout_is("gitdemo 0.1.0: up to date");

    // An index entry whose platform is a source is built the same way.
    w.app(&["plugin", "remove", "gitdemo"]).code(0);
    let entry = json!({"name": "gitdemo", "version": "0.1.0", "description": "built here",
                       "platforms": [{"source": {"git": url, "rev": "main"}}]});
    let index = w.publish("index.json", 1, FUTURE, vec![entry], &w.key);
    w.add("src", &index).code(0);
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "gitdemo"]);
    offline(&mut cmd);
    common::run::Run::new(cmd)
        .timeout(BUILD_TIMEOUT)
        .assert()
        .code(0)
        .stdout_has("installed plugin 'gitdemo' 0.1.0");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".receipts.json")).unwrap())
            .unwrap();
    let gitdemo = &record["plugins"]["gitdemo"];
    assert_eq!(gitdemo["index"], "src", "{record}");
    assert_eq!(gitdemo["git"]["rev"], "main", "{record}");
    w.app(&["gitdemo", "hello", "again"])
        .code(0)
        .stdout_has("again");

    // --path DIR: a plugin in a subdirectory of a larger repository.
    let mono = w.sb.path().join("mono");
    let sub = mono.join("tools/gitsub");
    w.app(&[
        "plugin",
        "new",
        "gitsub",
        "--lang",
        "rust",
        "--dir",
        sub.to_str().unwrap(),
    ])
    .code(0);
    let mut lock = Command::new("cargo");
    lock.args(["generate-lockfile"])
        .current_dir(&sub)
        .stdin(Stdio::null());
    offline(&mut lock);
    assert!(lock
        .output()
        .expect("cargo generate-lockfile")
        .status
        .success());
    git(&mono, &["init", "--quiet"]);
    git(&mono, &["add", "-A"]);
    git(&mono, &["commit", "--quiet", "-m", "first"]);
    let mono_url = format!("file://{}", mono.display());
    // Outside the repository: refused before anything is built.
    let mut cmd = w.sb.app();
    cmd.args(["plugin", "install", "--git", &mono_url, "--path", "../x"]);
    offline(&mut cmd);
    let ran = common::run::Run::new(cmd).timeout(BUILD_TIMEOUT).assert();
    let ran = ran.code(2);
    assert!(
        ran.stderr.contains("must stay inside the repository"),
        "{ran:?}"
    );
    let mut cmd = w.sb.app();
    cmd.args([
        "plugin",
        "install",
        "--git",
        &mono_url,
        "--path",
        "tools/gitsub",
    ]);
    offline(&mut cmd);
    common::run::Run::new(cmd)
        .timeout(BUILD_TIMEOUT)
        .assert()
        .code(0)
        .stdout_has("installed plugin 'gitsub' 0.1.0");
    w.app(&["gitsub", "hello", "subdirectory"])
        .code(0)
        .stdout_has("subdirectory");
    let record: Value =
        serde_json::from_str(&fs::read_to_string(w.plugin_dir().join(".receipts.json")).unwrap())
            .unwrap();
    assert_eq!(
        record["plugins"]["gitsub"]["git"]["path"], "tools/gitsub",
        "{record}"
    );
}
