//! The API under abuse from many clients: idle connections cannot starve
//! it, a change completes when the client hangs up, odd requests get JSON,
//! routes and the metrics page are bounded.

use crate::common;

use std::time::{Duration, Instant};

use common::{wait_for, Sandbox};
use serde_json::{json, Value};

use super::{repeater, routes_of};

#[test]
fn idle_connections_cannot_starve_the_api() {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    let sb = Sandbox::new();
    let r = repeater(&sb, "idle")
        .args(["--max-connections", "16"])
        .start();
    let addr = r.url().trim_start_matches("http://").to_string();
    // First, before the flood below fills the kernel's queue (a connection
    // made then may sit unaccepted, its clock not started): a kept-alive
    // connection that sits idle after an answer is closed on the 30 s
    // header-read clock, and so is one that never sends a request head.
    // Both are measured in threads while the rest of the test runs.
    let mut kept = TcpStream::connect(&addr).expect("connect");
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("send");
    kept.set_read_timeout(Some(Duration::from_secs(45)))
        .expect("timeout");
    let idle_close = std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(kept);
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut reader, &mut line).unwrap_or(0) == 0 {
                return Err(format!("closed before the answer: {head}"));
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0u8; len];
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
        if !head.starts_with("HTTP/1.1 200")
            || head.to_ascii_lowercase().contains("connection: close")
        {
            return Err(format!("not a kept-alive answer: {head}"));
        }
        let idle_from = Instant::now();
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        Ok((idle_from.elapsed(), rest.len()))
    });

    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(45)))
        .expect("timeout");
    let no_head_close = std::thread::spawn(move || {
        let t = Instant::now();
        let mut buf = [0u8; 64];
        let read = s.read(&mut buf);
        let waited = t.elapsed();
        match read {
            Ok(0) => Ok(waited),
            Ok(n) => Err(format!("expected the server to close, got {:?}", &buf[..n])),
            Err(e) => Err(format!("read failed after {waited:?}: {e}")),
        }
    });

    // Far more idle connections than the cap: the kernel queues the rest
    // (until its backlog is full; then connecting times out).
    let sock: std::net::SocketAddr = addr.parse().expect("address");
    let idle: Vec<TcpStream> = (0..100)
        .filter_map(|_| TcpStream::connect_timeout(&sock, Duration::from_millis(500)).ok())
        .collect();
    assert!(idle.len() >= 16, "only {} connections", idle.len());
    let full = wait_for(Duration::from_secs(10), || {
        r.log().contains("16 connections open").then_some(())
    });
    assert!(full.is_some(), "{}", r.log());
    // The unix socket has its own slots: it answers at once.
    let t = Instant::now();
    let (status, body) = r.get("/healthz");
    assert_eq!(status, 200, "{body}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(r.log().contains("16 connections open"), "{}", r.log());
    drop(idle);
    // Once they are gone, TCP answers again.
    let answered = wait_for(Duration::from_secs(10), || {
        let mut s = TcpStream::connect(&addr).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .ok()?;
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text.starts_with("HTTP/1.1 200").then_some(())
    });
    assert!(
        answered.is_some(),
        "TCP did not answer after the idle connections closed"
    );

    let waited = no_head_close
        .join()
        .expect("no-head thread")
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        waited >= Duration::from_secs(25) && waited < Duration::from_secs(44),
        "a connection without a request head closed after {waited:?}"
    );
    let (idle, extra) = idle_close
        .join()
        .expect("idle thread")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(extra, 0, "the idle connection got more bytes");
    assert!(
        idle >= Duration::from_secs(25) && idle < Duration::from_secs(44),
        "idle kept-alive connection closed after {idle:?}"
    );
}

/// The source topics in the repeater's state file, sorted.
fn state_file_topics(sb: &Sandbox, name: &str) -> Vec<String> {
    let path = sb
        .data_dir()
        .join("event-repeater")
        .join(format!("{name}.routes.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let doc: Value = serde_json::from_str(&text).unwrap_or(json!({"routes": []}));
    let mut topics: Vec<String> = doc["routes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["sourcetopic"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    topics.sort();
    topics
}

#[test]
fn a_change_completes_even_when_the_client_hangs_up_at_once() {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let sb = Sandbox::new();
    let r = repeater(&sb, "hangup").start();
    let send_and_close = |method: &str, path: &str, body: &str| {
        let mut s = UnixStream::connect(r.socket()).expect("connect");
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).expect("send");
        // Gone before any answer.
        drop(s);
    };
    // A change happens whole or not at all: after each hang-up the live
    // table and the state file agree.
    let live = || -> Vec<String> { routes_of(&r).into_iter().map(|(s, _)| s).collect() };
    for i in 0..30 {
        send_and_close(
            "POST",
            "/events",
            &format!(r#"{{"sourcetopic":"t/{i:02}"}}"#),
        );
        if i % 3 == 2 {
            send_and_close("DELETE", &format!("/events/t/{:02}", i - 1), "");
        }
        std::thread::sleep(Duration::from_millis(30));
        let agreed = wait_for(Duration::from_secs(5), || {
            let now = live();
            (state_file_topics(&sb, "hangup") == now).then_some(())
        });
        assert!(
            agreed.is_some(),
            "after request {i}: live {:?}, file {:?}",
            live(),
            state_file_topics(&sb, "hangup")
        );
    }
}

#[test]
fn api_answers_odd_requests_with_json() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "odd").env("APP_TOKEN", "tok").start();
    // A path that is not UTF-8 once decoded.
    let (status, body) = r.get("/events/%ff%fe");
    assert_eq!(status, 400, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!(v["status"], 400);
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("source topic")),
        "{v}"
    );
    // The bearer scheme is case-insensitive.
    let url = r.url();
    let addr = common::http::Addr::from_url(&url);
    // A URL over hyper's 64 KiB limit, and a head over its buffer: hyper
    // answers those itself, and still in JSON.
    let long_url = format!(
        "GET /events/{} HTTP/1.1\r\nHost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let big_head = format!(
        "GET /events HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "b".repeat(1 << 20)
    );
    for (request, status, says) in [
        (long_url, 414, "URL is too long"),
        (big_head, 431, "too large"),
    ] {
        let resp = common::http::send_raw(&addr, request.as_bytes());
        assert_eq!(resp.status, status, "{resp:?}");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        let v = resp.json();
        assert_eq!(v["status"], status);
        assert!(v["error"].as_str().is_some_and(|e| e.contains(says)), "{v}");
    }
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let resp = common::http::request(
            &addr,
            "GET",
            "/events",
            &[("Authorization", &format!("{scheme} tok"))],
        );
        assert_eq!(resp.status, 200, "{scheme}: {resp:?}");
    }
    let resp = common::http::request(&addr, "GET", "/events", &[("Authorization", "bearer nope")]);
    assert_eq!(resp.status, 401);
}

#[test]
fn max_routes_and_a_bounded_metrics_page() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "cap").args(["--max-routes", "1100"]).start();
    let many = |n: usize| {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"sourcetopic": format!("t/{i:05}"), "sinktopic": "/x"}))
            .collect();
        Value::Array(items).to_string()
    };
    let (status, body) = r.send_json("PUT", "/events?replace=true", &many(1050));
    assert_eq!(status, 200, "{body}");
    // Past the limit: refused whole, with a JSON error naming the flag.
    let (status, body) = r.send_json("PUT", "/events?replace=true", &many(1101));
    assert_eq!(status, 422, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON error");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("--max-routes")),
        "{v}"
    );
    let (status, _) = r.send_json(
        "POST",
        "/events",
        r#"[{"sourcetopic":"a"},{"sourcetopic":"b"}]"#,
    );
    assert_eq!(status, 201);
    let (status, _) = r.send_json("POST", "/events", &many(1101).replace("t/", "u/"));
    assert_eq!(status, 422);
    assert_eq!(routes_of(&r).len(), 1052);
    // /metrics: at most 1000 per-route series, and how many were left out.
    let m = r.metrics();
    let series = m
        .keys()
        .filter(|k| k.starts_with("app_event_repeater_route_events_total{"))
        .count();
    assert_eq!(series, 1000);
    assert_eq!(
        m.get("app_event_repeater_route_series_omitted"),
        Some(&52.0)
    );
}
