//! Topics a sink cannot take (issue 19 item 1, issue 30): an event whose
//! topic the sink would refuse, or on which mosquitto would drop the
//! connection, is refused before publishing, counted and warned about once
//! (briefly, however long the topic), never holds back the events behind
//! it, and does not come back after a restart: the checkpoint moves past it.
//!
//! Events come from a scripted source (`common::sse_source`) that replays
//! after `Last-Event-ID` and records what it was asked for; the sinks are a
//! real mosquitto, a real `nats-server -js` on free ports, and stderr. (The
//! source's ids the repeater will not keep are in `sources::sse_ids`.)

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::broker::{Broker, Subscriber};
use common::nats::NatsServer;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{plugin_bin, wait_for, Sandbox};
use serde_json::Value;

fn invalid_topics(rep: &Repeater) -> f64 {
    rep.metric("events_failed_total{reason=\"invalid_topic\"}")
}

/// The bad topics of issue 19 item 1, each refused by MQTT brokers
/// (mosquitto closes the connection on any of them); the first comes twice.
const BAD_FOR_MQTT: [&str; 5] = [
    "a/\u{1b}[31m",
    "a/\u{7f}",
    "a/\u{85}",
    "a/\u{ffff}",
    "a/\u{1b}[31m",
];

/// Pushes bad, good, bad, good … then good ones to 15: returns the ids of
/// the good events.
fn push_mixed(source: &ScriptedSource, bad: &[&str]) -> Vec<u64> {
    let mut good = Vec::new();
    let mut id = 0;
    for b in bad {
        id += 1;
        source.push_topic(id, b);
        id += 1;
        source.push_topic(id, &format!("good/{id}"));
        good.push(id);
    }
    while id < 15 {
        id += 1;
        source.push_topic(id, &format!("good/{id}"));
        good.push(id);
    }
    good
}

/// Issue 19 item 1: one event whose topic holds a control character made
/// mosquitto drop the connection, the repeater sent it again on every
/// reconnect, and nothing behind it was ever delivered; the checkpoint
/// brought it back after a restart.
#[test]
fn a_topic_mqtt_refuses_is_refused_before_publishing_and_never_comes_back() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "#", None) else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let good = push_mixed(&source, &BAD_FOR_MQTT);
    let mut rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sink(&broker.url())
        .args(["--allowall", "--qos", "1"])
        .start();
    let want: Vec<String> = good.iter().map(|n| format!("good/{n}")).collect();
    let got = sub.wait(Duration::from_secs(15), |m| m.len() >= want.len());
    let topics: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        topics,
        want,
        "log:\n{}\nbroker:\n{}",
        rep.log(),
        broker.log()
    );
    assert_eq!(invalid_topics(&rep), 5.0, "{}", rep.log());
    let acked = wait_for(Duration::from_secs(10), || {
        (rep.metric("events_acked_total") == good.len() as f64).then_some(())
    });
    assert!(acked.is_some(), "{}", rep.log());
    assert_eq!(rep.metric("sink_disconnects_total"), 0.0);
    // Warned once per topic, escaped: no control character reaches the log.
    let log = rep.log();
    for (escaped, n) in [
        ("a/\\u{1b}[31m", 1),
        ("a/\\u{7f}", 1),
        ("a/\\u{85}", 1),
        ("a/\\u{ffff}", 1),
    ] {
        let lines = log.lines().filter(|l| l.contains(escaped)).count();
        assert_eq!(lines, n, "warnings naming {escaped}:\n{log}");
    }
    assert!(
        !log.contains(['\u{1b}', '\u{7f}', '\u{85}', '\u{ffff}']),
        "{log:?}"
    );

    // After a crash the bad events do not come back: the checkpoint moved
    // past them, and the source is asked for what follows the last one.
    rep.wait_checkpoint("15");
    rep.kill9();
    source.push_topic(16, BAD_FOR_MQTT[0]);
    source.push_topic(17, "good/17");
    rep.restart();
    sub.wait(Duration::from_secs(15), |m| m.len() > want.len());
    assert_eq!(source.asked().last(), Some(&Some("15".to_string())));
    // Only the new bad event is counted (the positive control: a bad
    // event after the restart is seen and refused).
    let refused = wait_for(Duration::from_secs(10), || {
        (invalid_topics(&rep) >= 1.0).then_some(())
    });
    assert!(refused.is_some(), "{}", rep.log());
    assert_eq!(invalid_topics(&rep), 1.0, "{}", rep.log());
    let topics: Vec<String> = sub.messages().into_iter().map(|(t, _)| t).collect();
    assert_eq!(topics.last().map(String::as_str), Some("good/17"));
    assert_eq!(topics.len(), want.len() + 1, "{topics:?}");
}

/// The same for NATS, whose subjects hold no whitespace, control character
/// or wildcard token: refused before publishing, counted, the good events
/// stored, and nothing of it again after a restart.
#[test]
fn a_topic_no_nats_subject_can_hold_is_refused_before_publishing_and_never_comes_back() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let bad = ["a/\u{1b}[31m", "a b/c", "a/\u{85}", "a/*", "a/>/b"];
    let good = push_mixed(&source, &bad);
    let nats = |sb| {
        Repeater::builder(sb, "event-repeater")
            .source(&source.url())
            .sinkprotocol("nats")
            .sink(&server.url())
            .args(["--allowall", "--qos", "1", "--nats-stream", "GOOD"])
    };
    let mut rep = nats(&sb).start();
    let acked = wait_for(Duration::from_secs(20), || {
        (rep.metric("events_acked_total") >= good.len() as f64).then_some(())
    });
    assert!(acked.is_some(), "{}", rep.log());
    assert_eq!(invalid_topics(&rep), bad.len() as f64, "{}", rep.log());
    let stored = read_stream(&server.url(), "GOOD");
    let subjects = stored["subjects"].as_object().expect("subjects");
    let want: Vec<String> = good.iter().map(|n| format!("good.{n}")).collect();
    let mut have: Vec<String> = subjects.keys().cloned().collect();
    have.sort_by_key(|s| s[5..].parse::<u64>().unwrap_or(0));
    assert_eq!(have, want, "{stored}");
    assert!(subjects.values().all(|n| n == 1), "{stored}");
    let log = rep.log();
    assert_eq!(
        log.matches("a/\\u{1b}[31m\" has whitespace").count(),
        1,
        "{log}"
    );
    assert!(!log.contains(['\u{1b}', '\u{85}']), "{log:?}");

    rep.wait_checkpoint("15");
    rep.kill9();
    source.push_topic(16, bad[1]);
    source.push_topic(17, "good/17");
    rep.restart();
    let acked = wait_for(Duration::from_secs(20), || {
        (rep.metric("events_acked_total") >= 1.0).then_some(())
    });
    assert!(acked.is_some(), "{}", rep.log());
    assert_eq!(source.asked().last(), Some(&Some("15".to_string())));
    assert_eq!(invalid_topics(&rep), 1.0, "{}", rep.log());
    let stored = read_stream(&server.url(), "GOOD");
    assert_eq!(stored["subjects"]["good.17"], 1, "{stored}");
    assert_eq!(stored["messages"], good.len() as u64 + 1, "{stored}");
}

/// What the JetStream stream `stream` holds (`loadgen nats-read`).
fn read_stream(server: &str, stream: &str) -> Value {
    let out = Command::new(loadgen())
        .args(["nats-read", "--server", server, "--stream", stream])
        .args(["--expect", "0", "--timeout", "30"])
        .output()
        .expect("run loadgen nats-read");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("nats-read prints JSON")
}

fn loadgen() -> PathBuf {
    plugin_bin("loadgen")
}

/// Issue 30 (smaller items): a 70 KB topic the sink refuses gave a 140 KB
/// log line. The warning is now cut at 1 KiB, saying how much was left out.
#[test]
fn a_huge_refused_topic_gives_a_short_warning() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let topic = format!("a/\u{1}{}", "x".repeat(70_000));
    source.push("1", &serde_json::json!({ "topic": topic }).to_string());
    source.push_topic(2, "t/after");
    let rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall"])
        .start();
    rep.wait_relayed("t/after");
    assert_eq!(invalid_topics(&rep), 1.0);
    let log = rep.log();
    let warning = log
        .lines()
        .find(|l| l.contains("refused an event"))
        .unwrap_or_else(|| panic!("no warning: {}", &log[..log.len().min(2000)]));
    assert!(warning.len() < 1200, "a warning of {} bytes", warning.len());
    assert!(warning.contains("bytes more)"), "{warning}");
}
