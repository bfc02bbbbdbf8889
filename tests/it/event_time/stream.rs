//! The event stream over the unix socket and TCP: topics exact and by
//! subtree, JSON errors for unknown topics, paths and methods, the test
//! stream, keep-alive comments.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use common::event_time::EventTime;
use common::http::{self, SseItem, SseStream};
use common::Sandbox;
use serde_json::Value;

use super::{collect, read_numbers_until};

const TIMERS: [&str; 9] = [
    "timer/msec/100",
    "timer/msec/500",
    "timer/sec/1",
    "timer/sec/5",
    "timer/sec/30",
    "timer/min/1",
    "timer/min/5",
    "timer/min/30",
    "timer/hr/1",
];

fn is_rfc3339_utc_millis(ts: &str) -> bool {
    let b = ts.as_bytes();
    b.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && ts.chars().filter(char::is_ascii_digit).count() == 17
}

#[test]
fn streams_timer_events_over_the_unix_socket() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &[]);
    let mode = |p: PathBuf| {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(sb.plugin_runtime_dir()), 0o700);
    assert_eq!(mode(source.socket()), 0o600);
    assert_eq!(
        fs::read_to_string(source.file("pid")).unwrap().trim(),
        source.pid().to_string()
    );
    assert!(
        !source.file("listen").exists(),
        "no .listen without --listen"
    );
    let mut names: Vec<String> = fs::read_dir(sb.plugin_runtime_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["event-time.pid", "event-time.sock"],
        "no temporary files left"
    );

    let mut stream = SseStream::open(&source.unix(), "/events?topic=timer/msec/100", &[]);
    assert_eq!(
        stream.next_item(Duration::from_secs(5)),
        Some(SseItem::Comment("subscribed".into()))
    );
    let mut last = 0;
    for _ in 0..3 {
        let (id, event) = stream.next_event(Duration::from_secs(5)).expect("an event");
        assert!(id > last);
        last = id;
        assert_eq!(event["topic"], "timer/msec/100");
        assert_eq!(event["type"], "timer");
        assert_eq!(event["id"], "100ms");
        assert_eq!(event["data"], 100_000_000);
        let ts = event["timestamp"].as_str().unwrap();
        assert!(is_rfc3339_utc_millis(ts), "{ts}");
        assert_eq!(event.as_object().unwrap().len(), 5, "{event}");
    }
}

#[test]
fn streams_over_tcp_and_writes_the_listen_file() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--listen", "127.0.0.1:0"]);
    let url = fs::read_to_string(source.file("listen")).unwrap();
    let port: u16 = url
        .trim()
        .strip_prefix("http://127.0.0.1:")
        .unwrap()
        .parse()
        .unwrap();
    assert_ne!(port, 0, "the real port, not 0");
    let tcp = source.tcp();
    assert_eq!(http::get(&tcp, "/topics").json(), serde_json::json!(TIMERS));
    let mut stream = SseStream::open(&tcp, "/events?topic=timer/msec/100", &[]);
    let (_, event) = stream
        .next_event(Duration::from_secs(5))
        .expect("an event over TCP");
    assert_eq!(event["topic"], "timer/msec/100");
}

#[test]
fn exact_topics_get_only_themselves_and_trailing_slash_gets_the_subtree() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "50"]);
    let addr = source.unix();
    let mut exact = SseStream::open(&addr, "/events?topic=timer/msec/100", &[]);
    let mut subtree = SseStream::open(&addr, "/events?topic=timer/msec/", &[]);
    let mut all = SseStream::open(&addr, "/events?topic=.", &[]);
    let mut empty = SseStream::open(&addr, "/events", &[]);
    let topics = |events: Vec<(u64, Value)>| -> Vec<String> {
        let mut t: Vec<String> = events
            .iter()
            .map(|(_, e)| e["topic"].as_str().unwrap().to_string())
            .collect();
        t.sort();
        t.dedup();
        t
    };
    let window = Duration::from_millis(1200);
    assert_eq!(topics(collect(&mut exact, window)), ["timer/msec/100"]);
    assert_eq!(
        topics(collect(&mut subtree, window)),
        ["timer/msec/100", "timer/msec/500"]
    );
    for stream in [&mut all, &mut empty] {
        let seen = topics(collect(stream, window));
        assert!(seen.contains(&"test/seq".to_string()), "{seen:?}");
        assert!(seen.contains(&"timer/msec/100".to_string()), "{seen:?}");
    }
    // String prefixes of real topics are not topics.
    for topic in ["timer/msec/10", "timer/msec", "timer/sec/10", "test/seq/"] {
        let r = http::get(&addr, &format!("/events?topic={topic}"));
        assert_eq!(r.status, 404, "{topic}");
    }
}

#[test]
fn unknown_topics_paths_and_methods_get_json_errors() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &[]);
    let addr = source.unix();

    let r = http::request(
        &addr,
        "GET",
        "/events?topic=timer/sec/10",
        &[("Accept", "text/event-stream")],
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.body,
        r#"{"error":"unknown topic 'timer/sec/10'; GET /topics lists them"}"#
    );
    assert_eq!(
        http::get(&addr, "/events?topic=test/seq").status,
        404,
        "test/seq needs --rate"
    );

    let r = http::get(&addr, "/no/such/path");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("/no/such/path"));

    for (method, path) in [
        ("POST", "/events"),
        ("DELETE", "/topics"),
        ("PUT", "/events"),
    ] {
        let r = http::request(&addr, method, path, &[("Content-Length", "0")]);
        assert_eq!(r.status, 405, "{method} {path}");
        assert_eq!(r.header("allow"), Some("GET, HEAD"));
        assert!(r.json()["error"].as_str().unwrap().contains(method));
    }

    let r = http::request(
        &addr,
        "GET",
        "/events?topic=timer/sec/1",
        &[("Last-Event-ID", "abc")],
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("'abc'"));

    let r = http::request(&addr, "GET", "/events", &[("Accept", "application/json")]);
    assert_eq!(r.status, 406);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("text/event-stream"));

    let r = http::get(&addr, "/topics");
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), serde_json::json!(TIMERS));

    // Requests hyper cannot parse get JSON too, not its empty answers.
    let long_url = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    let broken = "GET / HTTP/1.1\r\nNo colon here\r\n\r\n".to_string();
    for (request, status, says) in [
        (long_url, 431, "too large"),
        (broken, 400, "not valid HTTP"),
    ] {
        let r = http::send_raw(&addr, request.as_bytes());
        assert_eq!(r.status, status, "{r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let v = r.json();
        assert_eq!(v["status"], status);
        assert!(v["error"].as_str().unwrap().contains(says), "{v}");
    }
}

#[test]
fn topics_include_the_test_stream_with_rate() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "10", "--count", "3"]);
    let topics = http::get(&source.unix(), "/topics").json();
    let topics: Vec<&str> = topics
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(topics.len(), 10);
    assert!(topics.contains(&"test/seq"));
    // --count stops the stream; the server keeps serving (and replays it).
    let mut stream = SseStream::open(
        &source.unix(),
        "/events?topic=test/seq",
        &[("Last-Event-ID", "0")],
    );
    let mut last = 0;
    assert_eq!(read_numbers_until(&mut stream, 3, &mut last), [1, 2, 3]);
    assert_eq!(
        stream.next_event(Duration::from_millis(700)),
        None,
        "nothing after --count"
    );
}

#[test]
fn keep_alive_comments_flow_on_an_idle_stream() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--keep-alive", "1"]);
    let mut stream = SseStream::open(&source.unix(), "/events?topic=timer/hr/1", &[]);
    assert_eq!(
        stream.next_item(Duration::from_secs(2)),
        Some(SseItem::Comment("subscribed".into()))
    );
    // The hourly timer is idle except at the top of the hour, when its one
    // event may come first (CI once started this test at 15:59:59).
    let mut item = stream.next_item(Duration::from_secs(3));
    if let Some(SseItem::Event { data, .. }) = &item {
        assert!(data.contains(r#""topic":"timer/hr/1""#), "{data}");
        item = stream.next_item(Duration::from_secs(3));
    }
    assert_eq!(item, Some(SseItem::Comment("keep-alive".into())));
}
