//! With a real mosquitto: mapped, prefix and --allowall routes, routes
//! changed while events flow, a buffer smaller than the outage, the source
//! restarted, and the drain at SIGTERM.

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::time::{Duration, Instant};

use common::broker::{Broker, Subscriber};
use common::{wait_for, Sandbox};
use serde_json::{json, Value};

use super::{call, event_time, repeater, seed_routes, SECS};

/// A mosquitto and a subscriber to `topic` on it; `None` (after one line
/// saying why) where mosquitto or its clients are not installed.
fn broker_and_subscriber(topic: &str) -> Option<(Broker, Subscriber)> {
    let broker = Broker::start()?;
    let sub = Subscriber::start(&broker, topic, None)?;
    Some((broker, sub))
}

/// The `data` sequence numbers of test/seq events in `messages` on `topic`.
fn seqs(messages: &[(String, String)], topic: &str) -> Vec<u64> {
    messages
        .iter()
        .filter(|(t, _)| t == topic)
        .map(|(_, p)| {
            let v: Value = serde_json::from_str(p).unwrap_or_else(|e| panic!("payload {p:?}: {e}"));
            assert_eq!(v["topic"], "test/seq", "{p}");
            v["data"].as_u64().unwrap()
        })
        .collect()
}

/// (missing, duplicated, out of order) over the range first..=last.
fn audit(seqs: &[u64], last: u64) -> (Vec<u64>, usize, usize) {
    let Some(&first) = seqs.iter().min() else {
        return (vec![], 0, 0);
    };
    let set: BTreeSet<u64> = seqs.iter().copied().collect();
    let missing = (first..=last).filter(|n| !set.contains(n)).collect();
    let dups = seqs.len() - set.len();
    let disorder = seqs.windows(2).filter(|w| w[1] < w[0]).count();
    (missing, dups, disorder)
}

#[test]
fn events_flow_from_event_time_into_mosquitto_under_mapped_topics() {
    let Some((broker, sub)) = broker_and_subscriber("#") else {
        return;
    };
    let sb = Sandbox::new();
    let _src = event_time(&sb, &["--rate", "100"]);
    let rep = repeater(&sb, &["--sink", &broker.url()]);
    let (s, _) = call(
        &rep,
        "POST",
        "/events",
        Some(
            r#"[{"sourcetopic":"timer/msec/100","sinktopic":"/time/100ms"},{"sourcetopic":"test/seq","sinktopic":"mapped/seq"}]"#,
        ),
    );
    assert_eq!(s, 201);
    let m = sub.wait(SECS(15), |m| {
        m.iter().filter(|(t, _)| t == "/time/100ms").count() >= 5
            && m.iter().filter(|(t, _)| t == "mapped/seq").count() >= 100
    });
    let timers: Vec<&(String, String)> = m.iter().filter(|(t, _)| t == "/time/100ms").collect();
    assert!(timers.len() >= 5, "timer events: {m:?}\n{}", rep.log());
    let v: Value = serde_json::from_str(&timers[0].1).unwrap();
    assert_eq!(v["topic"], "timer/msec/100");
    assert_eq!(v["data"], 100_000_000);
    assert!(
        m.iter()
            .all(|(t, _)| t == "/time/100ms" || t == "mapped/seq"),
        "unrouted topics leaked"
    );
    let s = seqs(&m, "mapped/seq");
    let (missing, dups, disorder) = audit(&s, *s.iter().max().unwrap());
    assert_eq!((missing.len(), dups, disorder), (0, 0, 0), "{missing:?}");
    assert!((rep.metric("events_acked_total") as u64) > 0);
    assert_eq!((rep.metric("sink_connected") as u64), 1);
    assert_eq!((rep.metric("source_connected") as u64), 1);
}

#[test]
fn allowall_and_prefix_routes_with_suffix() {
    let Some((broker, sub)) = broker_and_subscriber("#") else {
        return;
    };
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"timer/msec/","sinktopic":"site1/{suffix}"}]),
    );
    let _src = event_time(&sb, &["--rate", "20"]);
    let rep = repeater(&sb, &["--sink", &broker.url(), "--allowall"]);
    let m = sub.wait(SECS(15), |m| {
        let has = |t: &str| m.iter().any(|(x, _)| x == t);
        has("site1/100") && has("site1/500") && has("test/seq") && has("timer/sec/1")
    });
    let topics: BTreeSet<&str> = m.iter().map(|(t, _)| t.as_str()).collect();
    for t in ["site1/100", "site1/500", "test/seq", "timer/sec/1"] {
        assert!(
            topics.contains(t),
            "{t} missing from {topics:?}\n{}",
            rep.log()
        );
    }
    // The prefix route wins over --allowall: no timer/msec/* under its own name.
    assert!(
        !topics.iter().any(|t| t.starts_with("timer/msec/")),
        "{topics:?}"
    );
    for (t, p) in &m {
        let v: Value = serde_json::from_str(p).unwrap();
        if let Some(rest) = t.strip_prefix("site1/") {
            assert_eq!(v["topic"], format!("timer/msec/{rest}"));
        } else {
            assert_eq!(v["topic"], t.as_str());
        }
    }
}

#[test]
fn routes_changed_and_removed_while_events_flow() {
    let Some((broker, sub)) = broker_and_subscriber("#") else {
        return;
    };
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"test/seq","sinktopic":"a/seq"}]),
    );
    let _src = event_time(&sb, &["--rate", "500"]);
    let rep = repeater(&sb, &["--sink", &broker.url()]);
    sub.wait(SECS(15), |m| seqs(m, "a/seq").len() >= 200);
    assert_eq!(
        call(
            &rep,
            "PUT",
            "/events/test/seq",
            Some(r#"{"sinktopic":"b/seq"}"#)
        )
        .0,
        200
    );
    sub.wait(SECS(15), |m| seqs(m, "b/seq").len() >= 200);
    assert_eq!(call(&rep, "DELETE", "/events/test/seq", None).0, 200);
    // Let in-flight events land, then nothing more may arrive.
    std::thread::sleep(Duration::from_millis(700));
    let settled = sub.messages().len();
    let unrouted = rep.metric("events_unrouted_total") as u64;
    std::thread::sleep(Duration::from_millis(700));
    let m = sub.messages();
    assert_eq!(
        m.len(),
        settled,
        "events still published after the route was removed"
    );
    // The events went on arriving meanwhile, and a route added again
    // reaches this subscriber: the silence was the removed route's.
    assert!(
        (rep.metric("events_unrouted_total") as u64) > unrouted,
        "no events arrived while the route was gone: {}",
        rep.log()
    );
    let again = r#"[{"sourcetopic":"test/seq","sinktopic":"c/seq"}]"#;
    assert_eq!(call(&rep, "POST", "/events", Some(again)).0, 201);
    let seen = sub.wait(SECS(15), |m| !seqs(m, "c/seq").is_empty());
    assert!(!seqs(&seen, "c/seq").is_empty(), "{}", rep.log());
    let a = seqs(&m, "a/seq");
    let b = seqs(&m, "b/seq");
    assert!(a.len() >= 200 && b.len() >= 200, "{} {}", a.len(), b.len());
    // The switch happened between two events: every a < every b, no gap.
    let (amax, bmin) = (*a.iter().max().unwrap(), *b.iter().min().unwrap());
    assert_eq!(
        bmin,
        amax + 1,
        "gap or overlap at the switch: a ends {amax}, b starts {bmin}"
    );
    let mut all = a.clone();
    all.extend(&b);
    let (missing, dups, _) = audit(&all, *b.iter().max().unwrap());
    assert_eq!((missing.len(), dups), (0, 0), "{missing:?}");
    assert!((rep.metric("events_unrouted_total") as u64) > 0);
}

#[test]
fn buffer_smaller_than_the_outage_drops_are_counted_exactly() {
    let Some((mut broker, sub)) = broker_and_subscriber("out/#") else {
        return;
    };
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"test/seq","sinktopic":"out/seq"}]),
    );
    let total = 6_000u64;
    let mut rep = repeater(
        &sb,
        &[
            "--sink",
            &broker.url(),
            "--buffer",
            "500",
            "--inflight",
            "100",
            "--overflow",
            "drop-oldest",
        ],
    );
    let _src = event_time(&sb, &["--rate", "1000", "--count", &total.to_string()]);
    sub.wait(SECS(15), |m| m.len() >= 500);
    broker.pause();
    std::thread::sleep(SECS(3));
    let rss = rss_kib(rep.pid() as u32);
    broker.resume();
    let m = sub.wait(SECS(40), |m| {
        seqs(m, "out/seq").iter().max() == Some(&total)
    });
    let s = seqs(&m, "out/seq");
    let first = *s.iter().min().unwrap();
    let (missing, dups, _) = audit(&s, total);
    let dropped = rep.metric("events_dropped_total{reason=\"overflow\"}") as u64;
    eprintln!("small buffer: {} received from {first}, {} missing, {dups} dup, {dropped} dropped, RSS {rss} KiB", s.len(), missing.len());
    assert!(dropped > 0, "the outage should have overflowed the buffer");
    assert_eq!(
        missing.len() as u64,
        dropped,
        "missing events must equal the dropped counter"
    );
    assert!(rss < 64 * 1024, "RSS {rss} KiB during the outage");
    assert_eq!(rep.signal(libc::SIGTERM).code(), Some(0));
}

fn rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

#[test]
fn source_stopped_and_started_the_repeater_resumes() {
    let Some((broker, sub)) = broker_and_subscriber("out/#") else {
        return;
    };
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"timer/msec/100","sinktopic":"out/100ms"}]),
    );
    let mut src = event_time(&sb, &[]);
    let rep = repeater(&sb, &["--sink", &broker.url()]);
    sub.wait(SECS(15), |m| m.len() >= 5);
    assert_eq!(src.signal(libc::SIGTERM).code(), Some(0));
    let disconnected = wait_for(SECS(10), || {
        ((rep.metric("source_connected") as u64) == 0).then_some(())
    });
    assert!(
        disconnected.is_some(),
        "source_connected stays 1: {}",
        rep.log()
    );
    let before = sub.messages().len();
    let _src = event_time(&sb, &[]);
    let m = sub.wait(SECS(15), |m| m.len() >= before + 5);
    assert!(
        m.len() >= before + 5,
        "no events after the source came back\n{}",
        rep.log()
    );
    let log = rep.log();
    assert_eq!(log.matches("lost the event source").count(), 1, "{log}");
    assert_eq!(log.matches("is back after").count(), 1, "{log}");
    assert!(
        !log.contains("cannot subscribe"),
        "retries must not be logged one by one: {log}"
    );
}

#[test]
fn sigterm_drains_and_reports_undelivered_events() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"test/seq","sinktopic":"out/seq"}]),
    );
    let mut rep = repeater(&sb, &["--sink", &broker.url(), "--drain-timeout", "1s"]);
    let _src = event_time(&sb, &["--rate", "200"]);
    let flowing = wait_for(SECS(15), || {
        ((rep.metric("events_acked_total") as u64) >= 100).then_some(())
    });
    assert!(
        flowing.is_some(),
        "100 events never acknowledged: {}",
        rep.log()
    );
    broker.pause();
    // No acknowledgement comes back from a paused broker: once one event is
    // buffered or in flight, the drain has something it cannot deliver.
    let pending = wait_for(SECS(10), || {
        ((rep.metric("events_buffered") as u64) + (rep.metric("events_inflight") as u64) > 0)
            .then_some(())
    });
    assert!(pending.is_some(), "nothing pending: {}", rep.log());
    // What was pending may still be acknowledged from the socket's buffer
    // (seen once under load: "all 105 … delivered"); events that arrive
    // after the pause never are. 0.3 s at 200/s is about 60 of them.
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    assert_eq!(rep.signal(libc::SIGTERM).code(), Some(0));
    assert!(t.elapsed() < SECS(5), "drain took {:?}", t.elapsed());
    let log = rep.log();
    assert!(log.contains("were not delivered"), "{log}");
    assert!(!rep.socket().exists());
}
