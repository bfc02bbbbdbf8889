//! `app-event-time`, the example event source, run as a real process in a
//! sandbox and spoken to over its unix socket and TCP with a raw HTTP/1.1
//! client: the SSE format, topic rules, errors, `Last-Event-ID` replay, slow
//! subscribers, and the runtime files (stale, live, removed on signals).

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::http::SseStream;
use common::wait_for;
use serde_json::Value;

mod cli;
mod instance;
mod replay;
mod stream;

/// Runs the binary to completion with a deadline.
fn run_to_end(cmd: &mut Command) -> (i32, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run app-event-time");
    let status = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
    if status.is_none() {
        let _ = child.kill();
        panic!("app-event-time did not exit within 10 s");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Reads events for `for_how_long`, returning them all.
fn collect(stream: &mut SseStream, for_how_long: Duration) -> Vec<(u64, Value)> {
    let deadline = Instant::now() + for_how_long;
    let mut events = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match stream.next_event(left) {
            Some(e) => events.push(e),
            None => break,
        }
    }
    events
}

/// Reads `test/seq` events until number `until` arrives; returns the numbers.
fn read_numbers_until(stream: &mut SseStream, until: u64, last_id: &mut u64) -> Vec<u64> {
    let mut numbers = Vec::new();
    loop {
        let (id, event) = stream
            .next_event(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("stream stalled after {numbers:?}"));
        assert!(id > *last_id, "ids increase: {id} after {last_id}");
        *last_id = id;
        assert_eq!(event["topic"], "test/seq");
        let n = event["data"].as_u64().unwrap();
        assert_eq!(event["id"], n.to_string());
        numbers.push(n);
        if n >= until {
            return numbers;
        }
    }
}
