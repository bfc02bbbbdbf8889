//! Children `app` starts for its own purposes (a trusted plugin's metadata
//! query, `app_fetch` during `plugin install`, listeners) never outlive it:
//! not when they hang, and not when `app` is killed.

use crate::common;

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::Sandbox;

/// The pids in `file` (one per line), once it holds `n` of them.
fn pids(file: &Path, n: usize) -> Vec<i32> {
    common::wait_for(Duration::from_secs(5), || {
        let pids: Vec<i32> = fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        (pids.len() >= n).then_some(pids)
    })
    .unwrap_or_else(|| panic!("{} never held {n} pids", file.display()))
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
    let t = Instant::now();
    let out = sb
        .app()
        .args(["plugin", "list"])
        .env("APP_PLUGIN_PATH", &trusted)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(String::from_utf8_lossy(&out.stdout).contains("sleepy"));
    assert_gone(&pids(&pid_file, 2), "metadata query after its timeout");
}

#[test]
fn a_metadata_query_dies_with_app() {
    let sb = Sandbox::new();
    let (trusted, pid_file) = sleepy_trusted_plugin(&sb);
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGKILL, "SIGKILL")] {
        let _ = fs::remove_file(&pid_file);
        // A fresh cache each time, so the plugin is asked again.
        let _ = fs::remove_dir_all(sb.path().join("cache"));
        let mut app = sb
            .app()
            .args(["plugin", "list"])
            .env("APP_PLUGIN_PATH", &trusted)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let pids = pids(&pid_file, 2);
        kill(&app, sig);
        let status = app.wait().unwrap();
        assert!(!status.success());
        if sig == libc::SIGKILL {
            // Nothing in app runs after SIGKILL: the kernel's parent-death
            // signal takes the plugin itself; its own child is its business.
            assert_gone(&pids[..1], name);
            // SAFETY: kill has no memory-safety preconditions; clean up.
            unsafe { libc::kill(pids[1], libc::SIGKILL) };
        } else {
            assert_eq!(status.code(), Some(128 + sig), "{name}");
            assert_gone(&pids, name);
        }
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
