//! Passwords in URLs (issue 19, item 10): parsed where supported (a source
//! URL's user and password become HTTP Basic authentication), refused
//! clearly where not (a sink URL), and shown or stored nowhere in clear:
//! not in messages, not in the log at `--log 5`, not in `/healthz`, not in
//! the state or checkpoint files.

use std::time::Duration;

use crate::common;

use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{plugin_bin, wait_for, Sandbox};

const REPEATER: &str = "app-event-repeater";

/// Every file under `dir`, read as text (lossy), with its path.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

#[test]
fn a_source_password_is_sent_as_basic_auth_and_shown_nowhere() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let url = source.url().replacen("http://", "http://u:hunter5@", 1);
    let mut r = Repeater::builder(&sb, "sec")
        .source(&url)
        .sinkprotocol("stderr")
        .args(["--allowall", "--log", "5"])
        .start();
    source.push_topic(1, "a/b");
    // Positive control: the password reached the source, in the header.
    // base64("u:hunter5")
    let sent = wait_for(Duration::from_secs(10), || {
        source.authorizations().into_iter().flatten().next()
    });
    assert_eq!(sent.as_deref(), Some("Basic dTpodW50ZXI1"), "{}", r.log());
    assert!(
        wait_for(Duration::from_secs(10), || r
            .sink_topics()
            .contains(&"a/b".to_string())
            .then_some(()))
        .is_some(),
        "the event was not relayed: {}",
        r.log()
    );
    let (status, health) = r.get("/healthz");
    assert_eq!(status, 200, "{health}");
    let health: serde_json::Value = serde_json::from_str(&health).expect("JSON");
    assert_eq!(
        health["source"]["url"],
        url.replace("hunter5", "***"),
        "{health}"
    );
    r.signal(libc::SIGTERM);
    let log = r.log();
    assert!(
        log.contains("u:***@127.0.0.1"),
        "the log names the source: {log}"
    );
    assert!(!log.contains("hunter5"), "{log}");
    for (path, text) in files_under(sb.path()) {
        assert!(
            !text.contains("hunter5"),
            "{} holds it: {text}",
            path.display()
        );
    }
}

#[test]
fn credentials_in_a_sink_url_are_refused_without_showing_them() {
    let sb = Sandbox::new();
    for (protocol, sink, secret, flags) in [
        (
            "nats",
            "nats://u:hunter3@127.0.0.1:4222",
            "hunter3",
            "--creds",
        ),
        (
            "mqtt",
            "mqtt://u:hunter4@127.0.0.1:1883",
            "hunter4",
            "--password-file",
        ),
    ] {
        let mut cmd = sb.command(plugin_bin(REPEATER));
        cmd.args([
            "run",
            "--name",
            "s",
            "--source",
            "none",
            "--sinkprotocol",
            protocol,
            "--sink",
            sink,
            "--log",
            "5",
        ]);
        let ran = common::run::Run::new(cmd).assert();
        assert_eq!(ran.exit(), 2, "{ran:?}");
        let all = format!("{}{}", ran.stdout, ran.stderr);
        // It names the URL (masked) and the flags to use instead.
        assert!(
            all.contains(&sink.replace(secret, "***")) && all.contains(flags),
            "{ran:?}"
        );
        assert!(!all.contains(secret), "{ran:?}");
    }
    for (path, text) in files_under(sb.path()) {
        assert!(
            !text.contains("hunter"),
            "{} holds it: {text}",
            path.display()
        );
    }
}

#[test]
fn credentials_in_a_manage_host_are_refused_without_showing_them() {
    let sb = Sandbox::new();
    let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(["get", "--host", "http://u:hunter9@127.0.0.1:1"]);
    let ran = common::run::Run::new(cmd).assert();
    assert_eq!(ran.exit(), 2, "{ran:?}");
    // It names the address (masked) and what to use instead.
    assert!(
        ran.stderr.contains("'http://u:***@127.0.0.1:1'") && ran.stderr.contains("--token"),
        "{ran:?}"
    );
    assert!(
        !ran.stderr.contains("hunter9") && !ran.stdout.contains("hunter9"),
        "{ran:?}"
    );
}
