//! The shipped plugins log through the SDK logger: `--log-format json` gives
//! only JSON lines on stderr, the daemons say where they are on start at the
//! default level, log levels are accepted by name, and errors carry the
//! program's name.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use common::event_time::EventTime;
use common::process::Proc;
use common::{plugin_bin, wait_for, Sandbox};
use serde_json::Value;

/// Starts `app ARGS…` with stderr to a file; returns the process and the file.
fn spawn_app(sb: &Sandbox, args: &[&str], log: &str) -> (Proc, std::path::PathBuf) {
    let stderr = sb.path().join(log);
    let proc = Proc::spawn(
        "app",
        sb.app()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).expect("create the log")),
    );
    (proc, stderr)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

/// Waits up to 15 s for `needle` in the file; panics with the file if not.
fn wait_text(path: &Path, needle: &str) -> String {
    wait_for(Duration::from_secs(15), || {
        let text = read(path);
        text.contains(needle).then_some(text)
    })
    .unwrap_or_else(|| panic!("no {needle:?} within 15 s in:\n{}", read(path)))
}

/// Every non-empty line of `text` as JSON; panics naming a line that is not.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l:?}\nall:\n{text}"));
            assert!(v.is_object(), "not a JSON object: {l}");
            v
        })
        .collect()
}

/// The log lines (those with a level), checked for the fields every one has.
fn log_lines(lines: &[Value], plugin: &str) -> Vec<Value> {
    let logs: Vec<Value> = lines
        .iter()
        .filter(|v| v.get("level").is_some())
        .cloned()
        .collect();
    for v in &logs {
        assert_eq!(v["plugin"], plugin, "{v}");
        assert!(v["message"].is_string(), "{v}");
        let time = v["time"].as_str().unwrap_or_else(|| panic!("no time: {v}"));
        assert!(time.len() == 24 && time.ends_with('Z'), "{time}");
        assert!(
            ["error", "warn", "info", "debug", "trace"].contains(&v["level"].as_str().unwrap()),
            "{v}"
        );
    }
    logs
}

#[test]
fn the_repeater_writes_only_json_lines_with_log_format_json() {
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &["--rate", "50"]);
    let (mut repeater, stderr) = spawn_app(
        &sb,
        &[
            "--log-format",
            "json",
            "--log",
            "trace",
            "event-repeater",
            "run",
            "--name",
            "json",
            "--sinkprotocol",
            "stderr",
            "--allowall",
        ],
        "repeater.stderr",
    );
    wait_text(&stderr, "running");
    // Events relayed to the stderr sink (JSON already) among the log lines.
    wait_for(Duration::from_secs(15), || {
        (read(&stderr).matches("test/seq").count() >= 5).then_some(())
    })
    .unwrap_or_else(|| panic!("no events relayed:\n{}", read(&stderr)));
    repeater.signal(libc::SIGTERM);
    let status = repeater.wait_exit(Duration::from_secs(15)).expect("exits");
    assert!(status.success(), "{status}");

    let lines = json_lines(&read(&stderr));
    let logs = log_lines(&lines, "event-repeater");
    let messages: Vec<&str> = logs.iter().filter_map(|v| v["message"].as_str()).collect();
    assert!(
        messages.iter().any(|m| m.contains("running")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("stopped")),
        "{messages:?}"
    );
    assert!(
        logs.iter()
            .any(|v| v["level"] == "trace" || v["level"] == "debug")
            || logs.len() >= 3
    );
    assert!(lines.len() > logs.len(), "the relayed events are there too");
}

#[test]
fn event_time_reports_a_taken_port_as_a_json_line() {
    let sb = Sandbox::new();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = sb
        .app()
        .args(["--log-format", "json", "event-time", "--listen", &addr])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = json_lines(&stderr);
    let logs = log_lines(&lines, "event-time");
    assert_eq!(logs.len(), lines.len());
    let error = logs
        .iter()
        .find(|v| v["level"] == "error")
        .unwrap_or_else(|| panic!("no error line: {stderr}"));
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(&addr) && message.contains("--listen"),
        "{message}"
    );
}

#[test]
fn the_repeater_says_where_it_reads_and_publishes_and_hints_without_routes() {
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &[]);
    let (_repeater, stderr) = spawn_app(
        &sb,
        &[
            "event-repeater",
            "run",
            "--name",
            "quiet",
            "--sinkprotocol",
            "stderr",
            "--listen",
            "127.0.0.1:0",
        ],
        "repeater.stderr",
    );
    let text = wait_text(&stderr, "no routes");
    let socket = sb.plugin_runtime_dir().join("quiet.sock");
    let start = text
        .lines()
        .find(|l| l.contains("running"))
        .unwrap_or_else(|| panic!("no start line:\n{text}"));
    assert!(start.starts_with("app-event-repeater: "), "{start}");
    let source = sb.plugin_runtime_dir().join("event-time.sock");
    for part in [
        &format!("reads unix:{}", source.display()),
        "publishes to stderr",
        "0 routes",
        &socket.display().to_string(),
        "http://127.0.0.1:",
    ] {
        assert!(start.contains(part), "{part:?} missing from {start}");
    }
    let hint = text.lines().find(|l| l.contains("no routes")).unwrap();
    assert!(
        hint.contains("--allowall") && hint.contains("manage"),
        "{hint}"
    );
    // Only those two lines at the default level.
    assert_eq!(text.lines().count(), 2, "{text}");
}

#[test]
fn the_repeater_gives_no_hint_with_allowall() {
    let sb = Sandbox::new();
    // Everything each repeater wrote, from its start to its exit.
    let whole_stderr = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "event-repeater",
            "run",
            "--name",
            name,
            "--sinkprotocol",
            "stderr",
        ];
        args.extend(extra);
        let (mut repeater, stderr) = spawn_app(&sb, &args, &format!("{name}.stderr"));
        wait_text(&stderr, "running");
        repeater.signal(libc::SIGTERM);
        repeater
            .wait_exit(Duration::from_secs(15))
            .unwrap_or_else(|| panic!("{name}: no exit after SIGTERM:\n{}", read(&stderr)));
        read(&stderr)
    };
    // Without --allowall this reading shows the hint...
    let text = whole_stderr("none", &[]);
    assert!(text.contains("no routes"), "{text}");
    // ...and with it, nowhere in the repeater's whole output.
    let text = whole_stderr("all", &["--allowall"]);
    assert!(text.contains("--allowall"), "{text}");
    assert!(!text.contains("no routes"), "{text}");
}

/// `app --log LEVEL event-time`: the start line is shown at warn (by name),
/// not at error or off; the plugin's own --log takes names too.
#[test]
fn event_time_says_where_it_serves_at_the_default_level_and_levels_have_names() {
    let sb = Sandbox::new();
    let cases: [(&[&str], bool); 5] = [
        (&["event-time"], true),
        (&["--log", "warn", "event-time"], true),
        (&["--log", "error", "event-time"], false),
        (&["--log", "off", "event-time"], false),
        (&["event-time", "--log", "ERROR"], false),
    ];
    for (i, (args, shown)) in cases.into_iter().enumerate() {
        let name = format!("et{i}");
        let mut all = args.to_vec();
        all.extend(["--name", &name]);
        let (mut proc, stderr) = spawn_app(&sb, &all, &format!("{name}.stderr"));
        let socket = sb.plugin_runtime_dir().join(format!("{name}.sock"));
        wait_for(Duration::from_secs(15), || socket.exists().then_some(()))
            .unwrap_or_else(|| panic!("{all:?}: no socket:\n{}", read(&stderr)));
        if shown {
            let text = wait_text(&stderr, "serving");
            assert!(
                text.starts_with("app-event-time: ")
                    && text.contains(&socket.display().to_string()),
                "{all:?}: {text}"
            );
        }
        proc.signal(libc::SIGTERM);
        let status = proc.wait_exit(Duration::from_secs(15)).expect("exits");
        assert!(status.success(), "{all:?}: {status}");
        if !shown {
            assert_eq!(read(&stderr), "", "{all:?}");
        }
    }
}

fn output(sb: &Sandbox, program: &Path, args: &[&str]) -> Output {
    sb.command(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn bad_levels_and_bad_values_are_errors_named_by_the_program() {
    let sb = Sandbox::new();
    let cases: [(&Path, &[&str], &str); 4] = [
        (
            &plugin_bin("app-event-repeater"),
            &["run", "--qos", "3"],
            "app-event-repeater: ",
        ),
        (
            &plugin_bin("app-event-repeater"),
            &["run", "--log", "loud"],
            "app-event-repeater: ",
        ),
        (
            &plugin_bin("app-event-time"),
            &["--log", "6"],
            "app-event-time: ",
        ),
        (
            &common::app_bin(),
            &["--log", "verbose", "version"],
            "app: ",
        ),
    ];
    for (program, args, prefix) in cases {
        let out = output(&sb, program, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with(prefix), "{args:?}: {stderr}");
        assert!(
            !stderr.lines().any(|l| l.starts_with("error:")),
            "{args:?}: {stderr}"
        );
        if args.contains(&"--log") {
            assert!(
                stderr.contains("debug"),
                "names the accepted levels: {stderr}"
            );
        }
    }
    // And the same error as JSON when asked.
    let out = sb
        .app()
        .args([
            "--log-format",
            "json",
            "event-repeater",
            "run",
            "--qos",
            "3",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = json_lines(&stderr);
    assert_eq!(log_lines(&lines, "event-repeater").len(), 1, "{stderr}");
    assert!(stderr.contains("--qos"), "{stderr}");
}
