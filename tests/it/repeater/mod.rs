//! `app-event-repeater run`, as real processes: the real `app-event-time`
//! as the source, a real mosquitto (tests/it/common/broker.rs) as the sink, the
//! API spoken to with a raw HTTP/1.1 client over the unix socket. Covers the
//! flow under mapped, prefix and --allowall routes, route changes while
//! events flow, every bad-input case of the API, routes surviving restart
//! and kill -9, the runtime files, the stderr sink, and the faults of issue 6
//! (broker paused, stopped, killed; buffer smaller than the outage; source
//! restarted). Beside them: the API's limits against clients that stall or
//! send what it does not serve (`api_limits`), what it checks about its
//! files at start (`startup`), state files an earlier release wrote
//! (`upgrade`), and what its libraries log (`library_logs`).

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::time::Duration;

use common::event_time::EventTime;
use common::http::{Addr, Conn};
use common::repeater::Repeater;
use common::Sandbox;
use serde_json::{json, Value};

mod api;
mod api_limits;
mod cli;
mod library_logs;
mod mqtt;
mod startup;
mod state;
mod upgrade;

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

fn seed_routes(sb: &Sandbox, name: &str, routes: Value) {
    let dir = sb.data_dir().join("event-repeater");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join(format!("{name}.routes.json")),
        json!({"version":1,"routes":routes}).to_string(),
    )
    .unwrap();
}
