//! Dead letters replayed into a RabbitMQ stream that has stored events
//! after them: a replayed event goes by the producer without a name, since
//! under the named one its publishing id (its SSE id) is below the highest
//! stored and the stream would drop it as a duplicate: acknowledged and
//! never stored.

use crate::common;

use std::time::Duration;

use common::rabbitmq::RabbitNode;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{wait_for, Sandbox};
use serde_json::json;

use super::{file, letters, manage};
use crate::sinks::rabbitmq_stream::try_read;

#[test]
fn letters_replayed_into_a_stream_that_went_on_are_stored_not_dropped() {
    let Some(node) = RabbitNode::start() else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let rep = Repeater::builder(&sb, "rq")
        .source(&source.url())
        .sinkprotocol("rabbitmq-stream")
        .sink(&node.url())
        .args(["--ack-timeout", "3s"])
        .start();
    // The stream is named by a field of the event; the odd events lack it.
    let route = json!([{"sourcetopic": "r/", "sinktopic": "rs.{/data/stream}"}]);
    let (code, body) = rep.send_json("POST", "/events", &route.to_string());
    assert_eq!(code, 201, "{body}");
    for n in 1..=10u64 {
        let mut data = json!({"seq": n, "t": 0});
        if n % 2 == 0 {
            data["stream"] = json!("good");
        }
        let event = json!({"topic": format!("r/{n}"), "id": n.to_string(), "data": data});
        source.push(&n.to_string(), &event.to_string());
    }
    let kept = wait_for(Duration::from_secs(30), || {
        let l = letters(&file(&sb, &rep));
        (l.len() == 5 && rep.metric("events_acked_total") == 5.0).then_some(l)
    })
    .unwrap_or_else(|| panic!("not 5 letters and 5 stored: {}", rep.log()));
    assert!(
        kept.iter().all(|l| l["reason"] == "invalid_topic"),
        "{kept:?}"
    );

    // Fixed; the stream holds 2..10 by the named producer, and the
    // replayed 1, 3, 5, 7, 9 are stored too.
    let (code, body) = rep.send_json("PUT", "/events/r/", r#"{"sinktopic":"rs.good"}"#);
    assert!(code == 200 || code == 201, "{code} {body}");
    let replayed = manage(
        &sb,
        &["dead-letters", "replay", "--name", "rq", "--wait", "10"],
    )
    .ok()
    .json();
    assert_eq!(replayed["delivered"], 5, "{replayed}\n{}", rep.log());
    let read = wait_for(Duration::from_secs(30), || {
        try_read(&node, "rs.good", 10)
            .ok()
            .filter(|v| v["missing"] == 0)
    })
    .unwrap_or_else(|| panic!("not all stored: {:?}", try_read(&node, "rs.good", 10)));
    assert_eq!(read["distinct"], 10, "{read}");
    assert_eq!(read["duplicates"], 0, "{read}");
    assert!(letters(&file(&sb, &rep)).is_empty());
}
