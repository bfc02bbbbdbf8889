//! Issue 23, what a new user trips over in the first hour beyond the tour
//! itself (which `first_run` runs): messages that keep their point and say
//! what to do, help that is current, Ctrl-C with the broker down, and
//! output that behaves in a pipe.

use crate::common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::broker::Broker;
use common::event_time::EventTime;
use common::process::Proc;
use common::repeater::Repeater;
use common::{free_port, plugin_bin, wait_for, Sandbox};

/// `app-event-repeater ARGS` run to its end (usage errors never start it).
fn repeater_run(sb: &Sandbox, args: &[&str]) -> common::run::Ran {
    let mut cmd = sb.command(plugin_bin("app-event-repeater"));
    cmd.args(args);
    common::run::Run::new(cmd).assert()
}

#[test]
fn a_usage_error_names_the_missing_argument_and_the_valid_values() {
    let sb = Sandbox::new();
    // Issue 23: "the following required arguments were not provided:; see …".
    repeater_run(&sb, &["run", "--tls-cert", "c.pem"])
        .code(2)
        .stderr_has("the following required arguments were not provided: --tls-key <FILE>");
    repeater_run(&sb, &["run", "--tls-key", "k.pem"])
        .code(2)
        .stderr_has("--tls-cert <FILE>");
    repeater_run(&sb, &["run", "--qos", "3"])
        .code(2)
        .stderr_has("invalid value '3' for '--qos <QOS>' [possible values: 0, 1, 2]");
    // The same rendering in event-time and manage.
    let mut cmd = sb.command(plugin_bin("app-event-time"));
    cmd.args(["--rate"]);
    common::run::Run::new(cmd)
        .assert()
        .code(2)
        .stderr_has("a value is required for '--rate <");
    sb.run(["event-repeater", "manage", "status", "--interval", "x"])
        .assert()
        .code(2)
        .stderr_has("'x' is not a number of seconds");
}

#[test]
fn installing_a_file_that_is_not_there_says_what_to_give() {
    let sb = Sandbox::new();
    sb.run(["plugin", "install", "./app-nope"])
        .assert()
        .code(1)
        .stderr_has("app-nope: there is no such file; give the path of an app-<name> executable or of a .tar.gz holding one, or an https:// URL with --sha256")
        .stderr_lacks("os error");
    assert!(!sb.data_dir().join("plugins/app-nope").exists());
}

#[test]
fn a_group_without_its_at_and_host_flags_after_the_subcommand() {
    let sb = Sandbox::new();
    let rep = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let url = format!("unix://{}", rep.socket().display());
    sb.write_config(&format!(
        r#"{{"hosts": {{"edge1": {{"url": "{url}"}}}}, "groups": {{"edges": ["edge1"]}}}}"#
    ));
    // `-H edges`: the group needs its @, and the message says how to write it.
    sb.run(["-H", "edges", "event-repeater", "manage", "get"])
        .assert()
        .code(2)
        .stderr_has("'edges' is a group in the config file")
        .stderr_has("write it with an @: -H @edges");
    sb.run(["-H", "@edges", "event-repeater", "manage", "get"])
        .assert()
        .ok()
        .stdout_is("[]");
    // The host flags after the subcommand, as kubectl takes its global flags.
    for args in [
        ["get", "-H", "edge1"],
        ["get", "--host", "edge1"],
        ["-H", "@edges", "get"],
    ] {
        sb.run(["event-repeater", "manage"].iter().chain(&args))
            .assert()
            .ok()
            .stdout_is("[]");
    }
    // … and they still say which host was wrong.
    sb.run(["event-repeater", "manage", "get", "-H", "edge9"])
        .assert()
        .code(2)
        .stderr_has("no host 'edge9'")
        .stderr_has("known: edge1");
}

#[test]
fn status_of_one_down_host_says_why_once() {
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}", free_port());
    let ran = sb
        .run(["-H", &url, "event-repeater", "manage", "status"])
        .assert()
        .code(3)
        .stderr_has(format!("{url} is down (its row above says why)"));
    // The reason once, in the host's row, across stdout and stderr.
    let both = format!("{}{}", ran.stdout, ran.stderr);
    for part in [
        format!("cannot reach an event repeater at {url}"),
        "check that it runs".to_string(),
    ] {
        assert_eq!(both.matches(&part).count(), 1, "{ran:?}");
    }
    let row = ran.stdout.lines().find(|l| l.starts_with(&url));
    assert!(
        row.is_some_and(|r| r.contains(" down ") && r.contains("connection refused")),
        "{ran:?}"
    );
    // Several hosts: each reason once too, the message names the hosts.
    let other = format!("http://127.0.0.1:{}", free_port());
    let ran = sb
        .run([
            "-H",
            &url,
            "-H",
            &other,
            "event-repeater",
            "manage",
            "status",
        ])
        .assert()
        .code(4)
        .stderr_has(format!(
            "2 of 2 hosts are down (their rows above say why): {url}, {other}"
        ));
    let both = format!("{}{}", ran.stdout, ran.stderr);
    assert_eq!(both.matches("connection refused").count(), 2, "{ran:?}");
}

#[test]
fn a_misspelt_config_key_is_warned_about_with_the_nearest_known_one() {
    let sb = Sandbox::new();
    sb.write_config(r#"{"aliasses": {"v": "version"}, "hosts": {}}"#);
    sb.run(["version"])
        .assert()
        .code(0)
        .stderr_has("unknown key \"aliasses\" is ignored; did you mean \"aliases\"?")
        .stderr_lacks("\"hosts\"");
    // Spelt right, the alias works and nothing is said.
    sb.write_config(r#"{"aliases": {"v": "version"}, "hosts": {}}"#);
    sb.run(["v"]).assert().ok().stdout_has("app ");
    // Completion stays silent whatever the file holds.
    sb.write_config(r#"{"aliasses": {}}"#);
    sb.run(["__complete", "ver"]).assert().ok();
}

#[test]
fn the_stderr_demos_checkpoint_does_not_leak_into_the_first_mqtt_run() {
    let sb = Sandbox::new();
    let _src = EventTime::start(&sb, &["--rate", "50"]);
    let mut demo = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("stderr")
        .args(["--allowall", "--log", "3"])
        .start();
    let checkpoint = sb
        .data_dir()
        .join("event-repeater/event-repeater.checkpoint");
    // Once it holds an id (a fresh start writes it first with none).
    let has_id = wait_for(Duration::from_secs(15), || {
        std::fs::read_to_string(&checkpoint)
            .ok()
            .filter(|t| t.contains("\"last_event_id\":\""))
    });
    assert!(has_id.is_some(), "{}", demo.log());
    assert_eq!(demo.signal(libc::SIGINT).code(), Some(0));
    let written = std::fs::read_to_string(&checkpoint).unwrap();
    assert!(written.contains("\"sink\":\"stderr\""), "{written}");
    // The next run of the same name into another sink starts live and says
    // why (at info: after the stderr demo nothing is missing).
    let mut mqtt = Repeater::builder(&sb, "event-repeater")
        .sink(&format!("tcp://127.0.0.1:{}", free_port()))
        .args(["--log", "3"])
        .start();
    let log = mqtt.log();
    assert!(
        log.contains("was left by an earlier run of 'event-repeater' into stderr, not mqtt")
            && log.contains("starts from the source's live events"),
        "{log}"
    );
    assert!(!log.contains("resuming after event id"), "{log}");
    assert!(!log.contains("no longer held"), "{log}");
    assert_eq!(mqtt.signal(libc::SIGTERM).code(), Some(0));
    // The control: a run into the sink that wrote it resumes from it.
    std::fs::write(&checkpoint, &written).unwrap();
    demo.restart();
    let log = demo.log();
    let last_start = log.rsplit("--- restart ---").next().unwrap_or_default();
    assert!(
        last_start.contains("resuming after event id"),
        "{last_start}"
    );
}

#[test]
fn ctrl_c_with_the_broker_down_stops_at_once_and_says_so() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let _src = EventTime::start(&sb, &["--rate", "100"]);
    let mut rep = Repeater::builder(&sb, "event-repeater")
        .sink(&broker.url())
        .args(["--log", "3", "--allowall", "--drain-timeout", "60s"])
        .start();
    let acked = |rep: &Repeater| {
        rep.metrics()
            .get("app_event_repeater_events_acked_total")
            .copied()
            .unwrap_or(0.0)
    };
    let flowing = wait_for(Duration::from_secs(15), || {
        (acked(&rep) >= 50.0).then_some(())
    });
    assert!(
        flowing.is_some(),
        "50 events never acknowledged: {}",
        rep.log()
    );
    broker.kill();
    // Down as the repeater sees it, with events waiting.
    let down = wait_for(Duration::from_secs(15), || {
        let m = rep.metrics();
        let connected = m.get("app_event_repeater_sink_connected").copied();
        let waiting = m.get("app_event_repeater_events_buffered").copied();
        (connected == Some(0.0) && waiting.unwrap_or(0.0) > 0.0).then_some(())
    });
    // Else the stop below would not show a drain skipped for a sink that is down.
    assert!(
        down.is_some(),
        "never down with events waiting: {}",
        rep.log()
    );
    let t = Instant::now();
    assert_eq!(rep.signal(libc::SIGINT).code(), Some(0));
    let took = t.elapsed();
    // --drain-timeout is 60 s: waiting for it would take all of that.
    assert!(took < Duration::from_secs(10), "stopping took {took:?}");
    let log = rep.log();
    assert!(
        log.contains("stopped at once: the sink")
            && log.contains("is down, so nothing could drain")
            && log.contains(
                "stay after the checkpoint: the next start asks the source for them again"
            ),
        "{log}"
    );
}

#[test]
fn help_is_current_and_laid_out_the_same_way_everywhere() {
    let sb = Sandbox::new();
    // `app help X` and `app X --help` print the same text for every built-in.
    for builtin in ["plugin", "completion", "version"] {
        let a = sb.run(["help", builtin]).assert().ok();
        let b = sb.run([builtin, "--help"]).assert().ok();
        assert_eq!(
            a.stdout, b.stdout,
            "app help {builtin} vs app {builtin} --help"
        );
    }
    // completion --help: the shells, and how to install each.
    let help = sb.run(["completion", "--help"]).assert().ok().stdout;
    for line in [
        "echo 'source <(app completion bash)' >> ~/.bashrc",
        "echo 'source <(app completion zsh)' >> ~/.zshrc",
        "app completion fish > ~/.config/fish/completions/app.fish",
        "zsh (the script runs compinit if the shell has not yet)",
    ] {
        assert!(help.contains(line), "{help}");
    }
    // The listener's --help works (it was "unexpected arguments", exit 2).
    sb.run(["listener-tracer", "--help"])
        .assert()
        .ok()
        .stdout_has("Usage: app-listener-tracer [--file PATH] < events")
        .stdout_has("\"listeners\"");
    // Bare `app event-repeater`: its subcommands (manage too), exit 2 as
    // for `app plugin` alone.
    let bare = sb.run(["event-repeater"]).assert().code(2);
    assert!(bare.stdout.is_empty(), "{bare:?}");
    for part in [
        "Commands:",
        "  run ",
        "  manage ",
        "MQTT, NATS, Kafka, RabbitMQ Streams or stderr",
    ] {
        assert!(bare.stderr.contains(part), "{bare:?}");
    }
    let plugin = sb.run(["plugin"]).assert().code(2);
    assert!(plugin.stderr.contains("Commands:"), "{plugin:?}");
    // run --help: the flags that serve NATS too say so; --sink says failover.
    let run = sb
        .run(["event-repeater", "run", "--help"])
        .assert()
        .ok()
        .stdout;
    let flag = |name: &str| -> String {
        let at = run
            .find(&format!("      {name} "))
            .unwrap_or_else(|| panic!("{name}: {run}"));
        let rest = &run[at..];
        let end = rest[8..].find("\n  -").map_or(rest.len(), |e| e + 8);
        rest[..end].to_string()
    };
    assert!(flag("--sink").contains("failover"), "{}", flag("--sink"));
    for name in ["--username", "--password-file", "--ca-file", "--qos"] {
        assert!(flag(name).contains("NATS"), "{}", flag(name));
    }
    // manage --help: the commands' flags first, the old --op form last.
    let manage = sb
        .run(["event-repeater", "manage", "--help"])
        .assert()
        .ok()
        .stdout;
    let at = |s: &str| manage.find(s).unwrap_or_else(|| panic!("{s}: {manage}"));
    assert!(at("-H, --host") < at("--op <1-4>"), "{manage}");
    assert!(
        at("Old form") < at("--op <1-4>") && at("--help") < at("Old form"),
        "{manage}"
    );
}

#[test]
fn the_python_skeleton_is_quiet_when_its_reader_goes_away() {
    if common::require_tool("python3", "python3").is_none() {
        return;
    }
    let sb = Sandbox::new();
    let dir = sb.path().join("pydemo");
    sb.run([
        "plugin",
        "new",
        "pydemo",
        "--lang",
        "python",
        "--dir",
        dir.to_str().unwrap(),
    ])
    .assert()
    .code(0);
    let plugin = dir.join("app-pydemo");
    let run = |close_stdout: bool| {
        let mut cmd = sb.command(&plugin);
        cmd.arg("context")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut proc = Proc::spawn("app-pydemo", &mut cmd);
        let mut out = proc.child().stdout.take().expect("stdout");
        let mut err = proc.child().stderr.take().expect("stderr");
        let mut text = String::new();
        if close_stdout {
            // `| head -0`: the reader is gone before the plugin writes.
            drop(out);
        } else {
            out.read_to_string(&mut text).unwrap();
        }
        let mut said = String::new();
        err.read_to_string(&mut said).unwrap();
        let status = proc.wait_exit(Duration::from_secs(20)).expect("it exits");
        (status, text, said)
    };
    // The control: with a reader it prints the context.
    let (status, text, err) = run(false);
    assert!(
        status.success() && text.contains("\"plugin_name\""),
        "{text}{err}"
    );
    let (status, _, err) = run(true);
    assert!(status.success(), "{status:?} {err}");
    assert!(
        !err.contains("Traceback") && !err.contains("BrokenPipeError"),
        "{err}"
    );
}

#[test]
fn status_watch_into_a_pipe_prints_plain_tables() {
    let sb = Sandbox::new();
    let _rep = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let mut cmd = sb.app();
    cmd.args([
        "event-repeater",
        "manage",
        "status",
        "--watch",
        "--interval",
        "0.2",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null());
    let mut proc = Proc::spawn("status --watch", &mut cmd);
    let mut out = proc.child().stdout.take().expect("stdout");
    // Three snapshots' worth, read as they come.
    let mut text = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&text).matches("HOST").count() < 3 {
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&text)
        );
        let n = out.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "status --watch ended: {}",
            String::from_utf8_lossy(&text)
        );
        text.extend_from_slice(&buf[..n]);
    }
    proc.signal(libc::SIGINT);
    let status = proc.wait_exit(Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    let text = String::from_utf8_lossy(&text);
    assert!(!text.contains('\x1b'), "{text:?}");
    // Each snapshot is the table as `status` prints it: header, then the host.
    assert!(text.lines().filter(|l| l.starts_with("HOST")).count() >= 3);
    assert!(
        text.lines().filter(|l| l.starts_with("unix://")).count() >= 3,
        "{text}"
    );
}

#[test]
fn the_license_files_match_the_cargo_license_and_there_is_a_changelog() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    assert!(read("Cargo.toml").contains("\nlicense = \"MIT OR Apache-2.0\"\n"));
    assert!(read("LICENSE-MIT").contains("Permission is hereby granted, free of charge"));
    let apache = read("LICENSE-APACHE");
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    assert!(apache.contains("END OF TERMS AND CONDITIONS"));
    let changelog = read("CHANGELOG.md");
    assert!(changelog.starts_with("# Changelog\n"), "{changelog}");
    assert!(changelog.contains("\n## [Unreleased]\n"), "{changelog}");
}

#[test]
fn a_source_started_a_moment_after_the_repeater_is_not_warned_about() {
    let sb = Sandbox::new();
    // As the docs' `app event-time & app event-repeater run …`: the
    // repeater first, its source (the default, event-time) a moment later.
    let rep = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("stderr")
        .args(["--allowall"])
        .start();
    let _src = EventTime::start(&sb, &[]);
    let connected = |r: &Repeater| {
        r.metrics()
            .get("app_event_repeater_source_connected")
            .copied()
            == Some(1.0)
    };
    let up = wait_for(Duration::from_secs(15), || connected(&rep).then_some(()));
    let log = rep.log();
    assert!(up.is_some(), "never connected to the late source: {log}");
    assert!(!log.contains("warning"), "{log}");
    // The control: a source that never comes is warned about once the
    // grace is over.
    let lonely = Repeater::builder(&sb, "lonely")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let warned = wait_for(Duration::from_secs(15), || {
        lonely
            .log()
            .contains("warning: cannot subscribe to the event source")
            .then_some(())
    });
    // The control: the log above would have shown this warning.
    assert!(warned.is_some(), "{}", lonely.log());
}
