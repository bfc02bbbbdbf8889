//! Events `--overflow drop-newest` drops while the broker is away are
//! dead letters; a replay cut short by `kill -9` (while the broker is
//! stalled, so some publishes may reach it and some not) loses none of
//! them, and the replay run again after the restart stores each once
//! (JetStream deduplicates by the key the letters keep).

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::nats::NatsServer;
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::{plugin_bin, wait_for, Sandbox};

use super::{file, letters, manage, stored_once_each};
use crate::sinks::nats::read_stream;

fn wait(rep: &Repeater, what: &str, pred: impl Fn(&Repeater) -> bool) {
    let ok = wait_for(Duration::from_secs(20), || pred(rep).then_some(()));
    assert!(ok.is_some(), "never {what}:\n{}", rep.log());
}

#[test]
fn a_replay_killed_midway_loses_no_letter_and_the_next_stores_each_once() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let mut rep = Repeater::builder(&sb, "ovf")
        .source(&source.url())
        .sinkprotocol("nats")
        .sink(&server.url())
        .args(["--allowall", "--qos", "1", "--nats-stream", "OVF"])
        .args(["--overflow", "drop-newest", "--buffer", "10"])
        .start();
    source.push_topic(1, "ov/1");
    wait(&rep, "stored the first event", |r| {
        r.metric("events_acked_total") == 1.0
    });

    // The broker stalls; of 49 more events, 10 fit, 39 are dropped and kept.
    server.pause();
    for n in 2..=50 {
        source.push_topic(n, &format!("ov/{n}"));
    }
    wait(&rep, "kept 39 letters", |r| {
        r.metric("dead_letters_total{reason=\"overflow\"}") == 39.0
    });
    server.resume();
    wait(&rep, "stored the 10 buffered", |r| {
        r.metric("events_acked_total") == 11.0
    });
    let checkpoint = sb.data_dir().join("event-repeater/ovf.checkpoint");
    let past = wait_for(Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&checkpoint).ok()?;
        text.contains("\"last_event_id\":\"50\"").then_some(())
    });
    assert!(past.is_some(), "{:?}", std::fs::read_to_string(&checkpoint));

    // A replay while the broker stalls again, killed with it.
    server.pause();
    let mut replay = sb
        .command(plugin_bin("app-event-repeater-manage"))
        .args(["dead-letters", "replay", "--name", "ovf", "--wait", "20"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the replay");
    wait(&rep, "put the letters in flight", |r| {
        r.metric("events_inflight") + r.metric("events_buffered") > 0.0
    });
    rep.kill9();
    let ended = wait_for(Duration::from_secs(10), || replay.try_wait().ok().flatten());
    assert!(
        ended.is_some_and(|s| !s.success()),
        "the replay did not fail: {ended:?}"
    );
    server.resume();
    assert_eq!(letters(&file(&sb, &rep)).len(), 39, "a letter went missing");

    rep.restart();
    let again = manage(
        &sb,
        &["dead-letters", "replay", "--name", "ovf", "--wait", "15"],
    )
    .ok()
    .json();
    assert_eq!(again["delivered"], 39, "{again}\n{}", rep.log());
    assert!(letters(&file(&sb, &rep)).is_empty());
    stored_once_each(&read_stream(&server.url(), "OVF", 50), "ov", 50);
}
