//! Lifecycle listeners: `app-listener-<name>` plugins that hear every command.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::Value;

/// A listener that appends every event it hears to `file`.
fn recorder(sb: &Sandbox, name: &str, file: &Path) {
    sb.script(
        &format!("app-listener-{name}"),
        &format!("#!/bin/sh\ncat >> {}\n", file.display()),
    );
}

fn events(file: &Path) -> Vec<Value> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each event is one JSON line"))
        .collect()
}

#[test]
fn start_and_end_events_carry_the_same_id_the_code_and_the_duration() {
    let sb = Sandbox::new();
    let log = sb.path().join("events");
    recorder(&sb, "rec", &log);
    sb.script("app-work", "#!/bin/sh\nsleep 0.2\nexit 5\n");
    sb.write_config(r#"{"listeners": [{"name": "rec", "events": ["command.*"]}]}"#);
    sb.run(["work", "arg 1"]).assert().code(5);
    let ev = events(&log);
    assert_eq!(ev.len(), 2, "{ev:?}");
    let (start, end) = (&ev[0], &ev[1]);
    assert_eq!(start["event"], "command.start");
    assert_eq!(end["event"], "command.end");
    assert_eq!(start["id"], end["id"]);
    assert_eq!(start["id"].as_str().unwrap().len(), 32);
    assert_eq!(start["args"], serde_json::json!(["arg 1"]));
    assert_eq!(
        start["plugin"].as_str().unwrap(),
        sb.bin_dir().join("app-work").to_str().unwrap()
    );
    assert_eq!(start["context"]["plugin_name"], "work");
    assert!(start["timestamp"].as_str().unwrap().ends_with('Z'));
    assert_eq!(end["exit_code"], 5);
    let ms = end["duration_ms"].as_f64().unwrap();
    assert!((200.0..5000.0).contains(&ms), "duration {ms}");
    assert_eq!(end["aborted"], false);
}

#[test]
fn a_plugin_killed_by_a_signal_still_produces_command_end() {
    let sb = Sandbox::new();
    let log = sb.path().join("events");
    recorder(&sb, "rec", &log);
    sb.script("app-selfkill", "#!/bin/sh\nkill -TERM $$\nsleep 5\n");
    sb.write_config(r#"{"listeners": [{"name": "rec"}]}"#);
    sb.run(["selfkill"]).assert().code(143);
    let ev = events(&log);
    assert_eq!(ev.last().unwrap()["signal"], 15);
    assert_eq!(ev.last().unwrap()["exit_code"], 143);
}

#[test]
fn builtin_commands_produce_events_too() {
    let sb = Sandbox::new();
    let log = sb.path().join("events");
    recorder(&sb, "rec", &log);
    sb.write_config(r#"{"listeners": [{"name": "rec"}]}"#);
    sb.run(["version"]).assert().code(0);
    let ev = events(&log);
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0]["builtin"], "version");
    assert_eq!(ev[1]["exit_code"], 0);
}

/// Reads pids written by the listener and checks none is alive.
fn assert_all_gone(pid_file: &Path) {
    let pids: Vec<i32> = fs::read_to_string(pid_file)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert!(!pids.is_empty(), "listener wrote no pids");
    for pid in pids {
        let gone = common::wait_for(Duration::from_secs(2), || {
            (!common::process::alive(pid)).then_some(())
        });
        assert!(gone.is_some(), "listener process {pid} outlived app");
    }
}

#[test]
fn a_hanging_listener_costs_at_most_its_time_and_leaves_nothing_behind() {
    let sb = Sandbox::new();
    let pids = sb.path().join("pids");
    sb.script(
        "app-listener-hang",
        &format!(
            "#!/bin/sh\necho $$ >> {p}\nsleep 1000 &\necho $! >> {p}\nwait\n",
            p = pids.display()
        ),
    );
    sb.script("app-quick", "#!/bin/sh\nexit 0\n");
    sb.write_config(r#"{"listeners": [{"name": "hang", "timeout_ms": 300}]}"#);
    let t = Instant::now();
    // At the default level: a warning is shown.
    let out = sb.run(["quick"]).assert();
    let took = t.elapsed();
    out.code(0)
        .stderr_has("listener 'hang' did not finish within 300 ms");
    assert!(took < Duration::from_millis(2000), "took {took:?}");
    assert!(
        took >= Duration::from_millis(300),
        "app did not give the listener its time: {took:?}"
    );
    assert_all_gone(&pids);
    // --log 1 shows errors only.
    sb.run(["--log", "1", "quick"]).assert().code(0).no_stderr();
    assert_all_gone(&pids);
}

#[test]
fn a_hanging_veto_listener_delays_by_its_time_then_the_command_runs() {
    let sb = Sandbox::new();
    let pids = sb.path().join("pids");
    sb.script(
        "app-listener-slow",
        &format!(
            "#!/bin/sh\necho $$ >> {}\nexec sleep 1000\n",
            pids.display()
        ),
    );
    let marker = sb.path().join("ran");
    sb.script(
        "app-work",
        &format!("#!/bin/sh\ntouch {}\n", marker.display()),
    );
    sb.write_config(r#"{"listeners": [{"name": "slow", "can_abort": true, "timeout_ms": 200}]}"#);
    let t = Instant::now();
    sb.run(["work"]).assert().code(0);
    assert!(marker.exists());
    assert!(t.elapsed() < Duration::from_millis(2000));
    assert_all_gone(&pids);
}

#[test]
fn a_crashing_listener_does_not_change_the_exit_code() {
    let sb = Sandbox::new();
    sb.script("app-listener-crash", "#!/bin/sh\nexit 99\n");
    sb.script("app-work", "#!/bin/sh\necho done\nexit 4\n");
    sb.write_config(r#"{"listeners": [{"name": "crash"}]}"#);
    sb.run(["work"]).assert().code(4).stdout_is("done");
}

#[test]
fn a_listener_can_veto_and_the_others_hear_the_abort() {
    let sb = Sandbox::new();
    let log = sb.path().join("events");
    recorder(&sb, "rec", &log);
    sb.script(
        "app-listener-guard",
        "#!/bin/sh\nread -r start\necho '{\"abort\": \"not on a Sunday\"}'\ncat > /dev/null\n",
    );
    let marker = sb.path().join("ran");
    sb.script(
        "app-work",
        &format!("#!/bin/sh\ntouch {}\n", marker.display()),
    );
    sb.write_config(r#"{"listeners": [{"name": "rec"}, {"name": "guard", "can_abort": true}]}"#);
    sb.run(["work"])
        .assert()
        .code(1)
        .stderr_has("aborted by listener 'guard': not on a Sunday");
    assert!(!marker.exists(), "a vetoed plugin must not run");
    let ev = events(&log);
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[1]["aborted"], true);
}

#[test]
fn listeners_without_can_abort_are_not_waited_for_answers() {
    let sb = Sandbox::new();
    sb.script(
        "app-listener-noisy",
        "#!/bin/sh\nread -r start\necho '{\"abort\": \"ignored\"}'\ncat > /dev/null\n",
    );
    sb.script("app-work", "#!/bin/sh\nexit 0\n");
    sb.write_config(r#"{"listeners": [{"name": "noisy"}]}"#);
    sb.run(["work"]).assert().code(0);
}

#[test]
fn with_listeners_app_supervises_and_without_it_execs() {
    let sb = Sandbox::new();
    sb.script("app-ppid", "#!/bin/sh\necho $PPID\n");
    // No listeners: the plugin replaces app.
    sb.run(["ppid"])
        .assert()
        .stdout_is(std::process::id().to_string());
    let log = sb.path().join("events");
    recorder(&sb, "rec", &log);
    sb.write_config(r#"{"listeners": [{"name": "rec"}]}"#);
    let child = sb
        .app()
        .arg("ppid")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let app_pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        app_pid.to_string()
    );
}

#[test]
fn the_shipped_tracer_logs_every_command() {
    let sb = Sandbox::new();
    sb.script("app-work", "#!/bin/sh\nexit 3\n");
    sb.write_config(r#"{"listeners": [{"name": "tracer"}]}"#);
    sb.run(["work", "x"]).assert().code(3);
    sb.run(["version"]).assert();
    let log: PathBuf = sb.data_dir().join("tracer.log");
    let text = fs::read_to_string(&log).expect("tracer.log written");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].contains("command.start") && lines[0].contains("work x"),
        "{text}"
    );
    assert!(
        lines[1].contains("command.end") && lines[1].contains("exit=3"),
        "{text}"
    );
    assert!(
        lines[3].contains("app version") && lines[3].contains("exit=0"),
        "{text}"
    );
}

#[test]
fn plugin_list_shows_listeners() {
    let sb = Sandbox::new();
    recorder(&sb, "rec", &sb.path().join("events"));
    sb.write_config(r#"{"listeners": [{"name": "rec"}, {"name": "missing"}]}"#);
    sb.run(["plugin", "list"])
        .assert()
        .stdout_has("Listeners")
        .stdout_has("app-listener-rec")
        .stdout_has("not found: no executable app-listener-missing");
}

#[test]
fn with_listeners_sigterm_to_app_reaches_the_plugin() {
    let sb = Sandbox::new();
    recorder(&sb, "rec", &sb.path().join("events"));
    let marker = sb.path().join("got-term");
    sb.script(
        "app-wait",
        &format!(
            "#!/bin/sh\ntrap 'echo term > {}; exit 3' TERM\necho ready\nwhile :; do sleep 0.05; done\n",
            marker.display()
        ),
    );
    sb.write_config(r#"{"listeners": [{"name": "rec"}]}"#);
    for _ in 0..5 {
        let _ = fs::remove_file(&marker);
        let mut child = sb
            .app()
            .arg("wait")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut buf = [0u8; 6];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut buf).unwrap();
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = common::wait_for(Duration::from_secs(5), || child.try_wait().ok().flatten())
            .expect("app exits");
        assert_eq!(
            status.code(),
            Some(3),
            "app must forward SIGTERM, not die of it"
        );
        assert!(marker.exists());
    }
}

/// Waits until `file` has a line (a listener wrote its pid: it is running).
fn wait_for_file(file: &Path) {
    let written = common::wait_for(Duration::from_secs(5), || {
        fs::read_to_string(file)
            .ok()
            .filter(|s| s.ends_with('\n'))
            .map(|_| ())
    });
    assert!(written.is_some(), "{} was never written", file.display());
}

fn send(child: &std::process::Child, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(child.id() as i32, sig) };
}

#[test]
fn a_signal_while_app_waits_for_a_veto_listener_ends_the_wait_and_the_plugin_never_runs() {
    let sb = Sandbox::new();
    let marker = sb.path().join("ran");
    sb.script(
        "app-work",
        &format!("#!/bin/sh\ntouch {}\n", marker.display()),
    );
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGINT, "INT"),
        (libc::SIGHUP, "HUP"),
    ] {
        let pids = sb.path().join(format!("pids-{name}"));
        // Never answers, and leaves a child of its own behind.
        sb.script(
            "app-listener-mute",
            &format!(
                "#!/bin/sh\necho $$ >> {p}\nsleep 1000 &\necho $! >> {p}\nwait\n",
                p = pids.display()
            ),
        );
        sb.write_config(
            r#"{"listeners": [{"name": "mute", "can_abort": true, "timeout_ms": 8000}]}"#,
        );
        let mut app = sb
            .app()
            .arg("work")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for_file(&pids);
        // Both pids are written once the line count is two.
        common::wait_for(Duration::from_secs(5), || {
            (fs::read_to_string(&pids)
                .unwrap_or_default()
                .lines()
                .count()
                >= 2)
                .then_some(())
        })
        .expect("listener started its child");
        let t = Instant::now();
        send(&app, sig);
        let status = common::wait_for(Duration::from_secs(5), || app.try_wait().ok().flatten())
            .expect("app exits after the signal");
        assert!(
            t.elapsed() < Duration::from_millis(2000),
            "SIG{name}: app waited {:?} for the listener",
            t.elapsed()
        );
        assert_eq!(status.code(), Some(128 + sig), "SIG{name}");
        assert!(
            !marker.exists(),
            "SIG{name}: the plugin ran after the signal"
        );
        assert_all_gone(&pids);
    }
}

#[test]
fn a_signal_while_app_waits_for_a_listener_to_finish_ends_the_wait() {
    let sb = Sandbox::new();
    let pids = sb.path().join("pids");
    let eof = sb.path().join("eof");
    // Reads its stdin to EOF (app closes it after command.end, when it
    // starts waiting), says so, and then does not exit.
    sb.script(
        "app-listener-linger",
        &format!(
            "#!/bin/sh\necho $$ >> {p}\nsleep 1000 &\necho $! >> {p}\ncat >/dev/null\ntouch {e}\nwait\n",
            p = pids.display(),
            e = eof.display()
        ),
    );
    let marker = sb.path().join("ran");
    sb.script(
        "app-work",
        &format!("#!/bin/sh\ntouch {}\n", marker.display()),
    );
    sb.write_config(r#"{"listeners": [{"name": "linger", "timeout_ms": 8000}]}"#);
    let mut app = sb
        .app()
        .arg("work")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_for(Duration::from_secs(5), || marker.exists().then_some(()))
        .expect("the plugin ran");
    // The listener saw EOF: app has sent command.end, closed its stdin and
    // now waits up to 8 s for it to exit.
    common::wait_for(Duration::from_secs(5), || eof.exists().then_some(()))
        .expect("app closed the listener's stdin after command.end");
    let t = Instant::now();
    send(&app, libc::SIGTERM);
    let status = common::wait_for(Duration::from_secs(5), || app.try_wait().ok().flatten())
        .expect("app exits after the signal");
    assert!(
        t.elapsed() < Duration::from_millis(2000),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert_all_gone(&pids);
}

#[test]
fn a_timeout_above_the_maximum_is_lowered_with_a_warning() {
    let sb = Sandbox::new();
    recorder(&sb, "rec", &sb.path().join("events"));
    sb.script("app-quick", "#!/bin/sh\nexit 0\n");
    sb.write_config(r#"{"listeners": [{"name": "rec", "timeout_ms": 999999999999}]}"#);
    sb.run(["quick"]).assert().code(0).stderr_has(
        "listener 'rec': \"timeout_ms\": 999999999999 is above the maximum of 10000 ms, so it gets 10000 ms",
    );
}

#[test]
fn an_abort_reason_is_printed_with_its_control_characters_escaped() {
    let sb = Sandbox::new();
    sb.script(
        "app-listener-evil",
        "#!/bin/sh\nprintf '%s\\n' '{\"abort\": \"no\\u001b]0;owned\\u0007\\nforged line\\r\\u001b[2K\"}'\nexec cat >/dev/null\n",
    );
    sb.script("app-work", "#!/bin/sh\nexit 0\n");
    sb.write_config(r#"{"listeners": [{"name": "evil", "can_abort": true}]}"#);
    let out = sb
        .run(["work"])
        .assert()
        .code(1)
        .stderr_has(r"aborted by listener 'evil': no\x1b]0;owned\x07\nforged line\r\x1b[2K");
    let err = &out.stderr;
    assert!(
        !err.contains('\x1b') && err.trim_end().lines().count() == 1,
        "{err:?}"
    );
}
