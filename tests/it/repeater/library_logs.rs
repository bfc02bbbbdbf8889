//! What the repeater's libraries say (rumqttc and rustls through the `log`
//! facade, async-nats through `tracing`) is written by the SDK's logger
//! with its target, at `--log 5` (and `--log 4` for their warnings), and
//! never at the default level: each test runs a repeater at trace and one
//! at the default level side by side, both relaying, so the quiet one's
//! silence is shown against the loud one's lines.

use crate::common;

use std::time::Duration;

use common::broker::Broker;
use common::event_time::EventTime;
use common::nats::NatsServer;
use common::repeater::Repeater;
use common::{wait_for, Sandbox};
use serde_json::Value;

const SECS: fn(u64) -> Duration = Duration::from_secs;

/// `events_acked_total`: what the sink confirmed, so the library did work.
fn acked(rep: &Repeater) -> f64 {
    rep.metrics()
        .get("app_event_repeater_events_acked_total")
        .copied()
        .unwrap_or(0.0)
}

/// Waits until `rep` has relayed some events, then for a line of its log
/// that `pred` accepts; the log.
fn relayed_and_logged(rep: &Repeater, pred: impl Fn(&str) -> bool) -> Option<String> {
    wait_for(SECS(20), || (acked(rep) >= 5.0).then_some(()))
        .unwrap_or_else(|| panic!("{} relayed nothing:\n{}", rep.name(), rep.log()));
    wait_for(SECS(10), || {
        let log = rep.log();
        log.lines().any(&pred).then_some(log)
    })
}

#[test]
fn rumqttc_lines_at_trace_with_their_target_and_never_at_the_default_level() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let _src = EventTime::start(&sb, &["--log", "3", "--rate", "100"]);
    let start = |name: &str, log: &[&str]| {
        let rep = Repeater::builder(&sb, name)
            .sink(&broker.url())
            .args(log)
            .start();
        let route = format!(r#"[{{"sourcetopic":"test/seq","sinktopic":"{name}/seq"}}]"#);
        let (status, body) = rep.send_json("POST", "/events", &route);
        assert_eq!(status, 201, "{body}");
        rep
    };
    let loud = start("loud", &["--log", "5"]);
    let quiet = start("quiet", &[]);

    // rumqttc's `debug!("Publish. Topic = …")` for every event it sends.
    let publish = |l: &str| l.starts_with("app-event-repeater: trace: rumqttc::state: Publish.");
    let log = relayed_and_logged(&loud, publish);
    assert!(log.is_some(), "no rumqttc line at --log 5:\n{}", loud.log());
    assert!(
        log.unwrap().contains("Topic = loud/seq"),
        "the library's own words are kept"
    );

    // The same client, publishing as much, at the default level: silent.
    assert_eq!(relayed_and_logged(&quiet, |l| l.contains("rumqttc")), None);
    assert!(
        !quiet.log().contains(": trace: ") && !quiet.log().contains(": debug: "),
        "{}",
        quiet.log()
    );
}

#[test]
fn async_nats_tracing_lines_in_json_with_their_target_only_when_asked() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let _src = EventTime::start(&sb, &["--log", "3", "--rate", "100"]);
    let start = |name: &str, log: &[&str]| {
        Repeater::builder(&sb, name)
            .sinkprotocol("nats")
            .sink(&server.url())
            .env("APP_LOG_FORMAT", "json")
            .args(["--allowall"])
            .args(log)
            .start()
    };
    let loud = start("loud", &["--log", "5"]);
    let quiet = start("quiet", &[]);

    // async-nats says "connecting to server" through `tracing`, which has
    // no subscriber here and hands its events to `log`.
    let target = |l: &str| -> Option<String> {
        let v: Value = serde_json::from_str(l).ok()?;
        let target = v["target"].as_str()?;
        (target.starts_with("async_nats") && v["level"] == "trace").then(|| target.to_string())
    };
    let log = relayed_and_logged(&loud, |l| target(l).is_some());
    assert!(
        log.is_some(),
        "no async-nats line at --log 5:\n{}",
        loud.log()
    );
    for line in log.unwrap().lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
        assert_eq!(v["plugin"], "event-repeater", "{line}");
    }

    assert_eq!(
        relayed_and_logged(&quiet, |l| l.contains("async_nats")),
        None
    );
    assert!(!quiet.log().contains("\"target\""), "{}", quiet.log());
}
