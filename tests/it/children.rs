//! Children `app` starts for its own purposes (a trusted plugin's metadata
//! query, completion delegates, `app_fetch` during `plugin install`,
//! listeners, git, cargo) never outlive it, nor does anything they start,
//! in a session of its own or not: not when they hang, not when a limit
//! passes, and not when `app` is killed, by SIGKILL too.

use crate::common;

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;

/// The pids in `file` (one per line).
fn read_pids(file: &Path) -> Vec<i32> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

/// The pids in `file`, once it holds `n` of them.
fn pids(file: &Path, n: usize) -> Vec<i32> {
    common::wait_for(Duration::from_secs(5), || {
        let pids = read_pids(file);
        (pids.len() >= n).then_some(pids)
    })
    .unwrap_or_else(|| panic!("{} never held {n} pids", file.display()))
}

/// Starts `app` (with `start`, which also clears what the last try left)
/// until the metadata query's shell has written `n` live pids to `file`
/// while `app` still runs: the app, those pids, and when it started.
/// `app` gives a query 1 s; a loaded machine (the test run's first seconds
/// on two cores) can spend that before the shell gets so far, and `app`
/// then lists the plugin without its metadata and exits: tried again, three
/// times at most.
fn query_running(
    file: &Path,
    n: usize,
    mut start: impl FnMut() -> Child,
) -> (Child, Vec<i32>, Instant) {
    for _ in 0..3 {
        let _ = fs::remove_file(file);
        let t = Instant::now();
        let mut app = start();
        let seen = common::wait_for(Duration::from_secs(5), || {
            let pids = read_pids(file);
            if pids.len() >= n && pids.iter().all(|&p| common::process::alive(p)) {
                return Some(Some(pids));
            }
            app.try_wait().ok().flatten().map(|_| None)
        });
        match seen {
            Some(Some(pids)) => return (app, pids, t),
            // app's limit passed first: again.
            Some(None) => continue,
            None => {
                let _ = app.kill();
                let _ = app.wait();
                panic!("{} never held {n} live pids while app ran", file.display());
            }
        }
    }
    panic!(
        "app's metadata limit passed three times before the plugin wrote {n} pids to {}",
        file.display()
    );
}

/// `app ARGS` asking the trusted plugins in `trusted` afresh (its metadata
/// cache cleared), with no stdin and its output discarded (pipe it to read
/// it).
fn app_asking(sb: &Sandbox, trusted: &Path, args: &[&str]) -> Command {
    let _ = fs::remove_dir_all(sb.path().join("cache/metadata"));
    let mut cmd = sb.app();
    cmd.args(args)
        .env("APP_PLUGIN_PATH", trusted)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn assert_gone(pids: &[i32], what: &str) {
    for &pid in pids {
        let gone = common::wait_for(Duration::from_secs(3), || {
            (!common::process::alive(pid)).then_some(())
        });
        if gone.is_none() {
            // SAFETY: kill has no memory-safety preconditions; clean up for the next test.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: process {pid} outlived app");
        }
    }
}

fn kill(child: &Child, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// A sandbox with a trusted plugin (on APP_PLUGIN_PATH) whose metadata
/// query starts a child and never answers; its pids go to the returned file.
fn sleepy_trusted_plugin(sb: &Sandbox) -> (std::path::PathBuf, std::path::PathBuf) {
    let trusted = sb.path().join("trusted");
    fs::create_dir_all(&trusted).unwrap();
    let pid_file = sb.path().join("pids");
    common::write_executable(
        &trusted.join("app-sleepy"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  echo $$ >> {p}\n  sleep 1000 &\n  echo $! >> {p}\n  wait\nfi\n",
            p = pid_file.display()
        ),
    );
    (trusted, pid_file)
}

#[test]
fn a_metadata_query_that_hangs_leaves_nothing_behind() {
    let sb = Sandbox::new();
    let (trusted, pid_file) = sleepy_trusted_plugin(&sb);
    let (app, pids, t) = query_running(&pid_file, 2, || {
        app_asking(&sb, &trusted, &["plugin", "list"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    });
    let out = app.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(String::from_utf8_lossy(&out.stdout).contains("sleepy"));
    assert_gone(&pids, "metadata query after its timeout");
}

#[test]
fn a_metadata_query_dies_with_app() {
    let sb = Sandbox::new();
    let (trusted, pid_file) = sleepy_trusted_plugin(&sb);
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGKILL, "SIGKILL")] {
        let (mut app, pids, _) = query_running(&pid_file, 2, || {
            app_asking(&sb, &trusted, &["plugin", "list"])
                .spawn()
                .unwrap()
        });
        kill(&app, sig);
        let status = app.wait().unwrap();
        assert!(!status.success());
        if sig != libc::SIGKILL {
            assert_eq!(status.code(), Some(128 + sig), "{name}");
        }
        // Even after SIGKILL, when nothing in app runs: the query's keeper
        // takes the plugin and its child.
        assert_gone(&pids, name);
    }
}

#[test]
fn app_fetch_dies_with_app_and_releases_its_stderr() {
    let sb = Sandbox::new();
    // A server that accepts and never answers: app_fetch would wait 60 s.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    // Every connection is held open and reported: the one signal per case
    // is sent only once app_fetch is running and waiting for an answer.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((conn, _)) = server.accept() {
            held.push(conn);
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let mut app = sb
            .app()
            .args([
                "plugin",
                "install",
                &format!("http://127.0.0.1:{port}/app-x"),
                "--sha256",
                &"ab".repeat(32),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        rx.recv_timeout(Duration::from_secs(10))
            .expect("app_fetch connects");
        let mut stderr = app.stderr.take().unwrap();
        kill(&app, sig);
        let status = app.wait().unwrap();
        assert!(!status.success());
        // `app plugin install … 2>&1 | cat` ends when app does: nothing else
        // holds the pipe.
        let (etx, erx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            let _ = etx.send(text);
        });
        assert!(
            erx.recv_timeout(Duration::from_secs(3)).is_ok(),
            "signal {sig}: something app started still holds its stderr"
        );
    }
}

/// Shell lines that record the script's pid, start a `sleep` in a session
/// of its own (`setsid`) and a plain background `sleep`, record both, and
/// wait: three pids in `file`.
fn escapees(file: &Path) -> String {
    format!(
        "echo $$ >> {f}\nsetsid sh -c 'echo $$ >> {f}; exec sleep 300' &\nsleep 301 &\necho $! >> {f}\nwait\n",
        f = file.display()
    )
}

/// The session a process is in.
fn session(pid: i32) -> i32 {
    // SAFETY: getsid has no memory-safety preconditions.
    unsafe { libc::getsid(pid) }
}

/// Checks the three pids of [`escapees`] run, one of them in a session
/// other than `app`'s: what must then be gone.
fn check_escapees(pids: &[i32], app: i32, what: &str) {
    for &pid in pids {
        assert!(common::process::alive(pid), "{what}: {pid} is not running");
    }
    assert!(
        pids.iter().any(|&p| session(p) != session(app)),
        "{what}: no process left app's session: {pids:?}"
    );
}

/// A `git` and a `cargo` first on PATH: `git clone` makes the directory,
/// or runs [`escapees`] when `hang_git` exists; cargo runs them when
/// `hang_cargo` exists, else fails.
fn fake_tools(sb: &Sandbox, pid_file: &Path, hang_git: &Path, hang_cargo: &Path) {
    let stay = escapees(pid_file);
    sb.script(
        "git",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = clone ]; then\n  if [ -e {hg} ]; then\n{stay}  fi\n  for last; do :; done\n  mkdir -p \"$last\"; exit 0\nfi\nif [ \"$1\" = -C ] && [ \"$3\" = rev-parse ]; then echo 0123456789abcdef0123456789abcdef01234567; exit 0; fi\nexit 1\n",
            hg = hang_git.display()
        ),
    );
    sb.script(
        "cargo",
        &format!(
            "#!/bin/sh\nif [ -e {hc} ]; then\n{stay}fi\necho 'error: no crate here' >&2; exit 101\n",
            hc = hang_cargo.display()
        ),
    );
}

#[test]
fn a_sigkill_of_app_leaves_no_child_of_any_kind_setsid_included() {
    if common::require_tool("setsid", "util-linux").is_none() {
        return;
    }
    let sb = Sandbox::new();
    let pid_file = sb.path().join("pids");
    let trusted = sb.path().join("trusted");
    fs::create_dir_all(&trusted).unwrap();
    // A metadata query that never answers.
    common::write_executable(
        &trusted.join("app-sleepy"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n{}fi\n",
            escapees(&pid_file)
        ),
    );
    // A completion delegate that never answers.
    sb.script("app-comp", "#!/bin/sh\nexit 0\n");
    sb.script(
        "app_complete-comp",
        &format!("#!/bin/sh\n{}", escapees(&pid_file)),
    );
    // A listener that never ends.
    sb.script(
        "app-listener-stay",
        &format!("#!/bin/sh\n{}", escapees(&pid_file)),
    );
    let (hang_git, hang_cargo) = (sb.path().join("hang-git"), sb.path().join("hang-cargo"));
    fake_tools(&sb, &pid_file, &hang_git, &hang_cargo);
    let builds = sb.path().join("cache/builds");
    let build_dirs = || fs::read_dir(&builds).map(|d| d.count()).unwrap_or(0);
    let git_install = ["plugin", "install", "--git", "file:///nowhere/repo"];
    let cases: [(&str, &[&str], Option<&Path>); 5] = [
        ("metadata query", &["plugin", "list"], None),
        ("completion delegate", &["__complete", "comp", ""], None),
        ("listener", &["version"], None),
        ("git", &git_install, Some(&hang_git)),
        ("cargo", &git_install, Some(&hang_cargo)),
    ];
    for (what, args, hang) in cases {
        if what == "listener" {
            sb.write_config(r#"{"listeners": [{"name": "stay", "timeout_ms": 10000}]}"#);
        } else {
            let _ = fs::remove_file(sb.config_dir().join("config.json"));
        }
        if let Some(h) = hang {
            fs::write(h, "").unwrap();
        }
        let (mut app, pids, _) = query_running(&pid_file, 3, || {
            app_asking(&sb, &trusted, args).spawn().unwrap()
        });
        check_escapees(&pids, app.id() as i32, what);
        kill(&app, libc::SIGKILL);
        assert!(!app.wait().unwrap().success());
        assert_gone(&pids, what);
        if let Some(h) = hang {
            fs::remove_file(h).unwrap();
            // The killed build's directory stays until the next build, which
            // removes it (and its own).
            assert_eq!(
                build_dirs(),
                1,
                "{what}: the killed build left its directory"
            );
            let ran = common::run::Run::new({
                let mut cmd = sb.app();
                cmd.args(git_install);
                cmd
            })
            .assert()
            .code(8);
            assert!(ran.stderr.contains("cargo install failed"), "{ran:?}");
            assert_eq!(
                build_dirs(),
                0,
                "{what}: a build directory outlived the next build"
            );
        }
    }
}

#[test]
fn a_limit_that_passes_takes_setsid_grandchildren_too() {
    if common::require_tool("setsid", "util-linux").is_none() {
        return;
    }
    let sb = Sandbox::new();
    let pid_file = sb.path().join("pids");
    let trusted = sb.path().join("trusted");
    fs::create_dir_all(&trusted).unwrap();
    common::write_executable(
        &trusted.join("app-sleepy"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n{}fi\n",
            escapees(&pid_file)
        ),
    );
    let (hang_git, hang_cargo) = (sb.path().join("hang-git"), sb.path().join("hang-cargo"));
    fake_tools(&sb, &pid_file, &hang_git, &hang_cargo);
    // The metadata query's 1 s passes.
    let (app, query, _) = query_running(&pid_file, 3, || {
        app_asking(&sb, &trusted, &["plugin", "list"])
            .spawn()
            .unwrap()
    });
    check_escapees(&query, app.id() as i32, "metadata query");
    let out = app.wait_with_output().unwrap();
    assert!(out.status.code().is_some(), "{out:?}");
    assert_gone(&query, "metadata query after its limit");
    // The clone's APP_BUILD_TIMEOUT passes.
    let _ = fs::remove_file(&pid_file);
    fs::write(&hang_git, "").unwrap();
    let mut cmd = sb.app();
    cmd.args(["plugin", "install", "--git", "file:///nowhere/repo"])
        .env("APP_BUILD_TIMEOUT", "2");
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let ran = common::run::Run::new(cmd).assert();
        let _ = tx.send(());
        ran
    });
    let clone = pids(&pid_file, 3);
    for &pid in &clone {
        assert!(common::process::alive(pid), "clone: {pid} is not running");
    }
    rx.recv_timeout(Duration::from_secs(20))
        .expect("app stops the clone at its limit");
    let ran = waiter.join().unwrap();
    assert_eq!(ran.status.code(), Some(8), "{ran:?}");
    assert!(ran.stderr.contains("was stopped"), "{ran:?}");
    assert_gone(&clone, "git clone after APP_BUILD_TIMEOUT");
}
