//! Passwords in URLs (issue 19, item 10): parsed where supported (a source
//! URL's user and password become HTTP Basic authentication), refused
//! clearly where not (a sink URL), and shown or stored nowhere in clear:
//! not in messages, not in the log at `--log 5`, not in `/healthz`, not in
//! the state or checkpoint files.

use std::time::Duration;

use crate::common;

mod records;

use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{plugin_bin, wait_for, Sandbox};

pub(crate) const REPEATER: &str = "app-event-repeater";

/// Every file under `dir`, read as text (lossy), with its path.
pub(crate) fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, String)> {
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
        url.replace("u:hunter5", "***:***"),
        "{health}"
    );
    r.signal(libc::SIGTERM);
    let log = r.log();
    assert!(
        log.contains("***:***@127.0.0.1"),
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
            all.contains(&sink.replace(&format!("u:{secret}"), "***:***")) && all.contains(flags),
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
        ran.stderr.contains("'http://***:***@127.0.0.1:1'") && ran.stderr.contains("--token"),
        "{ran:?}"
    );
    assert!(
        !ran.stderr.contains("hunter9") && !ran.stdout.contains("hunter9"),
        "{ran:?}"
    );
}

/// Every output and file of a run, for the greps: none may hold `SECRET`.
#[track_caller]
pub(crate) fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains("SECRET"), "{what} shows a secret: {text}");
}

#[test]
fn the_tracer_and_messages_mask_every_secret_form() {
    let sb = Sandbox::new();
    sb.script("app-work", "#!/bin/sh\nexit 0\n");
    sb.write_config(r#"{"listeners": [{"name": "tracer"}]}"#);
    let argv = [
        "-H",
        "http://u:SECRETa@hosta.example:1",
        "work",
        "--token",
        "SECRETb",
        "--nats-token=SECRETc",
        "--password",
        "SECRETd",
        "--password-file",
        "/etc/app/pass",
        "--source-header",
        "Authorization: Bearer SECRETe",
        "--sink",
        "mqtt://SECRETf@hostf.example:1",
        "--source",
        "http://u:pa/SECRETg#?@hostg.example:2",
        "--sink=nats://SECRETh@hosth.example:4222",
        "u:SECRETi@hosti.example:3",
        "https://hostj.example/x?private_token=SECRETj&X-Goog-Signature=SECRETk",
        "https://hostl.example/y?to%6Ben=SECRETl&client_secret=SECRETm",
        "unix://u:SECRETn@/run/hostn.sock",
        "http://ghp_SECRETo@hosto.example/r.git",
    ];
    sb.run(argv).assert().code(0);
    let mut outputs = String::new();
    for url in [
        "http://127.0.0.1:1/app-x?token=SECRETp",
        "http://u:SECRETq@127.0.0.1:1/app-x",
    ] {
        let ran = sb.run(["plugin", "install", url]).assert().code(2);
        assert!(
            ran.stderr.contains("needs its checksum") && ran.stderr.contains("127.0.0.1:1/app-x"),
            "{ran:?}"
        );
        outputs += &format!("{}{}", ran.stdout, ran.stderr);
    }
    let list = sb.run(["plugin", "list"]).assert().code(0);
    assert!(list.stdout.contains("app-listener-tracer"), "{list:?}");
    outputs += &format!("{}{}", list.stdout, list.stderr);
    assert_clean("the messages", &outputs);

    let log_path = sb.data_dir().join("tracer.log");
    let log = std::fs::read_to_string(&log_path).expect("tracer.log");
    assert_clean("tracer.log", &log);
    // Positive control: the line is there, with what is not secret.
    for part in [
        "hosta.example:1",
        " work ",
        "--password-file /etc/app/pass",
        "hostf.example:1",
        "hostg.example:2",
        "hosth.example:4222",
        "hosti.example:3",
        "hostj.example/x?private_token=",
        "to%6Ben=",
        "/run/hostn.sock",
        "hosto.example/r.git",
        "plugin install",
        "127.0.0.1:1/app-x",
    ] {
        assert!(log.contains(part), "{part:?} not in {log}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    for (path, text) in files_under(sb.path()) {
        assert_clean(&path.display().to_string(), &text);
    }
}

#[test]
fn an_older_world_readable_tracer_log_is_narrowed() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.write_config(r#"{"listeners": [{"name": "tracer"}]}"#);
    let log_path = sb.data_dir().join("tracer.log");
    std::fs::write(&log_path, "old line\n").unwrap();
    std::fs::set_permissions(&log_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    sb.run(["version"]).assert().code(0);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.starts_with("old line\n") && log.contains("app version"),
        "{log}"
    );
    let mode = std::fs::metadata(&log_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
}

#[test]
fn repeater_and_manage_addresses_with_secrets_are_refused_masked() {
    let sb = Sandbox::new();
    let repeater = |args: &[&str]| {
        let mut cmd = sb.command(plugin_bin(REPEATER));
        cmd.args(["run", "--name", "s"]).args(args);
        common::run::Run::new(cmd).assert()
    };
    for (args, shown) in [
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "nats",
                "--sink",
                "nats://SECRET1@127.0.0.1:4222",
            ][..],
            "127.0.0.1:4222",
        ),
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "mqtt",
                "--sink",
                "mqtt://SECRET2@127.0.0.1:1883",
            ],
            "127.0.0.1:1883",
        ),
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "mqtt",
                "--sink",
                "u:SECRET3@127.0.0.1:1883",
            ],
            "127.0.0.1:1883",
        ),
        (
            &[
                "--source",
                "none",
                "--sinkprotocol",
                "nats",
                "--sink",
                "u:SECRET4@127.0.0.1:4222",
            ],
            "127.0.0.1:4222",
        ),
        (
            &[
                "--source",
                "http://u:pa/SECRET5#?@127.0.0.1:9",
                "--sinkprotocol",
                "stderr",
            ],
            "127.0.0.1:9",
        ),
        (
            &[
                "--source",
                "http://u:pa?SECRET6@127.0.0.1:9",
                "--sinkprotocol",
                "stderr",
            ],
            "127.0.0.1:9",
        ),
        (
            &[
                "--source",
                "user:SECRET7@127.0.0.1:9",
                "--sinkprotocol",
                "stderr",
            ],
            "127.0.0.1:9",
        ),
        (
            &[
                "--source",
                "unix://user:SECRET8@/run/x.sock",
                "--sinkprotocol",
                "stderr",
            ],
            "/run/x.sock",
        ),
    ] {
        let ran = repeater(args);
        assert_eq!(ran.exit(), 2, "{args:?}: {ran:?}");
        assert_clean(
            &format!("{args:?}"),
            &format!("{}{}", ran.stdout, ran.stderr),
        );
        assert!(ran.stderr.contains(shown), "{args:?}: {ran:?}");
    }
    for host in [
        "http://SECRET1@127.0.0.1:1",
        "u:SECRET2@127.0.0.1:1",
        "http://u:pw/SECRET3@127.0.0.1:1",
        "http://127.0.0.1:1/?token=SECRET4",
        "unix://u:SECRET5@/run/m.sock",
    ] {
        for cmd_args in [&["get", "--host", host][..], &["status", "--host", host]] {
            let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
            cmd.args(cmd_args);
            let ran = common::run::Run::new(cmd).assert();
            assert_eq!(ran.exit(), 2, "{host}: {ran:?}");
            assert_clean(host, &format!("{}{}", ran.stdout, ran.stderr));
            let place = if host.starts_with("unix") {
                "/run/m.sock"
            } else {
                "127.0.0.1:1"
            };
            assert!(ran.stderr.contains(place), "{host}: {ran:?}");
        }
    }
}
