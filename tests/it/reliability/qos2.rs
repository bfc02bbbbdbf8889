//! Issue 30, item 1: QoS 2 into mosquitto, whose quota of unfinished QoS 2
//! publishes from one client is `max_inflight_messages`, 20 by default.
//! Over MQTT 3.1.1 mosquitto answers a publish over that quota like an
//! accepted one (PUBREC, then PUBCOMP) and discards it; with
//! `max_queued_messages 0` it drops the connection instead. The window of
//! 1,000 lost 18,000 of 20,000 events unseen in the first case and never
//! delivered in the second; the QoS 2 default window is now 20, and a
//! connection dropped on a full window lowers the window.
//!
//! The deliveries are counted on brokers with `max_queued_messages 0`
//! (`Broker::start`): the quota on what the repeater sends stays mosquitto's
//! default, and mosquitto cannot drop what it queues for a subscriber that
//! falls behind on a loaded machine (its default queue is 1,000 messages),
//! which would be counted as missing here.

use std::time::Duration;

use common::broker::Broker;
use common::repeater::Repeater;
use common::{free_port, Sandbox};

use super::{m, start_loadgen_source, wait_metrics, Counter};
use crate::common;

/// A repeater at `--qos 2` reading `port`, as fast as the source sends:
/// the buffer fills, and every turn of the sink has far more than 20
/// publishes to send.
fn start_qos2<'a>(sb: &'a Sandbox, broker: &Broker, port: u16, extra: &[&str]) -> Repeater<'a> {
    Repeater::builder(sb, "qos2")
        .source(&format!("http://127.0.0.1:{port}"))
        .sink(&broker.url())
        .args(["--qos", "2", "--log", "3", "--allowall"])
        .args(extra)
        .start()
}

/// Asserts every one of `count` events arrived once and in order.
fn all_in_order(sum: &serde_json::Value, count: u64, log: &str) {
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{log}");
    assert_eq!(sum["distinct"], count, "{sum}");
    assert_eq!(sum["duplicates"], 0, "{sum}");
    assert_eq!(sum["out_of_order"], 0, "{sum}");
}

#[test]
fn qos2_at_full_speed_into_a_default_mosquitto_delivers_every_event_in_order() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 20_000;
    let counter = Counter::start(&broker, "bench/seq", "qos2-full", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 1_000_000, count);
    let r = start_qos2(&sb, &broker, port, &[]);
    let sum = counter.finish(Duration::from_secs(120));
    let log = r.log();
    all_in_order(&sum, count, &log);
    assert!(!log.contains("warning"), "{log}");
    assert_eq!(m(&r.metrics(), "sink_disconnects_total"), 0);
}

/// The control for the test above: `--inflight 1000` asked for at QoS 2
/// warns at start, and into a mosquitto with every default it does lose
/// events though every publish was answered as complete (most of them: a
/// slow subscriber would lose at most a few hundred).
#[test]
fn a_qos2_window_over_the_brokers_quota_is_warned_about_and_loses_unseen() {
    let Some(broker) = Broker::start_defaults() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 5_000;
    let counter = Counter::start(&broker, "bench/seq", "qos2-over", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 1_000_000, count);
    let r = start_qos2(&sb, &broker, port, &["--inflight", "1000"]);
    let sum = counter.finish(Duration::from_secs(20));
    let log = r.log();
    assert!(
        log.contains("--inflight 1000 at --qos 2") && log.contains("max_inflight_messages"),
        "{log}"
    );
    assert!(sum["missing"].as_u64().unwrap() > 2000, "{sum}");
    let mm = wait_metrics(&r, Duration::from_secs(10), |mm| {
        m(mm, "events_acked_total") == count
    });
    assert_eq!(m(&mm, "events_acked_total"), count, "{mm:?}");
}

/// A mosquitto that drops the connection over its quota: the window of
/// 1,000 is lowered each time the connection is lost on a full window, the
/// backoff grows meanwhile (no reconnect storm), the log says so once, and
/// every event arrives once, in order.
#[test]
fn a_broker_dropping_the_connection_over_its_quota_lowers_the_window_without_a_storm() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 20_000;
    let counter = Counter::start(&broker, "bench/seq", "qos2-drop", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 1_000_000, count);
    let r = start_qos2(&sb, &broker, port, &["--inflight", "1000"]);
    let sum = counter.finish(Duration::from_secs(120));
    let log = r.log();
    // A dropped connection starts a clean session: a publish the broker
    // took but whose PUBREC the drop cut off is sent again (10 of 20,000
    // seen once under load). And before it drops the connection mosquitto
    // may answer an over-quota publish as accepted and discard it (rc151,
    // which MQTT 3.1.1 cannot carry): 1 of 20,000 seen in 1 full run of 3.
    // That is why the repeater warns at start about --inflight over 20 at
    // QoS 2 (asserted below); the default window loses nothing (the test
    // above). Both bounded by one broker quota / one window.
    let missing = sum["missing"].as_u64().unwrap_or(u64::MAX);
    assert!(
        missing <= 20,
        "{missing} lost: more than one quota\n{sum}\nlog:\n{log}"
    );
    assert!(
        log.contains("so the event is lost"),
        "no warning at start:\n{log}"
    );
    assert_eq!(sum["out_of_order"], 0, "{sum}");
    let dups = sum["duplicates"].as_u64().unwrap_or(u64::MAX);
    assert!(
        dups <= 1000,
        "{dups} duplicates: more than one window\n{sum}"
    );
    assert_eq!(
        log.matches("it may take fewer unacknowledged publishes")
            .count(),
        1,
        "{log}"
    );
    assert!(log.contains("acknowledges publishes again"), "{log}");
    // 1000 halves to below 20 in 6 steps; each a reconnect.
    let drops = m(&r.metrics(), "sink_disconnects_total");
    assert!((1..=12).contains(&drops), "{drops} disconnects\n{log}");
    assert!(log.lines().count() < 40, "{log}");
}

/// Issue 30: QoS 2 across `kill -9` of the repeater, three times, at the
/// default window: every event arrives (the checkpoint resumes after the
/// last one the broker completed), duplicates within the documented bound.
#[test]
fn qos2_across_repeater_kill9_loses_nothing() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let (count, buffer, rate) = (20_000, 1000, 2000);
    let counter = Counter::start(&broker, "bench/seq", "qos2-kill", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, rate, count);
    let mut r = start_qos2(&sb, &broker, port, &["--buffer", &buffer.to_string()]);
    for kill in 1..=3 {
        counter.wait_distinct(kill * 5000, Duration::from_secs(60));
        r.kill9();
        r.restart();
    }
    let sum = counter.finish(Duration::from_secs(120));
    let log = r.log();
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{log}");
    assert_eq!(sum["distinct"], count, "{sum}");
    let bound = 3 * (buffer + rate / 2);
    assert!(
        sum["duplicates"].as_u64().unwrap() <= bound,
        "{} duplicates, over {bound}: {sum}",
        sum["duplicates"]
    );
    assert_eq!(log.matches("resuming after event id").count(), 3, "{log}");
}
