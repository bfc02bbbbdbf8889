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
        "Relay events from an event source to MQTT, NATS or stderr"
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
        "mqtt\tPublish to an MQTT broker\nnats\tPublish to NATS: JetStream at QoS 1 and 2, core NATS at QoS 0\nstderr\tWrite one JSON line per event to stderr\n:4\n"
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
