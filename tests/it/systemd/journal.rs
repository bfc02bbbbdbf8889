//! Log lines carry their syslog priority when stderr is the journal
//! (JOURNAL_STREAM).

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::common::process::Proc;
use crate::common::{plugin_bin, Sandbox};

use super::append;

/// `DEVICE:INODE` of `file`, as systemd writes `JOURNAL_STREAM`.
fn stream_id(file: &Path) -> String {
    let meta = fs::metadata(file).expect("stat the log");
    format!("{}:{}", meta.dev(), meta.ino())
}

/// Runs event-time once with `JOURNAL_STREAM` naming `journal` (which may
/// or may not be its stderr) until it has logged a warning, then stops it;
/// returns its stderr.
fn event_time_log(sb: &Sandbox, journal: &str, format: &str) -> String {
    let log = sb
        .path()
        .join(format!("journal.{}.log", crate::common::free_port()));
    let mut cmd = sb.command(plugin_bin("app-event-time"));
    cmd.args(["--name", "j", "--log", "info", "--listen", "0.0.0.0:0"])
        .env("APP_LOG_FORMAT", format)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Appending, as the second instance below does to the same file.
        .stderr(append(&log));
    let journal = if journal.is_empty() {
        stream_id(&log)
    } else {
        journal.to_string()
    };
    cmd.env("JOURNAL_STREAM", &journal);
    let mut proc = Proc::spawn("app-event-time", &mut cmd);
    let socket = sb.plugin_runtime_dir().join("j.sock");
    let up = crate::common::wait_for(Duration::from_secs(15), || {
        std::os::unix::net::UnixStream::connect(&socket).ok()
    });
    assert!(
        up.is_some(),
        "event-time did not start: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    // A second instance of the same name fails: an error line.
    let second = sb
        .command(plugin_bin("app-event-time"))
        .args(["--name", "j"])
        .env("APP_LOG_FORMAT", format)
        .env("JOURNAL_STREAM", &journal)
        .stderr(append(&log))
        .status()
        .expect("run a second event-time");
    assert!(!second.success());
    proc.signal(libc::SIGTERM);
    assert!(proc.wait_exit(Duration::from_secs(20)).is_some());
    fs::read_to_string(&log).expect("read the log")
}

#[test]
fn log_lines_carry_their_syslog_priority_when_stderr_is_the_journal() {
    let sb = Sandbox::new();
    // "" = the log file's own dev:inode: stderr is "the journal".
    let text = event_time_log(&sb, "", "text");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 4, "{text}");
    assert!(
        lines.iter().all(|l| l.starts_with('<')),
        "a line without a prefix:\n{text}"
    );
    let with = |p: &str, part: &str| lines.iter().any(|l| l.starts_with(p) && l.contains(part));
    assert!(
        with("<4>app-event-time: warning: ", "not a loopback address"),
        "{text}"
    );
    assert!(
        with("<5>app-event-time: ", "serving timer events"),
        "{text}"
    );
    assert!(with("<6>app-event-time: ", "SIGTERM"), "{text}");
    assert!(with("<3>app-event-time: ", "already running"), "{text}");

    // JSON lines keep the prefix, and after it are JSON.
    let text = event_time_log(&sb, "", "json");
    for line in text.lines() {
        let (prefix, json) = line.split_at(3);
        assert!(prefix.starts_with('<') && prefix.ends_with('>'), "{line}");
        let v: serde_json::Value = serde_json::from_str(json).expect("a JSON line after <N>");
        assert!(v["level"].is_string(), "{line}");
    }
    assert!(text.contains("<4>{") && text.contains("<3>{"), "{text}");

    // A JOURNAL_STREAM naming another file (inherited, stderr redirected):
    // no prefix.
    let other = sb.path().join("other");
    fs::write(&other, "").expect("write");
    let text = event_time_log(&sb, &stream_id(&other), "text");
    assert!(text.contains("app-event-time: warning: "), "{text}");
    assert!(text.lines().all(|l| !l.starts_with('<')), "{text}");
}
