//! `app-event-repeater run`, as real processes: the real `app-event-time`
//! as the source, a real mosquitto (tests/it/common/broker.rs) as the sink, the
//! API spoken to with a raw HTTP/1.1 client over the unix socket. Covers the
//! flow under mapped, prefix and --allowall routes, route changes while
//! events flow, every bad-input case of the API, routes surviving restart
//! and kill -9, the runtime files, the stderr sink, and the faults of issue 6
//! (broker paused, stopped, killed; buffer smaller than the outage; source
//! restarted).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::broker::{Broker, Subscriber};
use common::event_time::EventTime;
use common::http::{Addr, Conn};
use common::repeater::Repeater;
use common::{plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

const SECS: fn(u64) -> Duration = Duration::from_secs;

fn event_time(sb: &Sandbox, args: &[&str]) -> EventTime {
    let mut all = vec!["--log", "3"];
    all.extend_from_slice(args);
    EventTime::start(sb, &all)
}

/// `app-event-repeater run --name event-repeater --log 3 ARGS…`.
fn repeater<'a>(sb: &'a Sandbox, args: &[&str]) -> Repeater<'a> {
    Repeater::builder(sb, "event-repeater")
        .args(["--log", "3"])
        .args(args)
        .start()
}

/// One HTTP exchange over a raw connection: (status, headers, body).
fn raw(addr: &Addr, request: &[u8]) -> (u16, String, String) {
    let mut conn = Conn::connect(addr).expect("connect to the API");
    // A body over the limit is answered (413) and the connection closed
    // before the server reads it: the write then fails, the answer is there.
    let _ = conn.write_all(request);
    let mut out = Vec::new();
    let _ = conn.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    (status, head.to_string(), body.to_string())
}

fn call_with(
    addr: &Addr,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    extra: &str,
) -> (u16, Value) {
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra}");
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    let (status, _, body) = raw(addr, &bytes);
    let value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{method} {path}: body is not JSON ({e}): {body:?}"))
    };
    (status, value)
}

fn api(p: &Repeater) -> Addr {
    Addr::Unix(p.socket())
}

fn call(p: &Repeater, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    call_with(&api(p), method, path, body.map(str::as_bytes), "")
}

/// `/metrics` without the `app_event_repeater_` prefix.
fn metrics(p: &Repeater) -> BTreeMap<String, f64> {
    p.metrics()
        .into_iter()
        .map(|(k, v)| (k.trim_start_matches("app_event_repeater_").to_string(), v))
        .collect()
}

fn metric(p: &Repeater, name: &str) -> u64 {
    metrics(p)
        .get(name)
        .copied()
        .unwrap_or_else(|| panic!("no metric {name}")) as u64
}

fn seed_routes(sb: &Sandbox, name: &str, routes: Value) {
    let dir = sb.data_dir().join("event-repeater");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(format!("{name}.routes.json")),
        json!({"version":1,"routes":routes}).to_string(),
    )
    .unwrap();
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

// ---------------------------------------------------------------- no broker

#[test]
fn metadata_and_completion() {
    let sb = Sandbox::new();
    let out = sb
        .command(plugin_bin("app-event-repeater"))
        .arg("__app_metadata")
        .output()
        .unwrap();
    assert!(out.status.success());
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(meta["apiVersion"], "app.plugin/v1");
    assert_eq!(meta["name"], "event-repeater");
    assert_eq!(
        meta["description"],
        "Relay events from an event source to MQTT, NATS or stderr"
    );
    assert_eq!(meta["completion"], true);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let complete = |words: &[&str]| {
        let out = sb
            .command(plugin_bin("app-event-repeater"))
            .arg("__complete")
            .args(words)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let first = complete(&[""]);
    assert!(
        first.starts_with("run\t") && first.contains("\nmanage\t") && first.ends_with(":36\n"),
        "{first}"
    );
    assert_eq!(
        complete(&["run", "--sinkprotocol", ""]),
        "mqtt\tPublish to an MQTT broker\nnats\tPublish to NATS: JetStream at QoS 1 and 2, core NATS at QoS 0\nstderr\tWrite one JSON line per event to stderr\n:4\n"
    );
    assert!(complete(&["run", "--ov"]).starts_with("--overflow\t"));
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let sb = Sandbox::new();
    for args in [
        vec!["run", "--qos", "3"],
        vec!["run", "--listen", "0.0.0.0:0"],
        vec!["run", "--sink", "ws://x"],
        vec!["frobnicate"],
    ] {
        let out = sb
            .command(plugin_bin("app-event-repeater"))
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = sb
        .command(plugin_bin("app-event-repeater"))
        .args(["run", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("app-event-repeater: ") && err.contains("--token"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn stderr_sink_prints_one_json_line_per_event() {
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"test/seq","sinktopic":"out/{topic}"}]),
    );
    let _src = event_time(&sb, &["--rate", "50"]);
    let mut rep = repeater(&sb, &["--sinkprotocol", "stderr"]);
    let lines = wait_for(SECS(15), || {
        let lines: Vec<Value> = rep
            .log()
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (lines.len() >= 20).then_some(lines)
    })
    .unwrap_or_else(|| panic!("no events on stderr: {}", rep.log()));
    for l in &lines {
        assert_eq!(l["source_topic"], "test/seq");
        assert_eq!(l["sink_topic"], "out/test/seq");
        assert_eq!(l["event"]["topic"], "test/seq");
        assert_eq!(l["event"]["type"], "seq");
    }
    let s: Vec<u64> = lines
        .iter()
        .map(|l| l["event"]["data"].as_u64().unwrap())
        .collect();
    assert!(
        s.windows(2).all(|w| w[1] == w[0] + 1),
        "not consecutive: {s:?}"
    );
    let status = rep.signal(libc::SIGTERM);
    assert_eq!(status.code(), Some(0), "{}", rep.log());
    assert!(!rep.socket().exists());
    assert!(!sb.plugin_runtime_dir().join("event-repeater.pid").exists());
}

/// What a Prometheus user checks on `/metrics`: OpenMetrics text, the
/// names and labels of before, values that move as events flow.
#[test]
fn metrics_are_openmetrics_with_the_same_names_and_moving_values() {
    let sb = Sandbox::new();
    seed_routes(
        &sb,
        "event-repeater",
        json!([{"sourcetopic":"test/seq","sinktopic":"out/{topic}"}]),
    );
    let _src = event_time(&sb, &["--rate", "50"]);
    let rep = repeater(&sb, &["--sinkprotocol", "stderr", "--allowall"]);
    let resp = common::http::get(&api(&rep), "/metrics");
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    let text = &resp.body;
    assert!(text.ends_with("\n# EOF\n"), "{text}");
    for family in [
        "events_received counter",
        "events_acked counter",
        "events_dropped counter",
        "route_events counter",
        "events_buffered gauge",
        "build_info gauge",
    ] {
        let line = format!("# TYPE app_event_repeater_{family}");
        assert!(text.lines().any(|l| l == line), "no {line:?} in {text}");
    }
    let route = "route_events_total{sourcetopic=\"test/seq\",sinktopic=\"out/{topic}\"}";
    let allowall = "route_events_total{sourcetopic=\"\",sinktopic=\"\",allowall=\"true\"}";
    let first = metrics(&rep);
    for name in [
        "events_received_total",
        "events_acked_total",
        "events_failed_total{reason=\"too_large\"}",
        "events_dropped_total{reason=\"overflow\"}",
        "sink_connected",
        "source_disconnects_total",
        "route_series_omitted",
        route,
        allowall,
    ] {
        assert!(first.contains_key(name), "no {name} in {first:?}");
    }
    let build = format!("build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
    assert_eq!(first.get(&build), Some(&1.0), "{first:?}");
    // Counters move as events flow: the route's, the acknowledgements, and
    // --allowall's (event-time's timers match no route).
    let later = wait_for(SECS(15), || {
        let m = metrics(&rep);
        let grew = |k: &str| m[k] >= first[k] + 20.0;
        (grew("events_received_total")
            && grew(route)
            && grew("events_acked_total")
            && m[allowall] > first[allowall])
            .then_some(m)
    })
    .unwrap_or_else(|| panic!("counters did not move from {first:?}\n{}", rep.log()));
    assert_eq!(later["events_unrouted_total"], 0.0, "{later:?}");
    assert_eq!(later["route_series_omitted"], 0.0);
}

#[test]
fn api_refuses_bad_input_with_json_errors_and_changes_nothing() {
    let sb = Sandbox::new();
    let rep = repeater(
        &sb,
        &["--sinkprotocol", "stderr", "--source", "/nonexistent.sock"],
    );
    let good = r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}]"#;
    assert_eq!(call(&rep, "POST", "/events", Some(good)).0, 201);
    let state_file = sb
        .data_dir()
        .join("event-repeater/event-repeater.routes.json");
    let before = fs::read_to_string(&state_file).unwrap();
    let routes_before = call(&rep, "GET", "/events", None).1;

    let huge = format!(
        r#"[{{"sourcetopic":"a","sinktopic":"{}"}}]"#,
        "x".repeat(1 << 20)
    );
    let cases: Vec<(&str, &str, Option<&str>, u16, &str)> = vec![
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"a" "sinktopic":"b"}]"#),
            400,
            "line 1 column",
        ),
        (
            "POST",
            "/events",
            Some("[{\"sourcetopic\":\"a\",\n  }]"),
            400,
            "line 2 column",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"a""#),
            400,
            "malformed JSON",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":5}]"#),
            400,
            "invalid type",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"a","sinktopic":["x"]}]"#),
            400,
            "invalid type",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"a","color":"red"}]"#),
            400,
            "unknown field `color`",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sinktopic":"a"}]"#),
            400,
            "missing field `sourcetopic`",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":""}]"#),
            400,
            "must not be empty",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"b"},{"sourcetopic":""}]"#),
            400,
            "route 1",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"b","sinktopic":"x/{nope}"}]"#),
            400,
            "placeholder",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"b","sinktopic":"x/#"}]"#),
            400,
            "'#'",
        ),
        ("POST", "/events", Some("42"), 400, "array of routes"),
        ("POST", "/events", Some(""), 400, "empty body"),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"b"},{"sourcetopic":"timer/sec/1"}]"#),
            409,
            "timer/sec/1",
        ),
        (
            "POST",
            "/events",
            Some(r#"[{"sourcetopic":"b"},{"sourcetopic":"b"}]"#),
            400,
            "more than once",
        ),
        ("POST", "/events", Some(&huge), 413, "limit"),
        (
            "PUT",
            "/events",
            Some(r#"{"sourcetopic":"c","extra":1}"#),
            400,
            "unknown field",
        ),
        ("PUT", "/events?replace=maybe", Some("[]"), 400, "replace"),
        (
            "PUT",
            "/events?frob=1",
            Some("[]"),
            400,
            "unknown query parameter",
        ),
        (
            "DELETE",
            "/events",
            Some(r#"[{"sourcetopic":"timer/sec/1"},{"sourcetopic":"nope"}]"#),
            404,
            "nope",
        ),
        (
            "DELETE",
            "/events",
            Some(r#"[{"sourcetopic":""}]"#),
            400,
            "empty",
        ),
        ("DELETE", "/events/nope", None, 404, "nope"),
        ("GET", "/events/nope", None, 404, "nope"),
        (
            "PUT",
            "/events/x",
            Some(r#"{"sourcetopic":"y"}"#),
            400,
            "differs",
        ),
        (
            "PUT",
            "/events/x",
            Some(r#"{"sinktopic":1}"#),
            400,
            "invalid",
        ),
        ("PUT", "/events/x", Some("[1"), 400, "malformed JSON"),
        ("GET", "/nowhere", None, 404, "unknown path"),
        ("GET", "/events/", None, 404, "sourcetopic"),
        ("PATCH", "/events", Some("[]"), 405, "PATCH"),
        ("POST", "/healthz", Some("{}"), 405, "POST"),
        ("DELETE", "/metrics", None, 405, "DELETE"),
    ];
    for (method, path, body, want, needle) in cases {
        let (status, v) = call(&rep, method, path, body);
        let shown = body.map(|b| b.chars().take(60).collect::<String>());
        assert_eq!(status, want, "{method} {path} {shown:?}: {v}");
        let msg = v["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path}: no JSON error in {v}"));
        assert!(
            msg.contains(needle),
            "{method} {path} {shown:?}: {msg:?} lacks {needle:?}"
        );
        assert_eq!(v["status"], want);
    }
    assert_eq!(call(&rep, "GET", "/events", None).1, routes_before);
    assert_eq!(fs::read_to_string(&state_file).unwrap(), before);

    // And the good paths, with their codes.
    assert_eq!(
        call(&rep, "GET", "/events/timer/sec/1", None),
        (
            200,
            json!({"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"})
        )
    );
    assert_eq!(
        call(
            &rep,
            "PUT",
            "/events/timer/",
            Some(r#"{"sinktopic":"site1/{suffix}"}"#)
        )
        .0,
        201
    );
    assert_eq!(
        call(
            &rep,
            "PUT",
            "/events/timer/",
            Some(r#"{"sinktopic":"site2/{suffix}"}"#)
        )
        .0,
        200
    );
    assert_eq!(
        call(&rep, "PUT", "/events", Some(r#"{"sourcetopic":"z"}"#)).0,
        200
    );
    assert_eq!(
        call(&rep, "GET", "/events", None)
            .1
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let (s, v) = call(
        &rep,
        "PUT",
        "/events?replace=true",
        Some(r#"[{"sourcetopic":"only"}]"#),
    );
    assert_eq!(
        (s, v),
        (200, json!([{"sourcetopic":"only","sinktopic":""}]))
    );
    assert_eq!(
        call(&rep, "DELETE", "/events", Some(r#"{"sourcetopic":"only"}"#)).0,
        200
    );
    assert_eq!(call(&rep, "GET", "/events", None), (200, json!([])));
    let (s, v) = call(&rep, "GET", "/healthz", None);
    assert_eq!(s, 200);
    assert_eq!(v["source"]["connected"], false);
    assert_eq!(v["sink"]["connected"], true);
    assert_eq!(v["status"], "degraded");
}

#[test]
fn routes_survive_restart_and_kill_9() {
    let sb = Sandbox::new();
    let args = ["--sinkprotocol", "stderr", "--source", "/nonexistent.sock"];
    let mut rep = repeater(&sb, &args);
    let routes = json!([
        {"sourcetopic":"a/","sinktopic":"A/{suffix}"},
        {"sourcetopic":"b","sinktopic":""},
        {"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}
    ]);
    assert_eq!(
        call(&rep, "POST", "/events", Some(&routes.to_string())).0,
        201
    );
    assert_eq!(rep.signal(libc::SIGTERM).code(), Some(0));
    let mut rep = repeater(&sb, &args);
    assert_eq!(call(&rep, "GET", "/events", None).1, routes);
    // A change, then kill -9 right after the reply: it is on disk.
    assert_eq!(call(&rep, "DELETE", "/events/b", None).0, 200);
    assert_eq!(call(&rep, "PUT", "/events/c", Some("{}")).0, 201);
    rep.kill9();
    // The socket is stale now; the next start replaces it.
    assert!(rep.socket().exists());
    let rep = repeater(&sb, &args);
    let now = call(&rep, "GET", "/events", None).1;
    assert_eq!(
        now,
        json!([
            {"sourcetopic":"a/","sinktopic":"A/{suffix}"},
            {"sourcetopic":"c","sinktopic":""},
            {"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}
        ])
    );
}

#[test]
fn runtime_files_modes_live_instance_and_tcp_token() {
    let sb = Sandbox::new();
    let dir = sb.plugin_runtime_dir();
    let port = common::free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let mut rep = Repeater::builder(&sb, "r1")
        .args(["--log", "3", "--sinkprotocol", "stderr"])
        .args(["--source", "/nonexistent.sock"])
        .args(["--listen", &listen, "--token", "s3cret"])
        .start();
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        fs::metadata(rep.socket()).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let pid: u32 = fs::read_to_string(dir.join("r1.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(pid, rep.pid() as u32);
    let url = fs::read_to_string(dir.join("r1.listen")).unwrap();
    assert_eq!(url.trim(), format!("http://{listen}"));
    let tcp = Addr::from_url(url.trim());
    assert_eq!(call_with(&tcp, "GET", "/events", None, "").0, 401);
    assert_eq!(
        call_with(
            &tcp,
            "GET",
            "/events",
            None,
            "Authorization: Bearer nope\r\n"
        )
        .0,
        401
    );
    assert_eq!(
        call_with(
            &tcp,
            "GET",
            "/events",
            None,
            "Authorization: Bearer s3cret\r\n"
        )
        .0,
        200
    );
    // A second instance with the same name is refused, naming the first.
    let out = sb
        .command(plugin_bin("app-event-repeater"))
        .args(["run", "--sinkprotocol", "stderr", "--name", "r1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already running") && err.contains(&pid.to_string()),
        "{err}"
    );
    assert!(
        rep.socket().exists(),
        "the refused start must not touch the live socket"
    );
    assert_eq!(rep.signal(libc::SIGINT).code(), Some(0));
    for f in ["r1.sock", "r1.pid", "r1.listen"] {
        assert!(!dir.join(f).exists(), "{f} left behind");
    }
}

// ---------------------------------------------------------------- with a broker

#[test]
fn events_flow_from_event_time_into_mosquitto_under_mapped_topics() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "#", None) else {
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
    assert!(metric(&rep, "events_acked_total") > 0);
    assert_eq!(metric(&rep, "sink_connected"), 1);
    assert_eq!(metric(&rep, "source_connected"), 1);
}

#[test]
fn allowall_and_prefix_routes_with_suffix() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "#", None) else {
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
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "#", None) else {
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
    let unrouted = metric(&rep, "events_unrouted_total");
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
        metric(&rep, "events_unrouted_total") > unrouted,
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
    assert!(metric(&rep, "events_unrouted_total") > 0);
}

#[test]
fn buffer_smaller_than_the_outage_drops_are_counted_exactly() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "out/#", None) else {
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
    let dropped = metric(&rep, "events_dropped_total{reason=\"overflow\"}");
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
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "out/#", None) else {
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
        (metric(&rep, "source_connected") == 0).then_some(())
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
    wait_for(SECS(15), || {
        (metric(&rep, "events_acked_total") >= 100).then_some(())
    });
    broker.pause();
    // No acknowledgement comes back from a paused broker: once one event is
    // buffered or in flight, the drain has something it cannot deliver.
    let pending = wait_for(SECS(10), || {
        (metric(&rep, "events_buffered") + metric(&rep, "events_inflight") > 0).then_some(())
    });
    assert!(pending.is_some(), "nothing pending: {}", rep.log());
    let t = Instant::now();
    assert_eq!(rep.signal(libc::SIGTERM).code(), Some(0));
    assert!(t.elapsed() < SECS(5), "drain took {:?}", t.elapsed());
    let log = rep.log();
    assert!(log.contains("were not delivered"), "{log}");
    assert!(!rep.socket().exists());
}
