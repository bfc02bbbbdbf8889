//! The RabbitMQ Streams sink when the broker fails (issue 32, item 5),
//! against real nodes started here (tests/it/common/rabbitmq.rs): a
//! 3-node cluster with a stream of 3 replicas loses the node the repeater
//! is connected to (SIGKILL, mid-stream) and later gets it back, and a
//! single node frozen (SIGSTOP) for longer than `--ack-timeout` and the
//! stall check. Each time the stream, read back with `loadgen rmq-read`,
//! holds every event exactly once.

use std::time::{Duration, Instant};

use crate::common;
use common::rabbitmq::RabbitNode;
use common::repeater::Repeater;
use common::{free_port, Sandbox};
use serde_json::Value;

use super::nats::start_source;
use super::rabbitmq_stream::{assert_each_once, read_all, relay, wait_metric};
use super::stall::wait_health;

/// The `--sink` node the repeater connected to last (its log says
/// "connected to RabbitMQ at HOST:PORT"); its stream port.
fn connected_port(rep: &Repeater) -> Option<u16> {
    let log = rep.log();
    let at = log.rfind("connected to RabbitMQ at ")?;
    let rest = &log[at + "connected to RabbitMQ at ".len()..];
    let addr = rest.split_whitespace().next()?;
    addr.rsplit_once(':')?.1.parse().ok()
}

#[test]
fn a_cluster_node_killed_under_the_repeater_loses_and_duplicates_nothing() {
    let t0 = Instant::now();
    let Some(mut nodes) = RabbitNode::cluster(3) else {
        return;
    };
    eprintln!("3-node RabbitMQ cluster up in {:?}", t0.elapsed());
    // The helper's positive control: one cluster of three, not three nodes.
    let status = nodes[0]
        .ctl(&["cluster_status", "--formatter", "json"])
        .unwrap_or_else(|e| panic!("{e}"));
    let status: Value = serde_json::from_str(&status).expect("cluster_status JSON");
    let running = status["running_nodes"].as_array().map_or(0, Vec::len);
    assert_eq!(running, 3, "{status}");

    let sb = Sandbox::new();
    let n = 5000;
    let port = free_port();
    let ready = sb.path().join("go");
    let _src = start_source(port, 250, n, Some(&ready));
    let sinks: Vec<String> = nodes.iter().map(RabbitNode::url).collect();
    let rep = relay(&sb, port, &sinks, &["--rabbitmq-replicas", "3"]);
    wait_metric(&rep, "source_connected", 1, Duration::from_secs(20));
    std::fs::write(&ready, "go").expect("ready file");
    wait_metric(&rep, "events_acked_total", 1000, Duration::from_secs(60));
    let members = nodes[1]
        .ctl(&[
            "list_queues",
            "name",
            "type",
            "members",
            "--formatter",
            "json",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        members.matches("@localhost").count(),
        3,
        "bench/seq is not on 3 nodes: {members}"
    );

    // The node the repeater writes through (usually the stream's leader
    // too: RabbitMQ places a new stream's leader on the client's node).
    let on = connected_port(&rep).unwrap_or_else(|| panic!("not connected: {}", rep.log()));
    let victim = nodes
        .iter()
        .position(|x| x.stream_port == on)
        .expect("connected to one of the nodes");
    let leader = nodes[1]
        .ctl(&["list_queues", "name", "leader", "--formatter", "json"])
        .unwrap_or_default();
    eprintln!(
        "killing {} (the stream's leader: {})",
        nodes[victim].node,
        leader.contains(&nodes[victim].node)
    );
    let before = rep.metric("events_acked_total") as u64;
    let killed = Instant::now();
    nodes[victim].kill();
    // Failover: events are confirmed through another node while it is down.
    // (A few were in flight at 250/s; 50 more are confirmed after the kill.)
    wait_metric(
        &rep,
        "events_acked_total",
        before + 50,
        Duration::from_secs(60),
    );
    eprintln!("50 more confirmed {:?} after the kill", killed.elapsed());
    wait_metric(
        &rep,
        "events_acked_total",
        before + 1000,
        Duration::from_secs(60),
    );
    let now_on = connected_port(&rep).unwrap_or_default();
    assert_ne!(now_on, on, "still on the killed node: {}", rep.log());
    nodes[victim].restart();
    wait_metric(&rep, "events_acked_total", n, Duration::from_secs(120));
    let survivor = &nodes[(victim + 1) % 3];
    let v = read_all(survivor, n);
    assert_each_once(&v, n, &rep.log());
    // The restarted node caught up: it holds the same, once each.
    assert_each_once(&read_all(&nodes[victim], n), n, &rep.log());
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
fn a_node_frozen_past_the_ack_timeout_is_reported_and_loses_and_duplicates_nothing() {
    let Some(node) = RabbitNode::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 6000;
    let port = free_port();
    let _src = start_source(port, 200, n, None);
    let rep = relay(&sb, port, &[node.url()], &[]);
    wait_metric(&rep, "events_acked_total", 500, Duration::from_secs(30));
    // The positive control of "stalled" below.
    wait_health(&rep, Duration::from_secs(5), "ok", false);
    node.pause();
    // 3 s --ack-timeout, 10 s without a confirmation: stalled.
    let h = wait_health(&rep, Duration::from_secs(30), "degraded", true);
    let problem = h["sink"]["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("acknowledged none"), "{h}");
    let frozen_at = rep.metric("events_acked_total") as u64;
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(rep.metric("events_acked_total") as u64, frozen_at);
    node.resume();
    wait_health(&rep, Duration::from_secs(60), "ok", false);
    wait_metric(&rep, "events_acked_total", n, Duration::from_secs(120));
    let v = read_all(&node, n);
    assert_each_once(&v, n, &rep.log());
    let log = rep.log();
    assert!(log.contains("--ack-timeout"), "{log}");
    assert!(
        (rep.metric("events_republished_total") as u64) > 0,
        "nothing was sent again after the pause: {log}"
    );
    assert_eq!((rep.metric("sink_stalls_total") as u64), 1);
}
