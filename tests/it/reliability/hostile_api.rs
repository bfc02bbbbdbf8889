//! Hostile API input while events flow: every answer a 4xx, the API keeps
//! answering, nothing lost.

use crate::common;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::broker::Broker;
use common::repeater::raw_request;
use common::Sandbox;
use serde_json::Value;

use super::flow;

/// Malformed, oversized and slow-loris requests on the API socket while
/// events flow: every event is still delivered, the API keeps answering
/// (within 2 s), and nothing changed the routes.
#[test]
fn hostile_api_requests_while_events_flow() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 8_000;
    let (counter, _source, r, _) = flow(
        &sb,
        &broker,
        "rel-hostile",
        1000,
        count,
        "rel",
        &["--allowall"],
    );
    let socket = r.socket();
    counter.wait_distinct(500, Duration::from_secs(20));

    let stop = Arc::new(AtomicBool::new(false));
    // Slow loris: 64 connections sending a header byte every 200 ms.
    let mut lorises = Vec::new();
    for _ in 0..64 {
        let (socket, stop) = (socket.clone(), Arc::clone(&stop));
        lorises.push(thread::spawn(move || {
            let Ok(mut s) = UnixStream::connect(&socket) else {
                return;
            };
            let _ = s.write_all(b"POST /events HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            while !stop.load(Ordering::SeqCst) {
                if s.write_all(b"a").is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(200));
            }
        }));
    }

    let mut bad: Vec<(String, Vec<u8>)> = vec![
        ("garbage".into(), b"\x00\xff\xfe garbage \r\n\r\n".to_vec()),
        ("no HTTP version".into(), b"GET /events\r\n\r\n".to_vec()),
        (
            "header without colon".into(),
            b"GET /events HTTP/1.1\r\nnonsense\r\n\r\n".to_vec(),
        ),
        (
            "huge header".into(),
            [
                b"GET /events HTTP/1.1\r\nX-Big: ".to_vec(),
                vec![b'a'; 1 << 20],
                b"\r\n\r\n".to_vec(),
            ]
            .concat(),
        ),
        (
            "huge request line".into(),
            [
                b"GET /".to_vec(),
                vec![b'a'; 1 << 20],
                b" HTTP/1.1\r\n\r\n".to_vec(),
            ]
            .concat(),
        ),
        (
            "bad content-length".into(),
            b"POST /events HTTP/1.1\r\nContent-Length: x\r\n\r\n{}".to_vec(),
        ),
        (
            "truncated body".into(),
            b"POST /events HTTP/1.1\r\nContent-Length: 100\r\n\r\n[{\"sourcet".to_vec(),
        ),
        (
            "bad chunk size".into(),
            b"POST /events HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
                .to_vec(),
        ),
        ("oversized body".into(), {
            let body = format!("[{{\"sourcetopic\":\"{}\"}}]", "a".repeat(2 << 20));
            format!("POST /events HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes()
        }),
    ];
    for body in [
        "{",
        "[{\"sourcetopic\": 1}]",
        "[{\"sourcetopic\":\"\"}]",
        "[{\"sourcetopic\":\"a\",\"bogus\":true}]",
        "\"\\ud800\"",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "\u{0}",
    ] {
        bad.push((
            format!("bad JSON {body:?}"),
            format!(
                "POST /events HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        ));
    }
    // A deterministic stream of random bytes after a valid request line.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..100 {
        let mut req = b"PUT /events HTTP/1.1\r\n".to_vec();
        for _ in 0..(64 + i * 7) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            req.push((x >> 32) as u8);
        }
        req.extend_from_slice(b"\r\n\r\n");
        bad.push((format!("random header bytes #{i}"), req));
    }

    let mut worst = Duration::ZERO;
    for (i, (what, bytes)) in bad.iter().enumerate() {
        let answer = raw_request(&socket, bytes, Duration::from_secs(3));
        if let Some((status, body)) = &answer {
            assert!(
                (400..500).contains(status),
                "{what}: status {status} {body}"
            );
        }
        if what == "oversized body" {
            assert_eq!(
                answer.as_ref().map(|a| a.0),
                Some(413),
                "{what}: {answer:?}"
            );
        }
        if what.starts_with("bad JSON") {
            let (_, body) = answer.as_ref().expect("bad JSON gets an answer");
            let v: Value = serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("{what}: error body is not JSON ({e}): {body}"));
            assert!(v["error"].is_string(), "{what}: {body}");
        }
        if i % 10 == 0 {
            let t = Instant::now();
            let (status, _) = r.get("/healthz");
            assert_eq!(status, 200);
            worst = worst.max(t.elapsed());
        }
    }
    // The slow connections are still open: the API must still answer.
    for _ in 0..10 {
        let t = Instant::now();
        let (status, body) = r.get("/events");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body.trim(), "[]", "hostile input changed the routes");
        worst = worst.max(t.elapsed());
        thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    for l in lorises {
        let _ = l.join();
    }

    let sum = counter.finish(Duration::from_secs(40));
    eprintln!("subscriber: {sum}\nslowest API answer under attack: {worst:?}");
    assert!(
        worst < Duration::from_secs(2),
        "the API took {worst:?} to answer"
    );
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{}", r.log());
    assert_eq!(sum["distinct"], count);
}
