//! The API and the stderr sink, without a broker: one JSON line per event,
//! OpenMetrics, every bad input refused with a JSON error and nothing
//! changed.

use crate::common;

use std::fs;

use common::event_time::EventTime;
use common::{wait_for, Sandbox};
use serde_json::{json, Value};

use super::{api, call, event_time, metrics, repeater, seed_routes, SECS};

/// The route `test/seq` → `out/{topic}`, seeded before the repeater
/// starts, and a source of numbered `test/seq` events at 50 a second.
fn seq_source(sb: &Sandbox) -> EventTime {
    seed_routes(
        sb,
        "event-repeater",
        json!([{"sourcetopic":"test/seq","sinktopic":"out/{topic}"}]),
    );
    event_time(sb, &["--rate", "50"])
}

#[test]
fn stderr_sink_prints_one_json_line_per_event() {
    let sb = Sandbox::new();
    let _src = seq_source(&sb);
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
    let _src = seq_source(&sb);
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
            // Counted from 1, as `manage apply` counts.
            "route 2: sourcetopic must not be empty",
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
