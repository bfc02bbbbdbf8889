//! `--sinkprotocol nats` (issue 14) against real `nats-server -js`
//! processes started here on free ports: routes and templates reach the
//! right subjects, a paused and a killed/restarted server lose nothing at
//! QoS 1, two repeaters on one source store each event once, a three-node
//! JetStream cluster loses nothing when a node dies, and `--creds` signs in
//! to a server in operator mode.
//!
//! What the stream holds is read back with a JetStream consumer
//! (`loadgen nats-read`, bench/loadgen), which counts messages per subject
//! and the numbered events: missing and duplicated numbers.

use crate::common;

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::event_time::EventTime;
use common::nats::NatsServer;
use common::process::Proc;
use common::repeater::Repeater;
use common::{free_port, plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

pub(crate) fn loadgen() -> PathBuf {
    plugin_bin("loadgen")
}

/// `loadgen sse` on 127.0.0.1:`port`: events 1..=`count` on `bench/seq` at
/// `rate`/s (SSE id = number). With `ready`, event 0 repeats every 10 ms
/// until that file exists, so every reader starts at event 1.
pub(crate) fn start_source(
    port: u16,
    rate: u64,
    count: u64,
    ready: Option<&std::path::Path>,
) -> Proc {
    let mut cmd = Command::new(loadgen());
    cmd.args(["sse", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--rate", &rate.to_string(), "--count", &count.to_string()])
        .args(["--warmup", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(f) = ready {
        cmd.arg("--ready-file").arg(f);
    }
    let p = Proc::spawn("loadgen sse", &mut cmd);
    let up = wait_for(Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "loadgen sse did not listen on {port}");
    p
}

/// Reads the whole stream back: the `loadgen nats-read` summary, or its
/// error (the stream may not exist yet).
fn try_read_stream(server: &str, stream: &str, expect: u64) -> Result<Value, String> {
    let out = Command::new(loadgen())
        .args(["nats-read", "--server", server, "--stream", stream])
        .args(["--expect", &expect.to_string(), "--timeout", "60"])
        .output()
        .expect("run loadgen nats-read");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("nats-read printed no JSON: {e}"))
}

pub(crate) fn read_stream(server: &str, stream: &str, expect: u64) -> Value {
    try_read_stream(server, stream, expect)
        .unwrap_or_else(|e| panic!("loadgen nats-read failed: {e}"))
}

/// Waits until the repeater acknowledged `n` events (panics with its log).
fn wait_acked(rep: &Repeater, n: u64, within: Duration) {
    let done = wait_for(within, || {
        ((rep.metric("events_acked_total") as u64) >= n).then_some(())
    });
    assert!(
        done.is_some(),
        "acked {} of {n} within {within:?}; log:\n{}",
        (rep.metric("events_acked_total") as u64),
        rep.log()
    );
}

/// Arguments of a repeater from `source` into NATS at QoS 1, every event
/// under its own topic, blocking (never dropping) when its buffer is full.
pub(crate) fn nats_args(source: &str, sinks: &[String]) -> Vec<String> {
    let mut args = vec![
        "--source".to_string(),
        source.to_string(),
        "--sinkprotocol".into(),
        "nats".into(),
        "--qos".into(),
        "1".into(),
        "--overflow".into(),
        "block".into(),
        "--ack-timeout".into(),
        "2s".into(),
        "--allowall".into(),
        "--log".into(),
        "3".into(),
    ];
    for s in sinks {
        args.extend(["--sink".to_string(), s.clone()]);
    }
    args
}

fn seed_routes(sb: &Sandbox, name: &str, routes: Value) {
    let dir = sb.data_dir().join("event-repeater");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{name}.routes.json")),
        json!({"version":1,"routes":routes}).to_string(),
    )
    .unwrap();
}

#[test]
fn routes_and_templates_reach_their_subjects() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([
            {"sourcetopic":"timer/msec/","sinktopic":"site1/{suffix}"},
            {"sourcetopic":"test/seq","sinktopic":"/seq//all/"},
            {"sourcetopic":"timer/sec/1","sinktopic":"bad topic/{topic}"},
        ]),
    );
    let _src = EventTime::start(&sb, &["--rate", "20"]);
    let rep = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("nats")
        .sink(&server.url())
        .args(["--qos", "1", "--nats-stream", "ROUTED", "--log", "3"])
        .start();
    let want = ["site1.100", "site1.500", "seq.all"];
    let summary = wait_for(Duration::from_secs(20), || {
        let v = try_read_stream(&server.url(), "ROUTED", 0).ok()?;
        want.iter()
            .all(|s| v["subjects"][s].as_u64().unwrap_or(0) > 0)
            .then_some(v)
    })
    .unwrap_or_else(|| {
        panic!(
            "not every subject in the stream: {:?}\nlog:\n{}",
            try_read_stream(&server.url(), "ROUTED", 0),
            rep.log()
        )
    });
    let subjects = summary["subjects"].as_object().unwrap();
    assert!(
        subjects.keys().all(|s| want.contains(&s.as_str())),
        "unexpected subjects: {subjects:?}"
    );
    let invalid = wait_for(Duration::from_secs(10), || {
        let n = rep.metric("events_failed_total{reason=\"invalid_topic\"}") as u64;
        (n > 0).then_some(n)
    });
    assert!(
        invalid.is_some(),
        "timer/sec/1 → 'bad topic/…' was not refused: {}",
        rep.log()
    );
    assert_eq!((rep.metric("sink_connected") as u64), 1);
    assert!(
        rep.log().contains("created the stream ROUTED"),
        "{}",
        rep.log()
    );
}

/// `--sink nats://…` alone is NATS: the URL's scheme chooses the sink (it
/// was MQTT, which refused the URL). With `--sinkprotocol mqtt` as well, the
/// two contradict: exit 2, one line naming both, nothing started.
#[test]
fn a_nats_url_alone_chooses_nats_and_a_contradicting_sinkprotocol_is_refused() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let refused = sb
        .command(plugin_bin("app-event-repeater"))
        .args([
            "run",
            "--sinkprotocol",
            "mqtt",
            "--sink",
            &server.url(),
            "--allowall",
        ])
        .output()
        .expect("run the repeater");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains(&format!(
            "--sinkprotocol mqtt contradicts --sink {}, a nats URL",
            server.url()
        )),
        "{said}"
    );
    let _src = EventTime::start(&sb, &["--rate", "20"]);
    let rep = Repeater::builder(&sb, "event-repeater")
        .sink(&server.url())
        .args(["--nats-stream", "BYSCHEME", "--allowall", "--log", "3"])
        .start();
    let stored = wait_for(Duration::from_secs(20), || {
        let v = try_read_stream(&server.url(), "BYSCHEME", 0).ok()?;
        v["subjects"]
            .as_object()
            .is_some_and(|o| !o.is_empty())
            .then_some(v)
    });
    assert!(
        stored.is_some(),
        "nothing in the stream: {:?}\nlog:\n{}",
        try_read_stream(&server.url(), "BYSCHEME", 0),
        rep.log()
    );
}

/// `--creds`: a server in operator mode takes the repeater with the user's
/// `.creds` file (JWT and NKey seed) and stores its events; without them it
/// refuses, and the repeater says to check the credentials.
#[test]
fn creds_authenticate_against_an_operator_mode_server() {
    let Some((server, creds)) = NatsServer::start_with_creds() else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let _src = start_source(port, 500, 100_000, None);
    let source = format!("http://127.0.0.1:{port}");
    let rep = Repeater::builder(&sb, "with-creds")
        .args(nats_args(&source, &[server.url()]))
        .args(["--creds", creds.to_str().expect("a UTF-8 path")])
        .start();
    wait_acked(&rep, 200, Duration::from_secs(20));

    let refused = Repeater::builder(&sb, "no-creds")
        .args(nats_args(&source, &[server.url()]))
        .start();
    let said = wait_for(Duration::from_secs(15), || {
        refused.log().contains("check --creds").then_some(())
    });
    assert!(
        said.is_some(),
        "no hint about credentials: {}",
        refused.log()
    );
    assert_eq!((refused.metric("events_acked_total") as u64), 0);
    assert_eq!((refused.metric("sink_connected") as u64), 0);
}

#[test]
fn paused_then_killed_server_loses_nothing_at_qos1() {
    let Some(mut server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 4000;
    let port = free_port();
    let _src = start_source(port, 400, n, None);
    let rep = Repeater::builder(&sb, "event-repeater")
        .args(nats_args(
            &format!("http://127.0.0.1:{port}"),
            &[server.url()],
        ))
        .start();
    wait_acked(&rep, 300, Duration::from_secs(20));
    server.pause();
    std::thread::sleep(Duration::from_secs(4));
    server.resume();
    wait_acked(
        &rep,
        (rep.metric("events_acked_total") as u64) + 300,
        Duration::from_secs(30),
    );
    server.kill();
    let disconnected = wait_for(Duration::from_secs(10), || {
        ((rep.metric("sink_connected") as u64) == 0).then_some(())
    });
    assert!(
        disconnected.is_some(),
        "sink_connected stays 1: {}",
        rep.log()
    );
    server.restart();
    wait_acked(&rep, n, Duration::from_secs(60));
    let v = read_stream(&server.url(), "EVENTS", n);
    assert_eq!(v["missing"], 0, "{v}\nlog:\n{}", rep.log());
    assert_eq!(v["distinct"], n, "{v}");
    // Republished events carried their Nats-Msg-Id: stored once.
    assert_eq!(v["duplicates"], 0, "{v}");
    assert_eq!(
        (rep.metric("events_dropped_total{reason=\"overflow\"}") as u64),
        0
    );
    assert!(
        (rep.metric("sink_disconnects_total") as u64) >= 1,
        "{}",
        rep.log()
    );
    assert!(
        (rep.metric("events_republished_total") as u64) >= 1,
        "{}",
        rep.log()
    );
}

#[test]
fn two_repeaters_on_one_source_store_each_event_once() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 3000;
    let port = free_port();
    let ready = sb.path().join("go");
    let _src = start_source(port, 300, n, Some(&ready));
    let source = format!("http://127.0.0.1:{port}");
    let mut a = Repeater::builder(&sb, "a")
        .args(nats_args(&source, &[server.url()]))
        .start();
    let b = Repeater::builder(&sb, "b")
        .args(nats_args(&source, &[server.url()]))
        .start();
    for r in [&a, &b] {
        let up = wait_for(Duration::from_secs(20), || {
            ((r.metric("sink_connected") as u64) == 1 && (r.metric("source_connected") as u64) == 1)
                .then_some(())
        });
        assert!(up.is_some(), "not connected: {}", r.log());
    }
    std::fs::write(&ready, "go").unwrap();
    // Half-way: A dies and never comes back.
    let half = wait_for(Duration::from_secs(30), || {
        ((a.metric("events_acked_total") as u64) >= n / 2).then_some(())
    });
    assert!(half.is_some(), "{}", a.log());
    a.kill9();
    let deadline = Instant::now() + Duration::from_secs(60);
    let v = loop {
        let v = read_stream(&server.url(), "EVENTS", n);
        if v["missing"] == 0 || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(v["missing"], 0, "{v}\nB's log:\n{}", b.log());
    assert_eq!(v["duplicates"], 0, "{v}");
    assert_eq!(v["distinct"], n, "{v}");
    // Event 0 (the announcement) repeats under one id: stored once too.
    assert!(v["warmup"].as_u64().unwrap() <= 1, "{v}");
    assert!(b.log().contains("connected to NATS"), "{}", b.log());
}

#[test]
fn a_three_node_cluster_loses_nothing_when_a_node_dies() {
    let Some(mut nodes) = NatsServer::cluster(3) else {
        return;
    };
    let sb = Sandbox::new();
    let n = 3000;
    let port = free_port();
    let _src = start_source(port, 300, n, None);
    let seeds: Vec<String> = nodes.iter().map(NatsServer::url).collect();
    let rep = Repeater::builder(&sb, "event-repeater")
        .args(nats_args(&format!("http://127.0.0.1:{port}"), &seeds))
        .args(["--nats-replicas", "3"])
        .start();
    // The cluster elects its leaders first; the repeater retries meanwhile.
    wait_acked(&rep, 500, Duration::from_secs(60));
    nodes[0].kill();
    wait_acked(&rep, n, Duration::from_secs(90));
    let v = read_stream(&nodes[1].url(), "EVENTS", n);
    assert_eq!(v["replicas"], 3, "{v}");
    assert_eq!(v["missing"], 0, "{v}\nlog:\n{}", rep.log());
    assert_eq!(v["distinct"], n, "{v}");
    assert_eq!(
        (rep.metric("events_dropped_total{reason=\"overflow\"}") as u64),
        0
    );
}
