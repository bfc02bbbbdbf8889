//! Issue 30, item 5 (the sink side): events wait and the sink acknowledges
//! none for 10 s -> `/healthz` `degraded` with the reason in
//! `sink.problem`, `sink.stalled`, `sink_stalled` 1 and one warning; the
//! first acknowledgement after -> `ok` again. Against a JetStream that
//! refuses to create the stream (its subjects overlap a stream made
//! before) and a mosquitto frozen with SIGSTOP.

use crate::common;

use std::time::Duration;

use common::broker::Broker;
use common::nats::NatsServer;
use common::repeater::{status_rows, Repeater};
use common::{free_port, wait_for, Sandbox};
use serde_json::{json, Value};

use super::nats::{nats_args, start_source};
use super::nats_trouble::js_api;

/// Waits up to `within` for `/healthz` to say `status` with the sink
/// `stalled` or not; the answer.
pub(crate) fn wait_health(r: &Repeater, within: Duration, status: &str, stalled: bool) -> Value {
    wait_for(within, || {
        let h = r.healthz();
        (h["status"] == status && h["sink"]["stalled"] == stalled).then_some(h)
    })
    .unwrap_or_else(|| {
        panic!(
            "not {status} (stalled {stalled}) within {within:?}: {}\n{}",
            r.healthz(),
            r.log()
        )
    })
}

#[test]
fn a_refused_stream_creation_is_degraded_with_its_reason_until_it_is_created() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let other = json!({"name": "OTHER", "subjects": ["bench.>"], "storage": "memory",
                       "num_replicas": 1});
    let created = js_api(server.port, "$JS.API.STREAM.CREATE.OTHER", &other);
    assert!(created["error"].is_null(), "{created}");
    let sb = Sandbox::new();
    let port = free_port();
    let _source = start_source(port, 100, 300, None);
    let args = nats_args(&format!("http://127.0.0.1:{port}"), &[server.url()]);
    let r = Repeater::builder(&sb, "overlap").args(&args).start();
    // The positive control of "ok" below: before it stalls, it is not.
    let h = wait_health(&r, Duration::from_secs(30), "degraded", true);
    let problem = h["sink"]["problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains("acknowledged none")
            && problem.contains("cannot create the stream EVENTS"),
        "{h}"
    );
    assert!(
        h["sink"]["connected"] == true,
        "connected, and still stalled: {h}"
    );
    assert_eq!((r.metric("sink_stalled") as u64), 1);
    assert_eq!((r.metric("sink_stalls_total") as u64), 1);
    assert_eq!((r.metric("events_acked_total") as u64), 0);

    // The overlapping stream goes: EVENTS is created, the events stored.
    let deleted = js_api(server.port, "$JS.API.STREAM.DELETE.OTHER", &json!({}));
    assert!(deleted["error"].is_null(), "{deleted}");
    let h = wait_health(&r, Duration::from_secs(30), "ok", false);
    assert!(h["sink"]["problem"].is_null(), "{h}");
    assert_eq!((r.metric("sink_stalled") as u64), 0);
    let log = r.log();
    assert_eq!(
        log.matches("acknowledged none").count(),
        1,
        "warned once: {log}"
    );
    assert!(log.contains("the sink acknowledges events again"), "{log}");
}

#[test]
fn a_frozen_mqtt_broker_is_degraded_then_ok_once_it_answers() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let _source = start_source(port, 100, 100_000, None);
    let r = Repeater::builder(&sb, "frozen")
        .source(&format!("http://127.0.0.1:{port}"))
        .sink(&broker.url())
        .args([
            "--qos",
            "1",
            "--allowall",
            "--log",
            "3",
            "--listen",
            "127.0.0.1:0",
        ])
        .start();
    let ok = wait_health(&r, Duration::from_secs(20), "ok", false);
    assert_eq!(ok["sink"]["connected"], true, "{ok}");
    broker.pause();
    let h = wait_health(&r, Duration::from_secs(30), "degraded", true);
    let problem = h["sink"]["problem"].as_str().unwrap_or_default();
    assert!(
        problem.contains("events wait and the sink has acknowledged none"),
        "{h}"
    );
    assert_eq!((r.metric("sink_stalled") as u64), 1);
    let row = status_rows(&sb, &[&r.url()])[0].clone();
    assert_eq!(row["state"], "degraded", "{row}");
    assert_eq!(row["sink_stalled"], true, "{row}");
    let why = row["sink_problem"].as_str().unwrap_or_default();
    assert!(why.contains("acknowledged none"), "{row}");
    broker.resume();
    wait_health(&r, Duration::from_secs(30), "ok", false);
    assert_eq!((r.metric("sink_stalled") as u64), 0);
    assert_eq!((r.metric("sink_stalls_total") as u64), 1);
    let row = status_rows(&sb, &[&r.url()])[0].clone();
    assert_eq!(row["state"], "up", "{row}");
    assert_eq!(row["sink_stalled"], false, "{row}");
}
