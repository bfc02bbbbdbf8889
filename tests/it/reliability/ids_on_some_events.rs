//! A source that puts `id:` on some events only (issue 29): every event
//! without an id of its own carried the last id, so the NATS sink gave it
//! the `Nats-Msg-Id` of the event that set it and JetStream dropped it as a
//! duplicate (3 of 8 stored, all acknowledged, none counted). Each event now
//! has a key of its own (docs/reliability.md, "Event ids and dedup keys"):
//! all 8 are stored, a restart between an id and the events after it
//! stores each once, and an empty `id:` clears the last id (no
//! `Last-Event-ID` after it).

use crate::common;

use std::time::Duration;

use common::broker::{Broker, Subscriber};
use common::nats::NatsServer;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{wait_for, Sandbox};

use crate::sinks::nats::read_stream;

/// The issue's stream: `id: 1` + 1, 2 and 3 without ids, an empty `id:` +
/// 4, 5 and 6, `id: 7` + 7, 8; each on topic `ids/N`.
fn push_issue_stream(source: &ScriptedSource) {
    let ids = [Some("1"), None, None, Some(""), None, None, Some("7"), None];
    for (n, id) in (1..).zip(ids) {
        push(source, id, n);
    }
}

fn push(source: &ScriptedSource, id: Option<&str>, n: u64) {
    let data = serde_json::json!({"topic": format!("ids/{n}"), "n": n}).to_string();
    source.push_event(id, &data);
}

fn wait_acked(rep: &Repeater, n: f64) {
    let acked = wait_for(Duration::from_secs(20), || {
        (rep.metric("events_acked_total") >= n).then_some(())
    });
    assert!(acked.is_some(), "acked fewer than {n}:\n{}", rep.log());
}

/// The checkpoint file's text once `pred` holds for it.
fn wait_checkpoint(rep: &Repeater, sb: &Sandbox, pred: impl Fn(&str) -> bool) -> String {
    let file = sb
        .data_dir()
        .join(format!("event-repeater/{}.checkpoint", rep.name()));
    let seen = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&file).ok().filter(|t| pred(t))
    });
    seen.unwrap_or_else(|| {
        panic!(
            "the checkpoint never got there: {:?}\n{}",
            std::fs::read_to_string(&file),
            rep.log()
        )
    })
}

/// Subjects `ids.1` … `ids.N`, each stored once, and nothing else.
fn assert_each_once(stored: &serde_json::Value, n: u64) {
    let subjects = stored["subjects"].as_object().expect("subjects");
    for i in 1..=n {
        assert_eq!(
            subjects.get(&format!("ids.{i}")),
            Some(&1.into()),
            "{stored}"
        );
    }
    assert_eq!(stored["messages"], n, "{stored}");
}

#[test]
fn nats_stores_every_event_of_a_source_with_ids_on_some_events_across_a_kill() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    push_issue_stream(&source);
    let mut rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("nats")
        .sink(&server.url())
        .args(["--allowall", "--qos", "1", "--nats-stream", "IDS"])
        .start();
    wait_acked(&rep, 8.0);
    assert_each_once(&read_stream(&server.url(), "IDS", 8), 8);
    // Event 8 has no id of its own: the checkpoint is its position after 7.
    let text = wait_checkpoint(&rep, &sb, |t| t.contains("\"key\":\"7#1."));
    assert!(text.contains("\"last_event_id\":\"7\""), "{text}");

    // Killed there; 9 (no id), 10 (id 10) and 11 (no id) come meanwhile.
    rep.kill9();
    push(&source, None, 9);
    push(&source, Some("10"), 10);
    push(&source, None, 11);
    rep.restart();
    wait_acked(&rep, 4.0);
    // The restart resumed after 7, so the source replayed 8 (the
    // positive control: it was sent again), and the stream kept it once.
    assert_eq!(source.asked().last(), Some(&Some("7".to_string())));
    assert_eq!(rep.metric("events_received_total"), 4.0, "{}", rep.log());
    assert_each_once(&read_stream(&server.url(), "IDS", 11), 11);
}

#[test]
fn mqtt_delivers_every_event_and_an_empty_id_clears_the_resume() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "ids/#", Some("ids-sub")) else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    push_issue_stream(&source);
    let mut rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sink(&broker.url())
        .args(["--allowall", "--qos", "1"])
        .start();
    let want: Vec<String> = (1..=8).map(|n| format!("ids/{n}")).collect();
    let got = sub.wait(Duration::from_secs(15), |m| m.len() >= 8);
    let topics: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(topics, want, "{}", rep.log());
    wait_checkpoint(&rep, &sb, |t| t.contains("\"key\":\"7#1."));
    // The positive control: a restart here resumes after 7 (and 8, sent
    // again, arrives twice: at least once).
    rep.kill9();
    rep.restart();
    let asked = |n: usize| {
        wait_for(Duration::from_secs(10), || {
            (source.asked().len() >= n).then(|| source.asked())
        })
        .expect("the restarted repeater subscribed")
    };
    assert_eq!(asked(2)[1], Some("7".to_string()), "{}", rep.log());
    let again = sub.wait(Duration::from_secs(15), |m| m.len() >= 9);
    assert_eq!(
        again.last().map(|(t, _)| t.as_str()),
        Some("ids/8"),
        "{again:?}"
    );

    // Then an empty id and one more event: the checkpoint holds no id, and
    // a restart asks for no Last-Event-ID.
    push(&source, Some(""), 9);
    let with_9 = sub.wait(Duration::from_secs(15), |m| {
        m.iter().any(|(t, _)| t == "ids/9")
    });
    assert!(with_9.iter().any(|(t, _)| t == "ids/9"), "{}", rep.log());
    wait_checkpoint(&rep, &sb, |t| t.contains("\"last_event_id\":null"));
    rep.kill9();
    rep.restart();
    assert_eq!(asked(3)[2], None, "{}", rep.log());
    assert!(
        rep.log().contains("holds no event id"),
        "the start says why it does not resume:\n{}",
        rep.log()
    );
    let (_, h) = rep.get("/healthz");
    assert!(h.contains("the checkpoint held no event id"), "{h}");
}
