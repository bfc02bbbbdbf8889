//! `--sinkprotocol rabbitmq-stream` (issue 32, item 4) against real
//! RabbitMQ nodes started here (tests/it/common/rabbitmq.rs): events reach
//! their stream in order, a stream name RabbitMQ reserves is refused and
//! counted without holding anything up, a stream made beforehand with other
//! arguments is used as it is, a repeater SIGKILLed again and
//! again while events flow and a node killed and restarted lose nothing and
//! store nothing twice, and two repeaters of one source store each event
//! once.
//!
//! What a stream holds is read back with the same client library
//! (`loadgen rmq-read`, bench/loadgen), which counts the numbered events:
//! missing, duplicated, out of order.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::rabbitmq::RabbitNode;
use common::repeater::Repeater;
use common::{free_port, wait_for, Sandbox};
use serde_json::{json, Value};

use super::nats::{loadgen, start_source};

/// The stream `loadgen sse` events go to: their topic, verbatim.
const STREAM: &str = "bench/seq";

/// Reads `stream` back: the `loadgen rmq-read` summary, or its error.
pub(crate) fn try_read(node: &RabbitNode, stream: &str, expect: u64) -> Result<Value, String> {
    let out = Command::new(loadgen())
        .args(["rmq-read", "--port", &node.stream_port.to_string()])
        .args(["--stream", stream, "--expect", &expect.to_string()])
        .args(["--timeout", "60"])
        .output()
        .expect("run loadgen rmq-read");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("rmq-read printed no JSON: {e}"))
}

/// Reads until the `n` events are all there (or 90 s passed): the last
/// summary.
pub(crate) fn read_all(node: &RabbitNode, n: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        match try_read(node, STREAM, n) {
            Ok(v) if v["missing"] == 0 || Instant::now() > deadline => return v,
            Err(e) if Instant::now() > deadline => panic!("loadgen rmq-read failed: {e}"),
            _ => std::thread::sleep(Duration::from_secs(1)),
        }
    }
}

pub(crate) fn args(source: &str, sinks: &[String]) -> Vec<String> {
    let mut a: Vec<String> = [
        "--source",
        source,
        "--sinkprotocol",
        "rabbitmq-stream",
        "--overflow",
        "block",
        "--ack-timeout",
        "3s",
        "--log",
        "3",
    ]
    .map(String::from)
    .to_vec();
    for s in sinks {
        a.extend(["--sink".to_string(), s.clone()]);
    }
    a
}

/// The stream's read-back `v` holds each of 1..=`n` once, in order; `log`
/// (the repeater's) shown when not.
pub(crate) fn assert_each_once(v: &Value, n: u64, log: &str) {
    assert_eq!(v["missing"], 0, "{v}\nlog:\n{log}");
    assert_eq!(v["duplicates"], 0, "{v}\nlog:\n{log}");
    assert_eq!(v["out_of_order"], 0, "{v}");
    assert_eq!(v["distinct"], n, "{v}");
}

/// A repeater named `event-repeater` from the source on 127.0.0.1:`port`
/// into `sinks`, every topic relayed, with `extra` flags.
pub(crate) fn relay<'a>(
    sb: &'a Sandbox,
    port: u16,
    sinks: &[String],
    extra: &[&str],
) -> Repeater<'a> {
    Repeater::builder(sb, "event-repeater")
        .args(args(&format!("http://127.0.0.1:{port}"), sinks))
        .args(["--allowall"])
        .args(extra)
        .start()
}

pub(crate) fn wait_metric(rep: &Repeater, name: &str, n: u64, within: Duration) {
    let done = wait_for(within, || (rep.metric(name) as u64 >= n).then_some(()));
    assert!(
        done.is_some(),
        "{name} reached {} of {n} within {within:?}; log:\n{}",
        rep.metric(name) as u64,
        rep.log()
    );
}

#[test]
fn events_reach_their_stream_in_order_and_a_reserved_name_is_refused_and_counted() {
    let Some(node) = RabbitNode::start() else {
        return;
    };
    eprintln!("RabbitMQ node up in {:?}", node.started_in);
    let sb = Sandbox::new();
    let n = 2000;
    let port = free_port();
    let ready = sb.path().join("go");
    let _src = start_source(port, 1000, n, Some(&ready));
    let source = format!("http://127.0.0.1:{port}");
    let good = Repeater::builder(&sb, "good")
        .args(args(&source, &[node.url()]))
        .args(["--allowall"])
        .start();
    // The other one's only route goes to a name RabbitMQ keeps for itself.
    let dir = sb.data_dir().join("event-repeater");
    std::fs::create_dir_all(&dir).unwrap();
    let routes = json!({"version":1,"routes":[{"sourcetopic":"bench/seq","sinktopic":"amq.seq"}]});
    std::fs::write(dir.join("reserved.routes.json"), routes.to_string()).unwrap();
    let reserved = Repeater::builder(&sb, "reserved")
        .args(args(&source, &[node.url()]))
        .start();
    // A third one's route goes to a stream made beforehand with other
    // arguments than the repeater gives one it creates (no max-age): it is
    // used as it is (RabbitMQ answers the create "precondition failed").
    let made = Command::new(loadgen())
        .args(["rmq-publish", "--port", &node.stream_port.to_string()])
        .args([
            "--stream",
            "made/elsewhere",
            "--count",
            "0",
            "--warmup",
            "0",
        ])
        .output()
        .expect("run loadgen rmq-publish");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let routes =
        json!({"version":1,"routes":[{"sourcetopic":"bench/seq","sinktopic":"made/elsewhere"}]});
    std::fs::write(dir.join("existing.routes.json"), routes.to_string()).unwrap();
    let existing = Repeater::builder(&sb, "existing")
        .args(args(&source, &[node.url()]))
        .start();
    for r in [&good, &reserved, &existing] {
        wait_metric(r, "source_connected", 1, Duration::from_secs(20));
    }
    std::fs::write(&ready, "go").unwrap();
    wait_metric(&good, "events_acked_total", n, Duration::from_secs(60));
    let v = read_all(&node, n);
    assert_each_once(&v, n, &good.log());
    assert!(
        good.log().contains("created the stream bench/seq"),
        "{}",
        good.log()
    );
    // Every event for amq.seq refused and counted, none held back.
    wait_metric(
        &reserved,
        "events_failed_total{reason=\"invalid_topic\"}",
        n,
        Duration::from_secs(30),
    );
    assert_eq!((reserved.metric("events_acked_total") as u64), 0);
    assert_eq!(
        (reserved.metric("sink_stalled") as u64),
        0,
        "{}",
        reserved.log()
    );
    assert!(
        try_read(&node, "amq.seq", 0).is_err(),
        "a stream amq.seq exists"
    );
    // The stream made elsewhere took every event, and nothing was refused.
    wait_metric(&existing, "events_acked_total", n, Duration::from_secs(60));
    let v = try_read(&node, "made/elsewhere", n).expect("read made/elsewhere");
    assert_each_once(&v, n, &existing.log());
    assert_eq!(
        existing.metric("events_failed_total{reason=\"invalid_topic\"}"),
        0.0,
        "{}",
        existing.log()
    );
    assert!(
        existing.log().contains("exists with other arguments"),
        "{}",
        existing.log()
    );
}

#[test]
fn a_repeater_sigkilled_while_events_flow_loses_and_duplicates_nothing() {
    let Some(node) = RabbitNode::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 6000;
    let port = free_port();
    let _src = start_source(port, 500, n, None);
    let mut rep = relay(&sb, port, &[node.url()], &[]);
    let mut duplicates = 0;
    for _ in 0..5 {
        wait_metric(&rep, "events_acked_total", 300, Duration::from_secs(30));
        duplicates += rep.metric("events_duplicate_total") as u64;
        rep.kill9();
        rep.restart();
    }
    let v = read_all(&node, n);
    duplicates += rep.metric("events_duplicate_total") as u64;
    assert_each_once(&v, n, &rep.log());
    // The restarts did send again events the stream held (from before the
    // checkpoint caught up), and the stream kept one copy of each.
    assert!(duplicates > 0, "no event was sent twice: {}", rep.log());
}

#[test]
fn a_node_killed_and_restarted_loses_and_duplicates_nothing() {
    let Some(mut node) = RabbitNode::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 4000;
    let port = free_port();
    let _src = start_source(port, 400, n, None);
    let rep = relay(&sb, port, &[node.url()], &[]);
    wait_metric(&rep, "events_acked_total", 500, Duration::from_secs(30));
    node.kill();
    let down = wait_for(Duration::from_secs(15), || {
        ((rep.metric("sink_connected") as u64) == 0).then_some(())
    });
    assert!(down.is_some(), "sink_connected stays 1: {}", rep.log());
    node.restart();
    wait_metric(&rep, "events_acked_total", n, Duration::from_secs(120));
    let v = read_all(&node, n);
    assert_eq!(v["missing"], 0, "{v}\nlog:\n{}", rep.log());
    assert_eq!(v["duplicates"], 0, "{v}");
    assert_eq!(v["distinct"], n, "{v}");
    assert!(
        (rep.metric("sink_disconnects_total") as u64) >= 1,
        "{}",
        rep.log()
    );
    assert_eq!(
        (rep.metric("events_dropped_total{reason=\"overflow\"}") as u64),
        0
    );
}

#[test]
fn two_repeaters_of_one_source_store_each_event_once() {
    let Some(node) = RabbitNode::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 3000;
    let port = free_port();
    let ready = sb.path().join("go");
    let _src = start_source(port, 300, n, Some(&ready));
    let source = format!("http://127.0.0.1:{port}");
    let start = |name: &str| {
        Repeater::builder(&sb, name)
            .args(args(&source, &[node.url()]))
            .args(["--allowall", "--source-id", "shared"])
            .start()
    };
    let mut a = start("a");
    let b = start("b");
    for r in [&a, &b] {
        wait_metric(r, "source_connected", 1, Duration::from_secs(20));
    }
    std::fs::write(&ready, "go").unwrap();
    // Half-way: A dies and never comes back.
    wait_metric(&a, "events_acked_total", n / 2, Duration::from_secs(40));
    let by_a = a.metric("events_acked_total") as u64;
    a.kill9();
    wait_metric(&b, "events_acked_total", n, Duration::from_secs(60));
    let v = read_all(&node, n);
    // Both sent the first half; the stream holds it once.
    assert!(by_a + (b.metric("events_acked_total") as u64) >= n + n / 2);
    assert_eq!(v["missing"], 0, "{v}\nB's log:\n{}", b.log());
    assert_eq!(v["duplicates"], 0, "{v}");
    assert_eq!(v["distinct"], n, "{v}");
}
