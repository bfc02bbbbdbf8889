//! Dead letters from the sink's side (JetStream refusing events over the
//! stream's `max_msg_size`), replayed once the limit is raised: every one
//! stored, and a replay run again after a crash that left the file as it
//! was (delivered but not yet removed) stores none twice, by the dedup
//! key the letters keep. And `sink_error`: events a stream the repeater did
//! not create does not capture, replayed once its owner adds the subject.

use crate::common;

use std::time::Duration;

use common::nats::NatsServer;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{wait_for, Sandbox};
use serde_json::json;

use super::{file, letters, manage, stored_once_each};
use crate::sinks::nats::read_stream;

#[test]
fn letters_the_stream_refused_are_stored_once_each_however_often_they_are_replayed() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let config = |max_msg_size: i64| {
        json!({"name": "SMALL", "subjects": ["ids.>"], "storage": "memory",
               "num_replicas": 1, "max_msg_size": max_msg_size,
               "duplicate_window": 120_000_000_000u64})
    };
    let created = crate::sinks::nats_trouble::js_api(
        server.port,
        "$JS.API.STREAM.CREATE.SMALL",
        &config(200),
    );
    assert!(created["error"].is_null(), "{created}");
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    // Ten events; the even ones are over the stream's limit.
    for n in 1..=10u64 {
        let pad = if n % 2 == 0 {
            "x".repeat(300)
        } else {
            String::new()
        };
        let data = json!({"topic": format!("ids/{n}"), "n": n, "pad": pad}).to_string();
        source.push(&n.to_string(), &data);
    }
    let mut rep = Repeater::builder(&sb, "js")
        .source(&source.url())
        .sinkprotocol("nats")
        .sink(&server.url())
        .args(["--allowall", "--qos", "1", "--nats-stream", "SMALL"])
        .start();
    let kept = wait_for(Duration::from_secs(20), || {
        let l = letters(&file(&sb, &rep));
        (l.len() == 5 && rep.metric("events_acked_total") == 5.0).then_some(l)
    })
    .unwrap_or_else(|| panic!("not 5 letters and 5 stored: {}", rep.log()));
    assert!(kept.iter().all(|l| l["reason"] == "too_large"), "{kept:?}");
    // The checkpoint is past them all (refused events are done), so the
    // restart below asks the source for nothing more.
    let checkpoint = sb.data_dir().join("event-repeater/js.checkpoint");
    let past = wait_for(Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&checkpoint).ok()?;
        text.contains("\"last_event_id\":\"10\"").then_some(())
    });
    assert!(past.is_some(), "{:?}", std::fs::read_to_string(&checkpoint));
    let ids: Vec<&str> = kept.iter().filter_map(|l| l["id"].as_str()).collect();
    assert_eq!(ids, ["2", "4", "6", "8", "10"]);
    assert_eq!(read_stream(&server.url(), "SMALL", 5)["messages"], 5);

    // The limit is raised; a copy of the file stands for a crash after
    // the replay delivered and before it removed the letters.
    let updated = crate::sinks::nats_trouble::js_api(
        server.port,
        "$JS.API.STREAM.UPDATE.SMALL",
        &config(10_000),
    );
    assert!(updated["error"].is_null(), "{updated}");
    let before = std::fs::read(file(&sb, &rep)).expect("the letters");
    let replayed = manage(&sb, &["dead-letters", "replay", "--name", "js"])
        .ok()
        .json();
    assert_eq!(
        replayed,
        json!({"matched": 5, "delivered": 5, "refused": 0, "pending": 0})
    );
    assert!(letters(&file(&sb, &rep)).is_empty());
    stored_once_each(&read_stream(&server.url(), "SMALL", 10), "ids", 10);
    assert_eq!(rep.metric("events_duplicate_total"), 0.0);

    rep.kill9();
    std::fs::write(file(&sb, &rep), &before).expect("put the letters back");
    rep.restart();
    let again = manage(&sb, &["dead-letters", "replay", "--name", "js"])
        .ok()
        .json();
    assert_eq!(again["delivered"], 5, "{again}");
    // JetStream said "duplicate" for each (the positive control: they were
    // sent), and stored none twice.
    assert_eq!(
        rep.metric("events_duplicate_total"),
        5.0,
        "asked {:?}, received {}\n{}",
        source.asked(),
        rep.metric("events_received_total"),
        rep.log()
    );
    stored_once_each(&read_stream(&server.url(), "SMALL", 10), "ids", 10);
}

#[test]
fn events_a_foreign_stream_does_not_capture_are_kept_and_replayed_once_it_does() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let config = |subjects: &[&str]| json!({"name": "FOREIGN", "subjects": subjects, "storage": "memory", "num_replicas": 1});
    let created = crate::sinks::nats_trouble::js_api(
        server.port,
        "$JS.API.STREAM.CREATE.FOREIGN",
        &config(&["ids.>"]),
    );
    assert!(created["error"].is_null(), "{created}");
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    source.push("1", &json!({"topic": "ids/1", "n": 1}).to_string());
    source.push("2", &json!({"topic": "other/2", "n": 2}).to_string());
    source.push("3", &json!({"topic": "ids/3", "n": 3}).to_string());
    let rep = Repeater::builder(&sb, "foreign")
        .source(&source.url())
        .sinkprotocol("nats")
        .sink(&server.url())
        .args(["--allowall", "--qos", "1", "--nats-stream", "FOREIGN"])
        .start();
    let kept = wait_for(Duration::from_secs(20), || {
        let l = letters(&file(&sb, &rep));
        (l.len() == 1 && rep.metric("events_acked_total") == 2.0).then_some(l)
    })
    .unwrap_or_else(|| panic!("not 1 letter and 2 stored: {}", rep.log()));
    assert_eq!(kept[0]["reason"], "sink_error", "{kept:?}");
    assert_eq!(kept[0]["sink_topic"], "other/2");
    assert_eq!(rep.metric("dead_letters_total{reason=\"sink_error\"}"), 1.0);
    // The stream's owner adds the subject; the letter is replayed and stored.
    let updated = crate::sinks::nats_trouble::js_api(
        server.port,
        "$JS.API.STREAM.UPDATE.FOREIGN",
        &config(&["ids.>", "other.>"]),
    );
    assert!(updated["error"].is_null(), "{updated}");
    let replayed = manage(
        &sb,
        &[
            "dead-letters",
            "replay",
            "--name",
            "foreign",
            "--wait",
            "10",
        ],
    )
    .ok()
    .json();
    assert_eq!(replayed["delivered"], 1, "{replayed}\n{}", rep.log());
    let stored = read_stream(&server.url(), "FOREIGN", 3);
    let subjects = stored["subjects"].as_object().expect("subjects");
    assert_eq!(subjects.get("other.2"), Some(&1.into()), "{stored}");
    assert_eq!(stored["stream_messages"], 3, "{stored}");
}
