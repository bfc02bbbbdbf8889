//! A tap sees what became of each routed event: delivered (acknowledged by
//! the broker), refused with its reason; an unrouted event is no outcome.
//! `topic=` and `route=` take only their own.

use std::time::Duration;

use serde_json::{json, Value};

use super::{events, open};
use crate::common;
use common::broker::{Broker, Subscriber};
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::Sandbox;

/// (outcome, reason, source topic) of each event, sorted: the refusals
/// happen at routing, the deliveries at the broker's ack, in either order.
fn seen(events: &[Value]) -> Vec<(String, String, String)> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let mut out: Vec<_> = events
        .iter()
        .map(|e| (s(&e["outcome"]), s(&e["reason"]), s(&e["source_topic"])))
        .collect();
    out.sort();
    out
}

fn triple(outcome: &str, reason: &str, topic: &str) -> (String, String, String) {
    (outcome.into(), reason.into(), topic.into())
}

#[test]
fn a_tap_sees_delivered_and_refused_events_with_their_outcome() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "out/#", None) else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sink(&broker.url())
        .args(["--qos", "1", "--max-packet-size", "600"])
        .start();
    let routes = json!([
        {"sourcetopic": "tap/", "sinktopic": "out/{suffix}"},
        {"sourcetopic": "big/", "sinktopic": "out/big/{suffix}"},
        {"sourcetopic": "big/small", "sinktopic": "out/small"}
    ]);
    let (status, body) = rep.send_json("POST", "/events", &routes.to_string());
    assert_eq!(status, 201, "{body}");

    let mut all = open(&rep, "");
    let mut under_tap = open(&rep, "?topic=tap/");
    let mut big_route = open(&rep, "?route=big/");
    let a = json!({"topic": "tap/a", "n": 1}).to_string();
    let big = json!({"topic": "big/b", "pad": "x".repeat(1000)}).to_string();
    source.push("1", &a);
    source.push("2", "not json");
    source.push("3", &big);
    source.push("4", &json!({"topic": "big/small", "n": 4}).to_string());
    source.push("5", &json!({"topic": "nowhere", "n": 5}).to_string());
    source.push("6", &json!({"topic": "tap/c", "n": 6}).to_string());

    let got = events(&mut all, 5, Duration::from_secs(15));
    assert_eq!(
        seen(&got),
        [
            triple("delivered", "", "big/small"),
            triple("delivered", "", "tap/a"),
            triple("delivered", "", "tap/c"),
            triple("refused", "invalid", ""),
            triple("refused", "too_large", "big/b"),
        ],
        "{got:#?}\n{}",
        rep.log()
    );
    // What the broker got is what the tap said was delivered.
    let msgs = sub.wait(Duration::from_secs(10), |m| m.len() >= 3);
    let mut topics: Vec<&str> = msgs.iter().map(|(t, _)| t.as_str()).collect();
    topics.sort_unstable();
    assert_eq!(topics, ["out/a", "out/c", "out/small"], "{msgs:?}");
    let delivered_a = got.iter().find(|e| e["source_topic"] == "tap/a").unwrap();
    assert_eq!(delivered_a["sink_topic"], "out/a");
    assert_eq!(delivered_a["id"], "1");
    assert_eq!(delivered_a["data"], a.as_str());
    let invalid = got.iter().find(|e| e["reason"] == "invalid").unwrap();
    assert_eq!(invalid["data"], "not json");
    assert_eq!(invalid["id"], "2");
    let too_large = got.iter().find(|e| e["reason"] == "too_large").unwrap();
    assert_eq!(too_large["data"], big.as_str());
    assert!(too_large["why"].as_str().is_some_and(|w| !w.is_empty()));

    // Each filter takes its own: a topic pattern, and a route without the
    // events a more specific route takes (big/small).
    let tapped = events(&mut under_tap, 2, Duration::from_secs(5));
    assert_eq!(
        seen(&tapped),
        [
            triple("delivered", "", "tap/a"),
            triple("delivered", "", "tap/c")
        ]
    );
    let routed = events(&mut big_route, 1, Duration::from_secs(5));
    assert_eq!(seen(&routed), [triple("refused", "too_large", "big/b")]);
    // And nothing more came to them (the unrouted event is no outcome).
    for tap in [&mut all, &mut under_tap, &mut big_route] {
        assert_eq!(
            events(tap, 1, Duration::from_millis(500)),
            Vec::<Value>::new()
        );
    }
}

#[test]
fn a_bad_filter_is_refused_with_what_to_do() {
    let sb = Sandbox::new();
    let rep = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    for (query, status, want) in [
        ("?route=nope/", 404, "no route for sourcetopic \"nope/\""),
        ("?topic=a&route=b", 400, "not both"),
        ("?topic=", 400, "topic= is empty"),
        ("?since=1", 400, "unknown query parameter \"since\""),
    ] {
        let (got, body) = rep.get(&format!("/tap{query}"));
        assert_eq!(got, status, "{query}: {body}");
        let error: Value = serde_json::from_str(&body).unwrap();
        assert!(
            error["error"].as_str().is_some_and(|e| e.contains(want)),
            "{query}: {body}"
        );
    }
    assert_eq!(rep.metric("tap_clients"), 0.0);
}
