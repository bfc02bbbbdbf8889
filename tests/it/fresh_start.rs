//! A repeater killed before its first checkpoint (issue 19's chaos run):
//! the broker not up yet, a fresh repeater (no checkpoint file) takes 1,001
//! events from a numbered source into its buffer, is `SIGKILL`ed, and is
//! started again once the broker is up. It used to subscribe to live events
//! ("subscribed to event source" without "resuming"): events 1..4,023 were
//! missing at the subscriber and no counter showed them. Now the first
//! checkpoint, holding the first event, is on disk before that event is
//! accepted (docs/reliability.md, "The first checkpoint").

use std::time::Duration;

use crate::common::broker::Broker;
use crate::common::{free_port, Sandbox};
use crate::reliability::{m, start_loadgen_source, start_repeater, wait_metrics, Counter};

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
