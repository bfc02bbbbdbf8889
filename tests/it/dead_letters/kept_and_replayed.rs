//! Each reason a router refuses an event for lands in the dead-letter
//! file with the data byte for byte, and the events behind it are
//! delivered; after the route is fixed, `replay` delivers the ones it can
//! and removes them, and leaves the ones still refused.

use crate::common;

use std::time::Duration;

use common::broker::{Broker, Subscriber};
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{wait_for, Sandbox};
use serde_json::{json, Value};

use super::{file, letters, manage};

#[test]
fn refused_events_are_kept_byte_for_byte_and_replayed_after_a_route_fix() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "site/#", None) else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let rep = Repeater::builder(&sb, "dl")
        .source(&source.url())
        .sink(&broker.url())
        .args(["--qos", "1", "--max-packet-size", "400"])
        .start();
    let routes = json!([
        {"sourcetopic": "dev/", "sinktopic": "site/{/device/id}/{suffix}"},
        {"sourcetopic": "big", "sinktopic": "site/big"},
    ]);
    let (code, body) = rep.send_json("POST", "/events", &routes.to_string());
    assert_eq!(code, 201, "{body}");

    let delivered_first = r#"{"topic":"dev/a","device":{"id":"d1"},"n":1}"#;
    let no_device = "{\"topic\":\"dev/b\",\n \"n\":2}";
    let not_json = "price: 101.5\nand a second line";
    let big = format!(r#"{{"topic":"big","pad":"{}"}}"#, "x".repeat(500));
    let delivered_last = r#"{"topic":"dev/c","device":{"id":"d3"},"n":5}"#;
    source.push("1", delivered_first);
    source.push("2", no_device);
    source.push("3", not_json);
    source.push("4", &big);
    source.push("5", delivered_last);

    // The events behind the refused ones are delivered.
    let got = sub.wait(Duration::from_secs(15), |m| m.len() >= 2);
    let topics: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(topics, ["site/d1/a", "site/d3/c"], "{}", rep.log());
    let kept = wait_for(Duration::from_secs(10), || {
        let l = letters(&file(&sb, &rep));
        (l.len() == 3).then_some(l)
    })
    .unwrap_or_else(|| {
        panic!(
            "not 3 letters: {:?}\n{}",
            letters(&file(&sb, &rep)),
            rep.log()
        )
    });
    let by_reason = |r: &str| -> &Value {
        kept.iter()
            .find(|l| l["reason"] == r)
            .unwrap_or_else(|| panic!("no {r} letter: {kept:?}"))
    };
    let topic = by_reason("invalid_topic");
    assert_eq!(topic["data"], no_device, "as received, new line and all");
    assert_eq!(topic["source_topic"], "dev/b");
    assert_eq!(topic["route"], "dev/");
    assert_eq!(topic["id"], "2");
    let invalid = by_reason("invalid");
    assert_eq!(invalid["data"], not_json);
    assert_eq!(invalid["id"], "3");
    let large = by_reason("too_large");
    assert_eq!(large["data"], big.as_str());
    assert_eq!(large["sink_topic"], "site/big");
    for reason in ["invalid", "invalid_topic", "too_large"] {
        let m = format!("dead_letters_total{{reason=\"{reason}\"}}");
        assert_eq!(rep.metric(&m), 1.0, "{m}");
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(file(&sb, &rep))
            .expect("the file")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);

    // The operator's view: a table, one line each, and the counts.
    let list = manage(&sb, &["dead-letters", "list", "--name", "dl"]).ok();
    assert_eq!(list.lines().len(), 5, "{}", list.stdout);
    assert!(list.lines()[0].starts_with("TIME "), "{}", list.stdout);
    assert_eq!(list.lines()[4], "3 shown, 3 matched, 3 in the file");
    let json = manage(
        &sb,
        &[
            "dead-letters",
            "list",
            "--name",
            "dl",
            "--reason",
            "too_large",
            "-o",
            "json",
        ],
    )
    .ok()
    .json();
    assert_eq!(json["matched"], 1, "{json}");
    assert_eq!(json["letters"][0]["data"], big.as_str());

    // The route is fixed; the letter it refused is replayed, delivered, and
    // gone from the file. The other two are refused again and stay.
    let (code, body) = rep.send_json("PUT", "/events/dev/", r#"{"sinktopic":"site/{suffix}"}"#);
    assert!(code == 200 || code == 201, "{code} {body}");
    let replayed = manage(&sb, &["dead-letters", "replay", "--name", "dl"])
        .ok()
        .json();
    assert_eq!(
        replayed,
        json!({"matched": 3, "delivered": 1, "refused": 2, "pending": 0}),
        "{}",
        rep.log()
    );
    let got = sub.wait(Duration::from_secs(10), |m| m.len() >= 3);
    assert_eq!(got[2].0, "site/b", "{got:?}");
    let payload: Value = serde_json::from_str(&got[2].1).expect("JSON");
    assert_eq!(payload, serde_json::from_str::<Value>(no_device).unwrap());
    let left: Vec<Value> = letters(&file(&sb, &rep));
    let reasons: Vec<&str> = left.iter().filter_map(|l| l["reason"].as_str()).collect();
    assert_eq!(reasons, ["invalid", "too_large"], "{left:?}");
    assert_eq!(rep.metric("dead_letters_replayed_total"), 1.0);

    // Purge needs a filter or --all; with one, it removes just those.
    manage(&sb, &["dead-letters", "purge", "--name", "dl"]).code(2);
    let purged = manage(
        &sb,
        &[
            "dead-letters",
            "purge",
            "--name",
            "dl",
            "--reason",
            "invalid",
        ],
    )
    .ok()
    .json();
    assert_eq!(purged, json!({"removed": 1, "left": 1}));
    assert_eq!(letters(&file(&sb, &rep)).len(), 1);
}
