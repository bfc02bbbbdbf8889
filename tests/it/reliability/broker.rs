//! The broker fails under a flow of events: paused (SIGSTOP), restarted
//! gracefully, killed; a burst at full speed; a buffer smaller than the
//! outage. Nothing is lost that is not counted.

use crate::common;

use std::thread;
use std::time::Duration;

use common::broker::Broker;
use common::{wait_for, Sandbox};

use super::{flow, m, wait_metrics};

/// A `kB` field (`VmRSS`, `VmHWM`) of /proc/PID/status.
fn proc_status_kb(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

/// Broker frozen (SIGSTOP) for 3 s and resumed, at 2,000 events/s, QoS 1:
/// nothing lost.
#[test]
fn broker_paused_3s_at_2000_events_per_s_loses_nothing() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 16_000;
    let (counter, _source, r, _) = flow(
        &sb,
        &broker,
        "rel-pause",
        2000,
        count,
        "rel",
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.pause();
    thread::sleep(Duration::from_secs(3));
    broker.resume();

    let sum = counter.finish(Duration::from_secs(60));
    let metrics = r.metrics();
    eprintln!("subscriber: {sum}\nrepeater: {metrics:?}");
    assert_eq!(
        sum["missing"],
        0,
        "events lost: {sum}\nrepeater log:\n{}",
        r.log()
    );
    assert_eq!(sum["distinct"], count);
    assert_eq!(m(&metrics, "events_dropped_total{reason=\"overflow\"}"), 0);
    let settled = wait_metrics(&r, Duration::from_secs(10), |mt| {
        m(mt, "events_acked_total") == m(mt, "events_accepted_total")
    });
    assert_eq!(
        m(&settled, "events_acked_total"),
        m(&settled, "events_accepted_total"),
        "acked != accepted"
    );
}

/// Issue 11: a source far faster than the broker, into a healthy broker,
/// with the default flags and a small buffer. The default `--overflow
/// block` reads the source more slowly instead of dropping; the same burst
/// with `--overflow drop-oldest` drops, so the first half can fail.
#[test]
fn a_full_speed_burst_is_slowed_down_not_dropped_by_default() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let count = 30_000;
    let burst = |overflow: Option<&str>, session: &str| {
        let sb = Sandbox::new();
        let mut extra = vec!["--allowall", "--buffer", "500"];
        if let Some(o) = overflow {
            extra.extend(["--overflow", o]);
        }
        // A million a second: as fast as the generator can write.
        let (counter, _source, r, _) =
            flow(&sb, &broker, session, 1_000_000, count, "burst", &extra);
        let metrics = wait_metrics(&r, Duration::from_secs(60), |mt| {
            m(mt, "events_received_total") == count
                && m(mt, "events_buffered") == 0
                && m(mt, "events_inflight") == 0
        });
        let dropped = m(&metrics, "events_dropped_total{reason=\"overflow\"}");
        let _ = wait_for(Duration::from_secs(20), || {
            (counter.distinct() + dropped >= count).then_some(())
        });
        (counter.finish(Duration::from_secs(5)), dropped, r.log())
    };

    let (sum, dropped, log) = burst(None, "rel-burst-default");
    assert_eq!(dropped, 0, "the default dropped events:\n{log}");
    assert_eq!(sum["missing"], 0, "events lost: {sum}\n{log}");
    assert_eq!(sum["distinct"], count);

    let (sum, dropped, _) = burst(Some("drop-oldest"), "rel-burst-drop");
    assert!(
        dropped > 0,
        "drop-oldest kept up with a full-speed source: {sum}"
    );
    assert_eq!(
        sum["missing"], dropped,
        "what is missing is what was counted as dropped"
    );
}

/// Broker stopped gracefully and started again on the same port, with
/// persistence and a persistent subscriber session: nothing lost.
#[test]
fn broker_restarted_gracefully_with_persistence_loses_nothing() {
    let Some(mut broker) = Broker::start_with(true) else {
        return;
    };
    let sb = Sandbox::new();
    let count = 12_000;
    let (counter, _source, r, _) = flow(
        &sb,
        &broker,
        "rel-restart",
        2000,
        count,
        "rel",
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.stop();
    thread::sleep(Duration::from_secs(1));
    broker.restart();

    let sum = counter.finish(Duration::from_secs(60));
    let metrics = r.metrics();
    eprintln!("subscriber: {sum}\nrepeater: {metrics:?}");
    assert_eq!(
        sum["missing"],
        0,
        "events lost: {sum}\nrepeater log:\n{}\nbroker log:\n{}",
        r.log(),
        broker.log()
    );
    assert_eq!(sum["distinct"], count);
    assert!(
        m(&metrics, "sink_disconnects_total") >= 1,
        "the broker restart went unnoticed"
    );
    // Said once each, however many retries there were in between.
    let log = r.log();
    assert_eq!(
        log.matches("lost the connection to the broker").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("connected to the broker").count() - 1,
        1,
        "one 'again' line: {log}"
    );
}

/// Broker killed (SIGKILL) and restarted: every event the repeater accepted
/// is acknowledged by the broker in the end, by the repeater's own counters.
#[test]
fn broker_killed_every_accepted_event_is_acknowledged() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 12_000;
    let (counter, _source, r, _) = flow(
        &sb,
        &broker,
        "rel-kill",
        2000,
        count,
        "rel",
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.kill();
    thread::sleep(Duration::from_secs(1));
    broker.restart();

    let metrics = wait_metrics(&r, Duration::from_secs(60), |mt| {
        m(mt, "events_received_total") == count
            && m(mt, "events_acked_total") == m(mt, "events_accepted_total")
    });
    let sum = counter.finish(Duration::from_secs(5));
    eprintln!("repeater: {metrics:?}\nsubscriber (its session died with the broker): {sum}");
    let accepted = m(&metrics, "events_accepted_total");
    assert_eq!(
        m(&metrics, "events_received_total"),
        count,
        "log:\n{}",
        r.log()
    );
    assert_eq!(accepted, count, "every event was routed (--allowall)");
    assert_eq!(
        m(&metrics, "events_acked_total"),
        accepted,
        "accepted events never acknowledged; log:\n{}",
        r.log()
    );
    assert_eq!(m(&metrics, "events_buffered"), 0);
    assert_eq!(m(&metrics, "events_inflight"), 0);
    assert_eq!(m(&metrics, "events_dropped_total{reason=\"overflow\"}"), 0);
    assert_eq!(m(&metrics, "events_failed_total{reason=\"sink_error\"}"), 0);
    assert!(m(&metrics, "sink_disconnects_total") >= 1);
}

/// A buffer (1,000 events) much smaller than the outage (4 s at 2,000/s):
/// the subscriber's missing count equals the repeater's dropped counter, and
/// the repeater's memory does not grow with the outage.
#[test]
fn buffer_smaller_than_outage_missing_equals_dropped_and_memory_is_bounded() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 16_000;
    let (counter, _source, r, _) = flow(
        &sb,
        &broker,
        "rel-overflow",
        2000,
        count,
        "rel",
        &[
            "--allowall",
            "--buffer",
            "1000",
            "--overflow",
            "drop-oldest",
        ],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.pause();
    thread::sleep(Duration::from_secs(1));
    let rss_early = proc_status_kb(r.pid(), "VmRSS");
    thread::sleep(Duration::from_secs(3));
    let rss_late = proc_status_kb(r.pid(), "VmRSS");
    let during = r.metrics();
    broker.resume();

    // Every event was either delivered or dropped: wait for the repeater to
    // settle, then for the subscriber to have everything not dropped.
    let metrics = wait_metrics(&r, Duration::from_secs(60), |mt| {
        m(mt, "events_received_total") == count
            && m(mt, "events_buffered") == 0
            && m(mt, "events_inflight") == 0
    });
    let dropped = m(&metrics, "events_dropped_total{reason=\"overflow\"}");
    let _ = wait_for(Duration::from_secs(20), || {
        (counter.distinct() + dropped >= count).then_some(())
    });
    thread::sleep(Duration::from_millis(500));
    let sum = counter.finish(Duration::ZERO);
    let hwm = proc_status_kb(r.pid(), "VmHWM");
    eprintln!(
        "subscriber: {sum}\nrepeater: {metrics:?}\nduring the outage: {during:?}\nRSS {rss_early} kB after 1 s, {rss_late} kB after 4 s, peak {hwm} kB"
    );
    assert!(
        dropped > 0,
        "a 4 s outage at 2,000/s should overflow a 1,000-event buffer"
    );
    assert_eq!(
        sum["missing"].as_u64(),
        Some(dropped),
        "missing events ≠ dropped counter: {sum}\nlog:\n{}",
        r.log()
    );
    assert_eq!(m(&metrics, "events_acked_total") + dropped, count);
    // The buffer was full after half a second: 3 more seconds of outage must
    // not cost memory (1,000 events of ~150 bytes are ~150 kB).
    assert!(
        rss_late <= rss_early + 2048,
        "RSS grew from {rss_early} kB to {rss_late} kB while the buffer was full"
    );
    assert!(hwm < 64 * 1024, "peak RSS {hwm} kB is over the 64 MB bound");
}
