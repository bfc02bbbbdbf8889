//! SSE ids the repeater will not keep (issue 19 item 5, issue 30 item 2):
//! one too long for the checkpoint, one holding a control character (which
//! cannot be a `Last-Event-ID` header). The event is relayed all the same,
//! the id counted (`source_ids_refused_total`) and not kept, so the
//! checkpoint stays readable and the source reachable after a restart; a
//! checkpoint an older release wrote with such an id is not resumed from.
//!
//! Events come from a scripted source (`common::sse_source`) that replays
//! after `Last-Event-ID` and records what it was asked for; the sink is
//! stderr.

use crate::common;

use std::time::Duration;

use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{wait_for, Sandbox};

/// A repeater relaying every topic of `source` to stderr.
fn to_stderr<'a>(sb: &'a Sandbox, source: &ScriptedSource) -> Repeater<'a> {
    Repeater::builder(sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall"])
        .start()
}

/// Issue 19 item 5: an SSE id of 70,005 bytes went into the checkpoint,
/// which was then over its 64 KiB read limit: the next start failed. Now
/// the id is not kept (counted), the event is still relayed, and the
/// repeater restarts after `kill -9` and keeps relaying.
#[test]
fn an_overlong_sse_id_is_not_kept_and_the_repeater_restarts_after_kill9() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    source.push_topic(1, "t/a");
    let long_id = "x".repeat(70_005);
    source.push(&long_id, r#"{"topic":"t/long"}"#);
    let mut rep = to_stderr(&sb, &source);
    rep.wait_relayed("t/long");
    assert_eq!(rep.metric("source_ids_refused_total"), 1.0);
    assert!(rep
        .log()
        .contains("event id of 70005 bytes, over the limit of 1024 bytes"));
    rep.wait_checkpoint("1");
    let checkpoint = sb
        .data_dir()
        .join("event-repeater/event-repeater.checkpoint");
    rep.kill9();
    assert!(std::fs::metadata(&checkpoint).unwrap().len() < 2048);

    source.push_topic(3, "t/after");
    rep.restart();
    rep.wait_relayed("t/after");
    // It resumed after the last id it kept, so the long-id event came again.
    assert_eq!(source.asked().last(), Some(&Some("1".to_string())));
    assert_eq!(rep.metric("source_ids_refused_total"), 1.0);
}

/// Issue 30 item 2: after `id: 2\x01x` no reconnection ever reached the
/// source (the id cannot be a `Last-Event-ID` header), and the checkpoint
/// kept it, so every restart failed the same way. Now the id is not kept
/// (counted, like NUL is ignored), the event is still relayed, and a
/// checkpoint an older release wrote with such an id is repaired.
#[test]
fn an_sse_id_with_a_control_character_is_not_kept_and_the_source_stays_reachable() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    source.push_topic(1, "t/a");
    source.push("2\u{1}x", r#"{"topic":"t/ctl"}"#);
    source.push_topic(3, "t/b");
    let mut rep = to_stderr(&sb, &source);
    let relayed = wait_for(Duration::from_secs(10), || {
        (rep.sink_topics().len() >= 3).then(|| rep.sink_topics())
    });
    assert_eq!(
        relayed,
        Some(vec!["t/a".to_string(), "t/ctl".into(), "t/b".into()]),
        "{}",
        rep.log()
    );
    assert_eq!(rep.metric("source_ids_refused_total"), 1.0);
    assert!(
        rep.log().contains("holding a control character"),
        "{}",
        rep.log()
    );
    rep.wait_checkpoint("3");

    // A restart resumes after 3 (the positive control: the source was
    // reached again with a Last-Event-ID).
    rep.kill9();
    source.push_topic(4, "t/after");
    rep.restart();
    rep.wait_relayed("t/after");
    assert_eq!(source.asked().last(), Some(&Some("3".to_string())));

    // A checkpoint an older release wrote with such an id: warned about,
    // not sent, and the repeater relays from the source's live events.
    rep.kill9();
    let checkpoint = sb
        .data_dir()
        .join("event-repeater/event-repeater.checkpoint");
    let old = serde_json::json!({
        "version": 1, "source": source.url(), "sink": "stderr", "last_event_id": "a\u{1}b"
    });
    std::fs::write(&checkpoint, old.to_string()).unwrap();
    let before = source.asked().len();
    rep.restart();
    let asked = wait_for(Duration::from_secs(10), || {
        (source.asked().len() > before).then(|| source.asked())
    })
    .expect("the source was asked again");
    assert_eq!(asked.last(), Some(&None), "{}", rep.log());
    assert!(
        rep.log().contains("cannot be resumed from"),
        "{}",
        rep.log()
    );
    rep.wait_checkpoint("4");
}
