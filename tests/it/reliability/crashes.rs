//! The repeater (or event-time) killed with SIGKILL while events flow and
//! started again: routes kept, the checkpoint bounds the duplicates, events
//! the source no longer holds are counted as missed (issue 11).

use crate::common;

use std::thread;
use std::time::Duration;

use common::broker::Broker;
use common::event_time::EventTime;
use common::repeater::Repeater;
use common::{free_port, Sandbox};
use serde_json::Value;

use super::{flow, m, start_loadgen_source, start_repeater, wait_metrics, Counter};

/// The repeater killed with SIGKILL while events flow, then started again:
/// its routes are intact and events flow again under the mapped topic (and
/// nowhere else).
#[test]
fn repeater_kill9_and_restart_keeps_routes_and_relays_under_them() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let _source = start_loadgen_source(port, 1000, 60_000);
    let mapped = Counter::start(&broker, "site1/#", "rel-mapped", 0, true);
    let unmapped = Counter::start(&broker, "bench/#", "rel-unmapped", 0, true);
    let mut r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &[],
    );
    let routes = r#"[{"sourcetopic":"bench/","sinktopic":"site1/{suffix}"},{"sourcetopic":"other/x","sinktopic":"elsewhere"}]"#;
    let (status, body) = r.send_json("POST", "/events", routes);
    assert!(
        status == 200 || status == 201,
        "POST /events: {status} {body}"
    );
    let (_, listed_before) = r.get("/events");
    mapped.wait_distinct(500, Duration::from_secs(20));

    r.kill9();
    let seen_at_kill = mapped.distinct();
    r.restart();

    let (status, listed_after) = r.get("/events");
    assert_eq!(status, 200);
    let before: Value = serde_json::from_str(&listed_before).expect("JSON routes");
    let after: Value = serde_json::from_str(&listed_after).expect("JSON routes");
    assert_eq!(after, before, "routes changed across kill -9");
    assert_eq!(after.as_array().map(Vec::len), Some(2), "{after}");
    mapped.wait_distinct(seen_at_kill + 1000, Duration::from_secs(20));

    let mapped_sum = mapped.finish(Duration::ZERO);
    let unmapped_sum = unmapped.finish(Duration::ZERO);
    eprintln!("site1/#: {mapped_sum}\nbench/#: {unmapped_sum}");
    assert_eq!(
        unmapped_sum["received"], 0,
        "events published under their own topic"
    );
    assert_eq!(unmapped_sum["warmup"], 0);
}

/// Duplicates one SIGKILL may cause, as docs/reliability.md states it: the
/// events in the buffer (`--buffer` counts queued and in flight) plus those
/// completed since the last checkpoint write (100 ms at `rate`), with the
/// write allowed to run late by up to 400 ms on a loaded machine.
fn duplicate_bound(buffer: u64, rate: u64) -> u64 {
    buffer + rate / 2
}

/// Issue 11: the repeater SIGKILLed five times while a numbered source
/// streams at 1,000 events/s at QoS 1: every event reaches a persistent
/// subscriber (the restarted repeater resumes from its checkpoint and the
/// source replays), and duplicates stay within the documented bound.
#[test]
fn repeater_sigkilled_five_times_at_1000_per_s_loses_nothing() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let (rate, count, buffer, kills) = (1000, 14_000, 1000, 5);
    let (counter, _source, mut r, _) = flow(
        &sb,
        &broker,
        "crash-kill",
        rate,
        count,
        "crash",
        &["--allowall", "--buffer", &buffer.to_string()],
    );
    for kill in 1..=kills {
        counter.wait_distinct(kill * 2000, Duration::from_secs(60));
        r.kill9();
        r.restart();
    }

    let sum = counter.finish(Duration::from_secs(90));
    eprintln!("subscriber: {sum}");
    let log = r.log();
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{log}");
    assert_eq!(sum["distinct"], count);
    let bound = kills * duplicate_bound(buffer, rate);
    assert!(
        sum["duplicates"].as_u64().unwrap() <= bound,
        "{} duplicates, over the bound of {bound}: {sum}",
        sum["duplicates"]
    );
    assert_eq!(
        log.matches("resuming after event id").count() as u64,
        kills,
        "every restart resumes from the checkpoint: {log}"
    );
}

/// Issue 11: the same with the broker down during one of the kills: the
/// events buffered when the repeater dies were never acknowledged, so the
/// checkpoint is before them and the source replays them after the restart.
#[test]
fn repeater_sigkilled_while_the_broker_is_down_loses_nothing() {
    let Some(mut broker) = Broker::start_with(true) else {
        return;
    };
    let sb = Sandbox::new();
    let (rate, count, buffer, kills) = (1000, 13_000, 1000, 5);
    let (counter, _source, mut r, _) = flow(
        &sb,
        &broker,
        "crash-broker",
        rate,
        count,
        "crash",
        &["--allowall", "--buffer", &buffer.to_string()],
    );
    let mut held_at_kill = 0;
    for kill in 1..=kills {
        counter.wait_distinct(kill * 2000, Duration::from_secs(60));
        if kill == 3 {
            broker.stop();
            // The repeater fills its buffer with events it cannot deliver.
            let metrics = wait_metrics(&r, Duration::from_secs(10), |m| {
                m.get("app_event_repeater_events_buffered")
                    .copied()
                    .unwrap_or(0.0)
                    >= 500.0
            });
            held_at_kill = m(&metrics, "events_buffered") + m(&metrics, "events_inflight");
        }
        r.kill9();
        r.restart();
        if kill == 3 {
            thread::sleep(Duration::from_secs(1));
            broker.restart();
        }
    }

    let sum = counter.finish(Duration::from_secs(90));
    eprintln!("subscriber: {sum}; held at the kill with the broker down: {held_at_kill}");
    let log = r.log();
    assert!(
        held_at_kill >= 500,
        "the buffer did not fill: {held_at_kill}"
    );
    assert_eq!(
        sum["missing"],
        0,
        "events lost: {sum}\nlog:\n{log}\nbroker log:\n{}",
        broker.log()
    );
    assert_eq!(sum["distinct"], count);
    let bound = kills * duplicate_bound(buffer, rate);
    assert!(
        sum["duplicates"].as_u64().unwrap() <= bound,
        "{} duplicates, over the bound of {bound}: {sum}",
        sum["duplicates"]
    );
}

/// Issue 11: app-event-time SIGKILLed and started again: its ids keep
/// increasing, the repeater (resuming with an id from the earlier run) gets
/// the new run's events from its first one, and keeps relaying.
#[test]
fn event_time_sigkilled_and_restarted_the_repeater_keeps_relaying() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = common::broker::Subscriber::start(&broker, "test/seq", None) else {
        return;
    };
    let sb = Sandbox::new();
    let args = ["--name", "crash-time", "--rate", "1000"];
    let mut source = EventTime::start(&sb, &args);
    let r = start_repeater(
        &sb,
        "crash",
        &source.socket().to_string_lossy(),
        &broker.url(),
        &["--allowall"],
    );
    let numbers = |msgs: &[(String, String)]| -> Vec<u64> {
        msgs.iter()
            .filter_map(|(_, p)| serde_json::from_str::<Value>(p).ok())
            .filter_map(|v| v["data"].as_u64())
            .collect()
    };
    // The numbers after the last step down: the new run, which numbers its
    // test stream from 1 again (events of the old run may still arrive
    // after the kill, so the count at the kill does not mark it).
    let new_run = |m: &[(String, String)]| -> Vec<u64> {
        let n = numbers(m);
        let start = (1..n.len())
            .rev()
            .find(|&i| n[i] < n[i - 1])
            .unwrap_or(n.len());
        n[start..].iter().copied().filter(|&x| x <= 2000).collect()
    };
    sub.wait(Duration::from_secs(20), |m| numbers(m).len() >= 1000);
    source.signal(libc::SIGKILL);
    let _source = EventTime::start(&sb, &args);
    let got = sub.wait(Duration::from_secs(30), |m| new_run(m).len() >= 2000);
    let new_run = new_run(&got);
    let log = r.log();
    assert_eq!(
        new_run,
        (1..=2000).collect::<Vec<u64>>(),
        "the new run's events, in order, from its first: log:\n{log}"
    );
    let metrics = r.metrics();
    assert!(m(&metrics, "source_disconnects_total") >= 1);
    assert_eq!(m(&metrics, "source_connected"), 1);
    assert!(
        log.contains("from an earlier run"),
        "the source's notice is logged: {log}"
    );
}

/// Issue 11: a repeater stopped longer than the source's history resumes
/// from its checkpoint; the source says which events it no longer holds,
/// and the repeater counts them in `events_missed_total` (exactly that
/// range) and warns once: a loss upstream is never silent.
#[test]
fn events_the_source_no_longer_holds_are_counted_as_missed() {
    let sb = Sandbox::new();
    let source = EventTime::start(
        &sb,
        &["--name", "miss-time", "--rate", "1000", "--history", "100"],
    );
    let socket = source.socket().to_string_lossy().into_owned();
    let mut r = Repeater::builder(&sb, "miss")
        .source(&socket)
        .args(["--sinkprotocol", "stderr", "--allowall", "--log", "3"])
        .start();
    let checkpoint = sb.data_dir().join("event-repeater/miss.checkpoint");
    let ok = wait_metrics(&r, Duration::from_secs(20), |m| {
        m.get("app_event_repeater_events_acked_total")
            .copied()
            .unwrap_or(0.0)
            >= 500.0
    });
    assert!(m(&ok, "events_acked_total") >= 500, "{}", r.log());
    assert_eq!(r.signal(libc::SIGTERM).code(), Some(0));
    let text = std::fs::read_to_string(&checkpoint).expect("a checkpoint after a clean stop");
    let saved: u64 = serde_json::from_str::<Value>(&text).unwrap()["last_event_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // 1.5 s at 1,000/s: far more than the 100 events the source holds.
    thread::sleep(Duration::from_millis(1500));
    r.restart();
    let metrics = wait_metrics(&r, Duration::from_secs(20), |m| {
        m.get("app_event_repeater_events_missed_total")
            .copied()
            .unwrap_or(0.0)
            > 0.0
    });
    let log = r.log();
    let missed = m(&metrics, "events_missed_total");
    assert!(missed >= 1000, "missed {missed}; log:\n{log}");
    let notice = log
        .lines()
        .find(|l| l.contains("skipped events for this repeater"))
        .unwrap_or_else(|| panic!("no warning: {log}"));
    // The warning names the range, which starts right after the checkpoint
    // and is exactly as long as the count.
    assert!(
        notice.contains(&format!("events {}..", saved + 1)),
        "{notice}"
    );
    let to: u64 = notice
        .split(&format!("events {}..", saved + 1))
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{notice}"));
    assert_eq!(missed, to - saved, "{notice}");
    assert_eq!(log.matches("skipped events for this repeater").count(), 1);
    assert!(
        log.contains(&format!("resuming after event id {saved}")),
        "{log}"
    );
}
