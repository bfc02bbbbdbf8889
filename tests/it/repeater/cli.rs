//! The repeater's command line: metadata, completion and usage errors.

use crate::common;

use common::{plugin_bin, Sandbox};
use serde_json::Value;

#[test]
fn metadata_and_completion() {
    let sb = Sandbox::new();
    let out = sb
        .command(plugin_bin("app-event-repeater"))
        .arg("__app_metadata")
        .output()
        .unwrap();
    assert!(out.status.success());
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(meta["apiVersion"], "app.plugin/v1");
    assert_eq!(meta["name"], "event-repeater");
    assert_eq!(
        meta["description"],
        "Relay events from an event source to MQTT, NATS, Kafka, RabbitMQ Streams or stderr"
    );
    assert_eq!(meta["completion"], true);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let complete = |words: &[&str]| {
        let out = sb
            .command(plugin_bin("app-event-repeater"))
            .arg("__complete")
            .args(words)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let first = complete(&[""]);
    assert!(
        first.starts_with("run\t") && first.contains("\nmanage\t") && first.ends_with(":36\n"),
        "{first}"
    );
    assert_eq!(
        complete(&["run", "--sinkprotocol", ""]),
        "mqtt\tPublish to an MQTT broker\nnats\tPublish to NATS: JetStream at QoS 1 and 2, core NATS at QoS 0\nkafka\tProduce to Kafka with an idempotent producer, keyed by SOURCE_ID:KEY\nrabbitmq-stream\tPublish to RabbitMQ Streams, deduplicated by producer name and publishing id\nstderr\tWrite one JSON line per event to stderr\n:4\n"
    );
    assert!(complete(&["run", "--ov"]).starts_with("--overflow\t"));
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let sb = Sandbox::new();
    for args in [
        vec!["run", "--qos", "3"],
        vec!["run", "--listen", "0.0.0.0:0"],
        vec!["run", "--sink", "ws://x"],
        vec!["frobnicate"],
    ] {
        let out = sb
            .command(plugin_bin("app-event-repeater"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = sb
        .command(plugin_bin("app-event-repeater"))
        .args(["run", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("app-event-repeater: ") && err.contains("--token"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The lines of `help` from `Exit codes:` to the end, with the line breaks
/// and indentation gone.
fn exit_codes(help: &str) -> String {
    let at = help
        .find("Exit codes:")
        .unwrap_or_else(|| panic!("no exit codes in:\n{help}"));
    help[at + "Exit codes:".len()..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn help_lists_manage_among_the_commands_with_each_ones_exit_codes() {
    let sb = Sandbox::new();
    let help = sb.run(["event-repeater", "--help"]).assert().ok().stdout;
    let commands = help
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no Commands: in:\n{help}"));
    let names: Vec<&str> = commands
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["run", "manage"], "{help}");
    let codes = exit_codes(&help);
    let (run, manage) = codes
        .split_once(" manage ")
        .unwrap_or_else(|| panic!("no exit codes for manage in:\n{help}"));
    assert!(run.starts_with("run 0 stopped cleanly"), "{run}");
    assert!(run.contains("; 2 usage error"), "{run}");
    // manage's are the ones its own help gives (up to its last remark).
    let own = sb
        .run(["event-repeater", "manage", "--help"])
        .assert()
        .ok()
        .stdout;
    let own = exit_codes(own.split("\n\nExamples:").next().unwrap_or(&own));
    let own = own.split(" (one line per host").next().unwrap_or(&own);
    assert_eq!(manage.trim_end_matches('.'), own.trim_end_matches('.'));
    for code in [
        "0 ok",
        "2 usage error",
        "3 no repeater",
        "4 with several hosts",
    ] {
        assert!(manage.contains(code), "{manage}");
    }
}
