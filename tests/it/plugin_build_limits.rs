//! `plugin install --git` bounds the git and cargo it runs (10 min to clone,
//! 1 h to build; `APP_BUILD_TIMEOUT` lowers both): a tool that hangs is
//! stopped with everything it started, exit 8, nothing installed. The tools
//! here are scripts named `git` and `cargo` first on PATH, so that a hang can
//! be made on purpose.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::Sandbox;

/// A `git` that clones by making the directory (or, with `HANG` in
/// `hang_file`, starts a `sleep` and waits for it) and knows one commit.
fn fake_git(sb: &Sandbox, pids: &Path, hang_file: &Path) {
    sb.script(
        "git",
        &format!(
            r#"#!/bin/sh
if [ "$1" = clone ]; then
  if [ -e {hang} ]; then sleep 1000 & echo $! >> {pids}; wait; fi
  for last; do :; done
  mkdir -p "$last"; exit 0
fi
if [ "$1" = -C ] && [ "$3" = rev-parse ]; then echo 0123456789abcdef0123456789abcdef01234567; exit 0; fi
exit 1
"#,
            hang = hang_file.display(),
            pids = pids.display()
        ),
    );
}

/// A `cargo` that hangs the same way, or fails at once.
fn fake_cargo(sb: &Sandbox, pids: &Path, hang_file: &Path) {
    sb.script(
        "cargo",
        &format!(
            "#!/bin/sh\nif [ -e {hang} ]; then sleep 1000 & echo $! >> {pids}; wait; fi\necho 'error: no crate here' >&2; exit 101\n",
            hang = hang_file.display(),
            pids = pids.display()
        ),
    );
}

/// `app plugin install --git …` with `APP_BUILD_TIMEOUT=2`: its exit code,
/// stderr and how long it took.
fn install(sb: &Sandbox) -> (Option<i32>, String, Duration) {
    let mut cmd = sb.app();
    cmd.args(["plugin", "install", "--git", "file:///nowhere/repo"])
        .env("APP_BUILD_TIMEOUT", "2");
    let t = Instant::now();
    let ran = common::run::Run::new(cmd).assert();
    (ran.status.code(), ran.stderr.clone(), t.elapsed())
}

/// Every pid in `pids` is gone (bounded wait).
fn all_gone(pids: &Path) -> bool {
    let text = fs::read_to_string(pids).unwrap_or_default();
    let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    assert!(!pids.is_empty(), "the tool started nothing");
    common::wait_for(Duration::from_secs(5), || {
        pids.iter()
            .all(|&p| !common::process::alive(p))
            .then_some(())
    })
    .is_some()
}

#[test]
fn a_clone_or_build_that_hangs_is_stopped_at_the_limit_with_what_it_started() {
    let sb = Sandbox::new();
    let pids = sb.path().join("pids");
    let (hang_git, hang_cargo) = (sb.path().join("hang-git"), sb.path().join("hang-cargo"));
    fake_git(&sb, &pids, &hang_git);
    fake_cargo(&sb, &pids, &hang_cargo);
    let plugins = sb.data_dir().join("plugins");
    let installed = || fs::read_dir(&plugins).map(|d| d.count()).unwrap_or(0);

    // Control: tools that answer at once give cargo's own failure, quickly:
    // the timeout below is the limit biting, not a slow machine.
    let (code, stderr, took) = install(&sb);
    assert_eq!(code, Some(8), "{stderr}");
    assert!(stderr.contains("cargo install failed"), "{stderr}");
    assert!(took < Duration::from_secs(2), "{took:?}: {stderr}");

    // git clone hangs: stopped after 2 s, its sleep with it.
    fs::write(&hang_git, "").unwrap();
    let (code, stderr, took) = install(&sb);
    assert_eq!(code, Some(8), "{stderr}");
    assert!(
        stderr.contains("git clone") && stderr.contains("took longer than 2s and was stopped"),
        "{stderr}"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert!(all_gone(&pids), "the clone's children outlived it");

    // cargo hangs: the same.
    fs::remove_file(&hang_git).unwrap();
    fs::write(&pids, "").unwrap();
    fs::write(&hang_cargo, "").unwrap();
    let (code, stderr, took) = install(&sb);
    assert_eq!(code, Some(8), "{stderr}");
    assert!(
        stderr.contains("cargo install took longer than 2s and was stopped"),
        "{stderr}"
    );
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert!(all_gone(&pids), "the build's children outlived it");
    assert_eq!(installed(), 0, "something was installed");

    // A value that is not a number of seconds is refused before anything runs.
    let mut cmd = sb.app();
    cmd.args(["plugin", "install", "--git", "file:///nowhere/repo"])
        .env("APP_BUILD_TIMEOUT", "soon");
    let ran = common::run::Run::new(cmd).assert();
    assert_eq!(ran.status.code(), Some(2), "{}", ran.stderr);
    assert!(ran.stderr.contains("APP_BUILD_TIMEOUT"), "{}", ran.stderr);
}
