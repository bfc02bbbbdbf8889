//! `app-event-time`, the example event source, run as a real process in a
//! sandbox and spoken to over its unix socket and TCP with a raw HTTP/1.1
//! client: the SSE format, topic rules, errors, `Last-Event-ID` replay, slow
//! subscribers, and the runtime files (stale, live, removed on signals).

use crate::common;

use std::fs;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::event_time::EventTime;
use common::http::{self, Conn, SseItem, SseStream};
use common::{plugin_bin, wait_for, Sandbox};
use serde_json::Value;

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
fn metadata_and_completion_follow_the_plugin_protocol() {
    let sb = Sandbox::new();
    let (code, out, _) = run_to_end(
        sb.command(plugin_bin("app-event-time"))
            .arg("__app_metadata"),
    );
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1);
    let meta: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(meta["apiVersion"], "app.plugin/v1");
    assert_eq!(meta["name"], "event-time");
    assert_eq!(
        meta["description"],
        "Example event source: timer events over Server-Sent Events"
    );
    assert_eq!(meta["completion"], true);
    assert!(
        meta.get("context").is_none(),
        "a daemon is exec'd, not fed stdin"
    );

    let complete = |words: &[&str]| {
        let (code, out, err) = run_to_end(
            sb.command(plugin_bin("app-event-time"))
                .arg("__complete")
                .args(words),
        );
        assert_eq!((code, err.as_str()), (0, ""));
        out
    };
    let flags = complete(&[""]);
    for flag in [
        "--name",
        "--listen",
        "--log",
        "--rate",
        "--count",
        "--history",
        "--help",
    ] {
        assert!(
            flags.lines().any(|l| l.starts_with(&format!("{flag}\t"))),
            "{flag} in {flags}"
        );
    }
    assert!(flags.ends_with(":4\n"));
    let l = complete(&["--l"]);
    let names: Vec<&str> = l.lines().map(|x| x.split('\t').next().unwrap()).collect();
    assert_eq!(names, ["--listen", "--log", ":4"]);
    let levels = complete(&["--log", ""]);
    let levels: Vec<&str> = levels
        .lines()
        .map(|x| x.split('\t').next().unwrap())
        .collect();
    assert_eq!(levels, ["0", "1", "2", "3", "4", "5", ":4"]);
    assert_eq!(complete(&["--log", "4"]), "4\tdebug\n:4\n");
}

#[test]
fn help_lists_flags_and_exit_codes_and_bad_flags_exit_2() {
    let sb = Sandbox::new();
    let bin = plugin_bin("app-event-time");
    let (code, out, _) = run_to_end(sb.command(&bin).arg("--help"));
    assert_eq!(code, 0);
    for word in [
        "--name",
        "--listen",
        "--log",
        "--rate",
        "--count",
        "--history",
        "Exit codes",
    ] {
        assert!(out.contains(word), "--help mentions {word}:\n{out}");
    }
    for args in [
        &["--bogus"][..],
        &["--log", "6"],
        &["--count", "5"],
        &["--rate", "0"],
        &["--listen", "nowhere"],
        &["--name", "../escape"],
    ] {
        let (code, out, err) = run_to_end(sb.command(&bin).args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(out, "");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.starts_with("app-event-time: "), "{err}");
    }
    assert!(!sb.plugin_runtime_dir().join("event-time.sock").exists());
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
fn last_event_id_replays_missed_events_without_gap_or_duplicate() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "2000", "--count", "6000"]);
    let addr = source.unix();
    let mut last_id = 0;
    let mut numbers = Vec::new();

    // Position 0: everything held, from event 1.
    let mut stream = SseStream::open(&addr, "/events?topic=test/seq", &[("Last-Event-ID", "0")]);
    numbers.extend(read_numbers_until(&mut stream, 1500, &mut last_id));
    drop(stream);
    std::thread::sleep(Duration::from_millis(300));

    // Reconnect with the header, as an SSE client does.
    let id = last_id.to_string();
    let mut stream = SseStream::open(&addr, "/events?topic=test/seq", &[("Last-Event-ID", &id)]);
    numbers.extend(read_numbers_until(&mut stream, 3500, &mut last_id));
    drop(stream);
    std::thread::sleep(Duration::from_millis(300));

    // And with the query parameter, for clients that cannot set headers.
    let path = format!("/events?topic=test/seq&last_event_id={last_id}");
    let mut stream = SseStream::open(&addr, &path, &[]);
    numbers.extend(read_numbers_until(&mut stream, 6000, &mut last_id));

    let expected: Vec<u64> = (1..=6000).collect();
    assert!(
        numbers == expected,
        "gap or duplicate: {} numbers",
        numbers.len()
    );
}

#[test]
fn a_position_older_than_the_history_is_reported_then_replayed_from_the_oldest() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "1000", "--history", "50"]);
    let addr = source.unix();
    // The id of this run's first event (ids start at the clock, not at 1).
    let mut all = SseStream::open(&addr, "/events?topic=test/seq", &[("Last-Event-ID", "0")]);
    let (first_id, first) = all.next_event(Duration::from_secs(5)).expect("an event");
    drop(all);
    wait_for(Duration::from_secs(5), || {
        let mut s = SseStream::open(&addr, "/events?topic=test/seq", &[]);
        s.next_event(Duration::from_secs(2))
            .filter(|(_, e)| e["data"].as_u64().unwrap_or(0) > 200)
    })
    .expect("the stream runs");
    let after = first_id.to_string();
    let mut stream = SseStream::open(
        &addr,
        "/events?topic=test/seq",
        &[("Last-Event-ID", &after)],
    );
    assert_eq!(
        stream.next_item(Duration::from_secs(2)),
        Some(SseItem::Comment("subscribed".into()))
    );
    match stream.next_item(Duration::from_secs(2)) {
        Some(SseItem::Comment(c)) => assert!(
            c.starts_with(&format!("events {}..", first_id + 1)) && c.contains("no longer held"),
            "{c}"
        ),
        other => panic!("expected a comment about the lost events, got {other:?}"),
    }
    let (_, replayed) = stream.next_event(Duration::from_secs(2)).unwrap();
    assert!(
        replayed["data"].as_u64().unwrap() > 150,
        "replay starts at the oldest held event, got {replayed} after {first}"
    );
}

/// Issue 11: ids increase across a restart (they start at the clock), and a
/// client resuming with an id from the earlier run gets everything the new
/// run holds, told that the rest is gone.
#[test]
fn ids_keep_increasing_across_a_sigkill_and_restart() {
    let sb = Sandbox::new();
    let mut source = EventTime::start(&sb, &["--rate", "1000"]);
    let mut stream = SseStream::open(&source.unix(), "/events?topic=test/seq", &[]);
    let mut last_id = 0;
    let numbers = read_numbers_until(&mut stream, 300, &mut last_id);
    assert!(!numbers.is_empty());
    drop(stream);
    source.signal(libc::SIGKILL);
    let source = EventTime::start(&sb, &["--rate", "1000"]);
    std::thread::sleep(Duration::from_millis(300));
    let old = last_id.to_string();
    let mut stream = SseStream::open(
        &source.unix(),
        "/events?topic=test/seq",
        &[("Last-Event-ID", &old)],
    );
    assert_eq!(
        stream.next_item(Duration::from_secs(2)),
        Some(SseItem::Comment("subscribed".into()))
    );
    match stream.next_item(Duration::from_secs(2)) {
        Some(SseItem::Comment(c)) => assert!(
            c.contains(&format!("after id {old} from an earlier run")),
            "{c}"
        ),
        other => panic!("expected a comment about the earlier run, got {other:?}"),
    }
    // The new run's events from its first one, with ids above the old run's.
    let mut id_before = last_id;
    let numbers = read_numbers_until(&mut stream, 500, &mut id_before);
    assert_eq!(numbers, (1..=500).collect::<Vec<u64>>());
}

/// Issue 11 (hardening 6): 300 subscribers that never read, at 20,000
/// events/s, cost a bounded amount of memory each (they grew the server to
/// 374 MB): the resident size stays under 120 MB.
#[test]
fn three_hundred_stalled_subscribers_at_20000_per_s_stay_bounded() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "20000"]);
    let addr = source.unix();
    let mut stalled = Vec::new();
    for i in 0..300 {
        let mut c = Conn::connect(&addr).unwrap();
        use std::io::Write;
        // Half from the start of the history (a long replay), half live.
        let header = if i % 2 == 0 {
            "Last-Event-ID: 0\r\n"
        } else {
            ""
        };
        c.write_all(
            format!("GET /events?topic=. HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n{header}\r\n")
                .as_bytes(),
        )
        .unwrap();
        stalled.push(c);
    }
    let rss = |pid: i32| -> u64 {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    std::thread::sleep(Duration::from_secs(6));
    let peak_mb = rss(source.pid()) / 1024;
    eprintln!("peak RSS with 300 stalled subscribers: {peak_mb} MB");
    assert!(peak_mb < 120, "peak RSS {peak_mb} MB");
    // A reader still gets live events (generous: CI shares 2 cores).
    let mut reader = SseStream::open(&addr, "/events?topic=test/seq", &[]);
    assert!(
        reader.next_event(Duration::from_secs(20)).is_some(),
        "no event for a new reader; log:\n{}",
        source.log()
    );
    drop(stalled);
}

#[test]
fn a_stalled_subscriber_does_not_stop_another() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "5000"]);
    let addr = source.unix();
    // Subscribes, then never reads: its socket buffers fill up within a second.
    let mut stalled = Conn::connect(&addr).unwrap();
    {
        use std::io::Write;
        stalled
            .write_all(
                b"GET /events?topic=. HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n",
            )
            .unwrap();
    }
    // Subscribed once the answer's head and first comment arrive; no more is read.
    stalled
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut head = Vec::new();
    wait_for(Duration::from_secs(5), || {
        use std::io::Read;
        let mut buf = [0u8; 256];
        if let Ok(n) = stalled.read(&mut buf) {
            head.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&head)
            .contains(": subscribed")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the stalled subscriber was not subscribed: {head:?}"));

    let mut reader = SseStream::open(&addr, "/events?topic=test/seq", &[]);
    let (_, first) = reader.next_event(Duration::from_secs(5)).unwrap();
    let start = first["data"].as_u64().unwrap();
    let mut last_id = 0;
    // 3 s at 5,000/s: far more than the stalled socket's buffers and the
    // live channel hold.
    let numbers = read_numbers_until(&mut reader, start + 15_000, &mut last_id);
    let expected: Vec<u64> = (start + 1..=start + 15_000).collect();
    assert!(numbers == expected, "the reading subscriber missed events");
    drop(stalled);
}

#[test]
fn a_subscriber_that_falls_behind_catches_up_from_history_or_is_told_what_it_lost() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "5000", "--history", "8000"]);
    let addr = source.unix();
    let mut slow = SseStream::open(&addr, "/events?topic=test/seq", &[]);
    let (_, first) = slow.next_event(Duration::from_secs(5)).unwrap();
    // Stop reading for 3 s (15,000 events: beyond the live channel and the history).
    std::thread::sleep(Duration::from_secs(3));
    let mut prev = first["data"].as_u64().unwrap();
    let mut told = false;
    let mut gaps = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match slow
            .next_item(Duration::from_secs(5))
            .expect("the slow stream goes on")
        {
            SseItem::Comment(c) => told |= c.starts_with("lagged: events "),
            SseItem::Event { data, .. } => {
                let n = serde_json::from_str::<Value>(&data).unwrap()["data"]
                    .as_u64()
                    .unwrap();
                assert!(n > prev, "in order: {n} after {prev}");
                if n != prev + 1 {
                    assert!(told, "a gap {prev}..{n} without a 'lagged' comment");
                    gaps += 1;
                    told = false;
                }
                prev = n;
            }
        }
    }
    assert!(gaps >= 1, "3 s of 5,000/s cannot fit in a history of 8,000");
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
    assert_eq!(
        stream.next_item(Duration::from_secs(3)),
        Some(SseItem::Comment("keep-alive".into()))
    );
}

#[test]
fn a_stale_socket_is_replaced() {
    let sb = Sandbox::new();
    let dir = sb.plugin_runtime_dir();
    fs::create_dir_all(&dir).unwrap();
    // A socket nothing listens on, as a killed process leaves it.
    drop(UnixListener::bind(dir.join("event-time.sock")).unwrap());
    fs::write(dir.join("event-time.pid"), "999999\n").unwrap();
    let source = EventTime::start(&sb, &[]);
    assert_eq!(http::get(&source.unix(), "/topics").status, 200);
    assert_eq!(
        fs::read_to_string(source.file("pid")).unwrap().trim(),
        source.pid().to_string()
    );
}

#[test]
fn a_live_instance_is_refused_and_left_running() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &[]);
    let (code, _, err) = run_to_end(&mut sb.command(plugin_bin("app-event-time")));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already running"), "{err}");
    assert!(err.contains(&format!("pid {}", source.pid())), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(source.socket().exists());
    assert!(source.file("pid").exists());
    assert_eq!(http::get(&source.unix(), "/topics").status, 200);
    // Another name is another instance.
    let other = EventTime::start(&sb, &["--name", "event-time-2"]);
    assert_eq!(http::get(&other.unix(), "/topics").status, 200);
}

#[test]
fn sigterm_and_sigint_remove_the_files_and_exit_0() {
    let sb = Sandbox::new();
    for (signal, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let mut source = EventTime::start(&sb, &["--name", name, "--listen", "127.0.0.1:0"]);
        let _ = source.tcp();
        // A connected subscriber must not hold up the exit.
        let _stream = SseStream::open(&source.unix(), "/events", &[]);
        for ext in ["sock", "pid", "listen"] {
            assert!(source.file(ext).exists(), "{name}.{ext}");
        }
        let status = source.signal(signal);
        assert_eq!(status.code(), Some(0), "{name}: {}", source.log());
        for ext in ["sock", "pid", "listen"] {
            assert!(!source.file(ext).exists(), "{name}.{ext} removed");
        }
    }
}

/// The signal mask survives exec: started by `app`, which execs it with
/// SIGTERM blocked, it still stops on SIGTERM.
#[test]
fn sigterm_stops_it_even_when_started_with_the_signal_blocked() {
    let sb = Sandbox::new();
    let socket = sb.plugin_runtime_dir().join("blocked.sock");
    let status = common::process::stopped_by_sigterm_through_app(
        &sb,
        &["event-time", "--name", "blocked"],
        socket,
    );
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}
