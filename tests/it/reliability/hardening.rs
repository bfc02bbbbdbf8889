//! Hardening (issue 11): the state file, the password file and the command
//! line are refused at once when they are not what they must be.

use crate::common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::event_time::EventTime;
use common::repeater::Repeater;
use common::{plugin_bin, wait_for, Sandbox};

/// Runs `app-event-repeater run ARGS` to its end (10 s at most); its exit
/// code, stderr and how long it took.
fn run_to_end(sb: &Sandbox, args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = sb
        .command(plugin_bin("app-event-repeater"))
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start app-event-repeater");
    let status = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
    if status.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait");
    let code = status.and_then(|s| s.code());
    (
        code,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

/// `--state FIFO` blocked in open() with no message; it is refused at once.
#[test]
fn a_fifo_as_state_file_is_refused_at_once() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("routes.fifo");
    common::mkfifo(&fifo);
    let (code, err, took) = run_to_end(
        &sb,
        &[
            "--name",
            "h",
            "--sinkprotocol",
            "stderr",
            "--state",
            fifo.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
    assert!(err.lines().count() == 1, "one line: {err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// `--password-file` (like `--ca-file`, `--tls-cert`, `--tls-key`, `--creds`)
/// is read only if it is a regular file of bounded size: a FIFO blocked the
/// read, `/dev/zero` filled the memory.
#[test]
fn a_fifo_or_a_device_as_password_file_is_refused_at_once() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("password.fifo");
    common::mkfifo(&fifo);
    for (file, says) in [
        (fifo.to_str().unwrap(), "is a FIFO, not a regular file"),
        ("/dev/zero", "is a character device, not a regular file"),
    ] {
        let (code, err, took) = run_to_end(
            &sb,
            &[
                "--name",
                "pw",
                "--sink",
                "tcp://127.0.0.1:1",
                "--username",
                "u",
                "--password-file",
                file,
            ],
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }
}

/// `--drain-timeout 999999999999999999m` overflowed; it is a usage error.
#[test]
fn an_overflowing_drain_timeout_is_a_usage_error() {
    let sb = Sandbox::new();
    let (code, err, _) = run_to_end(&sb, &["--drain-timeout", "999999999999999999m"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--drain-timeout") && err.contains("too long"),
        "{err}"
    );
    let (code, err, _) = run_to_end(&sb, &["--drain-timeout", "2h"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("maximum of 1h"), "{err}");
}

/// The routes file and the checkpoint are 0600 in a 0700 directory; the
/// kebab-case `--sink-protocol` and `--allow-all` work as the old spellings.
#[test]
fn state_and_checkpoint_are_private_and_kebab_case_flags_work() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--name", "h-time", "--rate", "100"]);
    let r = Repeater::builder(&sb, "h")
        .source(&source.socket().to_string_lossy())
        .args(["--sink-protocol", "stderr", "--allow-all", "--log", "3"])
        .start();
    let (status, body) = r.send_json("POST", "/events", r#"{"sourcetopic":"a","sinktopic":"b"}"#);
    assert!(status == 200 || status == 201, "{status} {body}");
    let dir = sb.data_dir().join("event-repeater");
    let checkpoint = dir.join("h.checkpoint");
    let written = wait_for(Duration::from_secs(10), || {
        checkpoint.exists().then_some(())
    });
    assert!(written.is_some(), "no checkpoint: {}", r.log());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("h.routes.json")), 0o600);
    assert_eq!(mode(&checkpoint), 0o600);
    // The checkpoint can be on disk before the event's line reaches the log.
    let relayed = wait_for(Duration::from_secs(10), || {
        let log = r.log();
        log.contains("\"sink_topic\":\"test/seq\"").then_some(log)
    });
    let log = relayed.unwrap_or_else(|| r.log());
    assert!(log.contains("--allowall"), "{log}");
    assert!(
        log.contains("\"sink_topic\":\"test/seq\""),
        "relayed to stderr: {log}"
    );
}

/// The signal mask survives exec: started by `app`, which execs it with
/// SIGTERM blocked, the repeater still stops on SIGTERM.
#[test]
fn the_repeater_stops_on_sigterm_even_when_started_with_it_blocked() {
    let sb = Sandbox::new();
    let socket = sb.plugin_runtime_dir().join("blocked.sock");
    let none = sb.runtime_dir().join("no-source.sock");
    let status = common::process::stopped_by_sigterm_through_app(
        &sb,
        &[
            "event-repeater",
            "run",
            "--name",
            "blocked",
            "--sinkprotocol",
            "stderr",
            "--source",
            none.to_str().unwrap(),
        ],
        socket,
    );
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
