//! A sink topic built from fields of the event (issue 29 item 6):
//! `site/{/device/id}` takes each event's `device.id`; an event without it,
//! or whose value a sink cannot take, is counted and refused, and never
//! holds back the events behind it.

use std::time::Duration;

use crate::common::repeater::Repeater;
use crate::common::sse_source::ScriptedSource;
use crate::common::{wait_for, Sandbox};

#[test]
fn a_sink_topic_takes_fields_of_the_event_and_refuses_what_it_cannot_use() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let events = [
        r#"{"topic":"dev/a","device":{"id":"d1"}}"#,
        r#"{"topic":"dev/a","device":{}}"#,
        r#"{"topic":"dev/b","device":{"id":"x\u0001y"}}"#,
        r#"{"topic":"dev/b","device":{"id":"up/out"}}"#,
        r#"{"topic":"dev/b","device":{"id":42}}"#,
        r#"{"topic":"dev/a","device":{"id":"d2"}}"#,
    ];
    for (n, e) in (1..).zip(events) {
        source.push(&n.to_string(), e);
    }
    let r = Repeater::builder(&sb, "fields")
        .source(&source.url())
        .sinkprotocol("stderr")
        .start();
    // The six are read, with no route yet, before the route is added: a
    // route added first would take them as well (their topics twice).
    let read = wait_for(Duration::from_secs(10), || {
        (r.metric("events_unrouted_total") >= 6.0).then_some(())
    });
    assert!(read.is_some(), "the first six were not read: {}", r.log());
    let (status, body) = r.send_json(
        "POST",
        "/events",
        r#"{"sourcetopic":"dev/","sinktopic":"site/{/device/id}/{suffix}"}"#,
    );
    assert!(status == 200 || status == 201, "{status} {body}");
    // The route came after the events were read: push them again.
    for (n, e) in (7..).zip(events) {
        source.push(&n.to_string(), e);
    }
    let want = ["site/d1/a", "site/42/b", "site/d2/a"];
    let got = wait_for(Duration::from_secs(10), || {
        (r.sink_topics().len() >= want.len()).then(|| r.sink_topics())
    });
    assert_eq!(got, Some(want.map(String::from).to_vec()), "{}", r.log());
    let failed = r.metrics()["app_event_repeater_events_failed_total{reason=\"invalid_topic\"}"];
    assert_eq!(failed, 3.0, "{}", r.log());
    let log = r.log();
    assert!(log.contains("no string or number at /device/id"), "{log}");
    assert!(!log.contains('\u{1}'), "{log:?}");
}
