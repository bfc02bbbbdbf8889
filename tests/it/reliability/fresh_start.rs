//! A repeater killed before its first checkpoint (issue 19's chaos run):
//! the broker not up yet, a fresh repeater (no checkpoint file) takes 1,001
//! events from a numbered source into its buffer, is `SIGKILL`ed, and is
//! started again once the broker is up. It used to subscribe to live events
//! ("subscribed to event source" without "resuming"): events 1..4,023 were
//! missing at the subscriber and no counter showed them. Now the first
//! checkpoint, holding the first event, is on disk before that event is
//! accepted (docs/reliability.md, "The first checkpoint").

use std::time::Duration;

use super::{m, start_loadgen_source, start_repeater, wait_metrics, Counter};
use crate::common::broker::Broker;
use crate::common::{free_port, Sandbox};

#[test]
fn a_fresh_repeater_killed_before_any_delivery_loses_nothing() {
    // With persistence, the subscriber's session and what it is owed
    // outlive the broker's stop; the repeater never sees the broker up.
    let Some(mut broker) = Broker::start_with(true) else {
        return;
    };
    let sb = Sandbox::new();
    let (rate, count) = (1000, 6000);
    let counter = Counter::start(&broker, "bench/seq", "fresh-start", count, false);
    broker.stop();
    let port = free_port();
    let _source = start_loadgen_source(port, rate, count);
    let mut r = start_repeater(
        &sb,
        "fresh",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall"],
    );
    let metrics = wait_metrics(&r, Duration::from_secs(20), |mm| {
        mm.get("app_event_repeater_events_accepted_total")
            .copied()
            .unwrap_or(0.0)
            >= 1001.0
    });
    let accepted = m(&metrics, "events_accepted_total");
    // The control: what the repeater accepted existed nowhere else (the
    // subscriber had nothing), so losing it would show as missing.
    assert!(accepted >= 1001, "accepted only {accepted}: {}", r.log());
    assert_eq!(m(&metrics, "events_published_total"), 0);
    assert_eq!(counter.distinct(), 0);
    r.kill9();
    broker.restart();
    r.restart();

    let sum = counter.finish(Duration::from_secs(90));
    eprintln!("subscriber: {sum}; accepted before the kill: {accepted}");
    let log = r.log();
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{log}");
    assert_eq!(sum["distinct"], count);
    // Nothing was delivered before the kill, so nothing comes twice.
    assert_eq!(sum["duplicates"], 0, "{sum}");
    assert!(
        log.contains("resuming after event id 1 "),
        "the restart resumes after the first event: {log}"
    );
}

/// Issue 30 item 3: with the data directory on a full disk, a fresh
/// repeater subscribed, could not write its first checkpoint, and after a
/// `kill -9` and a restart with space again it subscribed without
/// `Last-Event-ID`: the 3,019 events sent meanwhile were gone, unsaid. Now
/// a start that cannot write its checkpoint does not subscribe at all (and
/// says so in `/healthz`), and subscribes once it can.
#[test]
fn a_fresh_start_on_a_full_disk_does_not_subscribe_until_it_can_write() {
    use crate::common::repeater::Repeater;
    use crate::common::sse_source::ScriptedSource;
    use crate::common::tmpfs::Tmpfs;
    use crate::common::wait_for;

    let sb = Sandbox::new();
    let Some(disk) = Tmpfs::mount(&sb.data_dir().join("event-repeater"), "256k") else {
        return;
    };
    disk.fill("filler");
    let source = ScriptedSource::start();
    for n in 1..=5 {
        source.push_topic(n, &format!("full/{n}"));
    }
    let healthz = |r: &Repeater| -> serde_json::Value {
        serde_json::from_str(&r.get("/healthz").1).expect("JSON")
    };
    let mut r = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall", "--log", "3"])
        .start();
    let problem = wait_for(Duration::from_secs(10), || {
        let h = healthz(&r);
        let p = h["source"]["problem"].as_str()?.to_string();
        p.contains("not subscribing").then_some(p)
    })
    .unwrap_or_else(|| panic!("no problem reported: {}", r.log()));
    assert!(problem.contains("cannot write the checkpoint"), "{problem}");
    std::thread::sleep(Duration::from_secs(1));
    assert!(source.asked().is_empty(), "subscribed with a full disk");
    assert!(r.sink_topics().is_empty());
    r.kill9();

    // Space again: the restart subscribes (the positive control: it would
    // have been seen) and relays every event, saying how it started.
    std::fs::remove_file(sb.data_dir().join("event-repeater/filler")).unwrap();
    r.restart();
    let all = wait_for(Duration::from_secs(10), || {
        (r.sink_topics().len() >= 5).then(|| r.sink_topics())
    });
    let want: Vec<String> = (1..=5).map(|n| format!("full/{n}")).collect();
    assert_eq!(all, Some(want), "{}", r.log());
    assert_eq!(source.asked(), vec![None]);
    let h = healthz(&r);
    assert!(
        h["source"]["start"]
            .as_str()
            .unwrap_or("")
            .contains("no checkpoint yet"),
        "{h}"
    );
    assert!(
        r.log().contains("no checkpoint (")
            && r.log().contains("starting from the source's live events"),
        "{}",
        r.log()
    );
    drop(r);
    drop(disk);
}
