//! A tap whose client reads nothing while thousands of events flow: its
//! queue fills and it skips its own events, every event still reaches the
//! broker, and once the client reads it is told how many it missed: every
//! event is either shown or counted in a `: skipped N events` comment.

use std::time::Duration;

use serde_json::json;

use super::open;
use crate::common;
use common::broker::{Broker, Subscriber};
use common::http::SseItem;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::Sandbox;

const EVENTS: usize = 3000;

#[test]
fn a_tap_that_never_reads_is_told_what_it_missed_and_delivery_is_unaffected() {
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
        .args(["--qos", "1"])
        .start();
    let route = json!({"sourcetopic": "t/", "sinktopic": "out/{suffix}"});
    assert_eq!(rep.send_json("POST", "/events", &route.to_string()).0, 201);

    // About 3 MB of events: more than the tap's queue (1024 events, 1 MiB)
    // and the socket's buffers hold.
    let mut tap = open(&rep, "");
    let pad = "x".repeat(1000);
    for n in 1..=EVENTS {
        source.push(
            &n.to_string(),
            &json!({"topic": format!("t/{}", n % 10), "n": n, "pad": pad}).to_string(),
        );
    }
    let got = sub.wait(Duration::from_secs(60), |m| m.len() >= EVENTS);
    assert_eq!(
        got.len(),
        EVENTS,
        "not every event was delivered:\n{}",
        rep.log()
    );

    // Now the client reads: what is queued, then the count of the rest.
    let (mut shown, mut skipped, mut comments) = (0usize, 0u64, Vec::new());
    while let Some(item) = tap.next_item(Duration::from_secs(3)) {
        match item {
            SseItem::Event { .. } => shown += 1,
            SseItem::Comment(c) => {
                let n = c
                    .strip_prefix("skipped ")
                    .and_then(|r| r.strip_suffix(" events"))
                    .and_then(|n| n.parse::<u64>().ok());
                match n {
                    Some(n) => skipped += n,
                    None => comments.push(c),
                }
            }
        }
    }
    assert!(
        skipped > 0,
        "the tap kept up after all ({shown} shown): no test"
    );
    assert!(shown > 0, "the tap showed nothing");
    assert_eq!(
        shown as u64 + skipped,
        EVENTS as u64,
        "{shown} shown + {skipped} skipped; other comments: {comments:?}"
    );
    assert_eq!(rep.metric("tap_skipped_total"), skipped as f64);
    assert_eq!(rep.metric("events_acked_total"), EVENTS as f64);
    assert_eq!(rep.metric("tap_clients"), 1.0);

    // Caught up, the tap shows the next event as it comes.
    source.push("x", &json!({"topic": "t/last"}).to_string());
    let next = super::events(&mut tap, 1, Duration::from_secs(10));
    assert_eq!(next.len(), 1, "{}", rep.log());
    assert_eq!(next[0]["source_topic"], "t/last");
}
