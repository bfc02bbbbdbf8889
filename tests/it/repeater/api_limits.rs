//! The repeater's API against clients that stall or send what it does not
//! serve (issue 19, items 4 and 11): a request body must arrive within
//! `--request-timeout`, a body over the limit is refused before it is read
//! (also after `Expect: 100-continue`), and an HTTP/2 preface gets the JSON
//! 400 every other malformed request gets, on the repeater and on
//! event-time.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::event_time::EventTime;
use common::repeater::Repeater;
use common::Sandbox;

/// A POST whose head promises 20 bytes of body, then only `[`.
const STALLED: &[u8] = b"POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n[";

/// Everything the server sends until it closes or `timeout` passes.
fn read_all(s: &mut impl Read, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    let mut chunk = [0u8; 4096];
    while Instant::now() < deadline {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The JSON body of a whole answer `text`.
fn json_body(text: &str) -> serde_json::Value {
    let (_, body) = text
        .rsplit_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no body in {text:?}"));
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
}

/// A unix connection whose reads wait at most 200 ms at a time.
fn unix_conn(path: &std::path::Path) -> UnixStream {
    let s = UnixStream::connect(path).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    s
}

/// A TCP connection whose reads wait at most 200 ms at a time.
fn tcp_conn(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    s
}

/// `GET /healthz` on a fresh connection from `connect`, in a thread: how
/// When the answer came, or `None` within `limit`.
fn healthz_in_thread<S: Read + Write + Send + 'static>(
    connect: impl FnOnce() -> S + Send + 'static,
    head: String,
    limit: Duration,
) -> std::thread::JoinHandle<Option<Instant>> {
    std::thread::spawn(move || {
        let mut s = connect();
        s.write_all(head.as_bytes()).ok()?;
        let answer = read_all(&mut s, limit);
        answer
            .starts_with("HTTP/1.1 200")
            .then(Instant::now)
            .filter(|_| answer.contains("\"status\""))
    })
}

/// Each stalled connection got the JSON 408 naming the flag.
fn assert_timed_out(conns: Vec<impl Read + Write>, what: &str) {
    let n = conns.len();
    for (i, mut c) in conns.into_iter().enumerate() {
        // Generous: the connections over the 256 slots are only accepted
        // once the first ones time out, and the machine may be loaded.
        let answer = read_all(&mut c, Duration::from_secs(15));
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "{what} connection {i} of {n}: {answer:?}"
        );
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer:?}"
        );
        let body = json_body(&answer);
        assert_eq!(body["status"], 408, "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("--request-timeout"),
            "{body}"
        );
    }
}

#[test]
fn stalled_request_bodies_time_out_and_the_api_answers_again() {
    let sb = Sandbox::new();
    let r = Repeater::builder(&sb, "stall")
        .sinkprotocol("stderr")
        .no_source()
        .args([
            "--listen",
            "127.0.0.1:0",
            "--token",
            "s3cret",
            "--request-timeout",
            "2s",
        ])
        .start();
    let tcp_addr = r.url().trim_start_matches("http://").to_string();
    let with_token = String::from_utf8(STALLED.to_vec()).unwrap().replacen(
        "Host: x\r\n",
        "Host: x\r\nAuthorization: Bearer s3cret\r\n",
        1,
    );

    // 300 connections on each listener send a head and `[`, then nothing:
    // more than the 256 slots of each.
    let started = Instant::now();
    let unix: Vec<UnixStream> = (0..300)
        .map(|_| {
            let mut s = unix_conn(&r.socket());
            s.write_all(STALLED).expect("send");
            s
        })
        .collect();
    let tcp: Vec<TcpStream> = (0..300)
        .map(|_| {
            let mut s = tcp_conn(&tcp_addr);
            s.write_all(with_token.as_bytes()).expect("send");
            s
        })
        .collect();
    let socket = r.socket();
    let unix_health = healthz_in_thread(
        move || unix_conn(&socket),
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".into(),
        Duration::from_secs(30),
    );
    let addr = tcp_addr.clone();
    let tcp_health = healthz_in_thread(
        move || tcp_conn(&addr),
        "GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nConnection: close\r\n\r\n"
            .into(),
        Duration::from_secs(30),
    );
    for (what, health) in [("unix", unix_health), ("tcp", tcp_health)] {
        let answered = health.join().expect("thread").unwrap_or_else(|| {
            panic!(
                "{what}: /healthz got no answer within 30 s; log:\n{}",
                r.log()
            )
        });
        // It waited for the stalled connections (the slots were full: the
        // starvation of the issue happened), and was answered once the
        // first bodies timed out, 2 s after they were accepted.
        let took = answered - started;
        assert!(
            took >= Duration::from_millis(2000),
            "{what}: /healthz answered {took:?} after the flood began: the slots were not full"
        );
        assert!(
            took < Duration::from_secs(20),
            "{what}: /healthz answered only after {took:?}"
        );
    }
    assert_timed_out(unix, "unix");
    assert_timed_out(tcp, "tcp");
    eprintln!(
        "600 stalled bodies timed out; /healthz answered, {:?} after the flood",
        started.elapsed()
    );

    // A body that arrives slowly but within the timeout is taken.
    let mut s = unix_conn(&r.socket());
    let body = r#"[{"sourcetopic":"a/b"}]"#;
    let head = format!(
        "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("send");
    s.write_all(&body.as_bytes()[..5]).expect("send");
    std::thread::sleep(Duration::from_millis(1000));
    s.write_all(&body.as_bytes()[5..]).expect("send");
    let answer = read_all(&mut s, Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer:?}");
    // A wrong token is refused at once: the body is never waited for.
    let mut s = tcp_conn(&tcp_addr);
    let t = Instant::now();
    s.write_all(with_token.replace("s3cret", "wrong").as_bytes())
        .expect("send");
    let answer = read_all(&mut s, Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer:?}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[test]
fn bodies_over_the_limit_are_refused_before_they_are_read() {
    let sb = Sandbox::new();
    let r = Repeater::builder(&sb, "big")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let ask = |head: &str| {
        let mut s = UnixStream::connect(r.socket()).expect("connect");
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("timeout");
        s.write_all(head.as_bytes()).expect("send");
        let t = Instant::now();
        (read_all(&mut s, Duration::from_secs(3)), t.elapsed(), s)
    };
    // A Content-Length over 1 MiB and no body at all: 413 at once.
    let (answer, took, _) = ask(
        "PUT /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048577\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
    assert!(
        json_body(&answer)["error"]
            .as_str()
            .unwrap()
            .contains("over the limit of 1048576 bytes"),
        "{answer}"
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    // The same with Expect: 100-continue: the 413 instead of 100 Continue.
    let (answer, _, _) = ask(
        "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\nExpect: 100-continue\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
    assert!(!answer.contains("100 Continue"), "{answer:?}");
    // Positive control: a body within the limit is asked for with
    // 100 Continue, then taken.
    let body = r#"{"sourcetopic":"x/y"}"#;
    let mut s = UnixStream::connect(r.socket()).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    write!(
        s,
        "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .expect("send");
    let interim = read_all(&mut s, Duration::from_secs(1));
    assert!(interim.starts_with("HTTP/1.1 100 Continue"), "{interim:?}");
    s.write_all(body.as_bytes()).expect("send");
    let answer = read_all(&mut s, Duration::from_secs(5));
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer:?}");
    let (status, routes) = r.get("/events");
    assert_eq!(status, 200);
    assert!(routes.contains("x/y"), "{routes}");
}

#[test]
fn answers_nobody_reads_time_out_and_the_api_answers_again() {
    let sb = Sandbox::new();
    let r = Repeater::builder(&sb, "unread")
        .sinkprotocol("stderr")
        .no_source()
        .args(["--request-timeout", "2s", "--max-connections", "16"])
        .start();
    // 10,000 routes: GET /events answers about 500 KB, more than a unix
    // socket buffers for a reader that takes nothing.
    let routes: Vec<serde_json::Value> = (0..10_000)
        .map(|i| serde_json::json!({"sourcetopic": format!("t/{i:05}"), "sinktopic": format!("s/{i:05}")}))
        .collect();
    let (status, body) = r.send_json(
        "PUT",
        "/events?replace=true",
        &serde_json::Value::from(routes).to_string(),
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.len() > 400_000, "{}", body.len());

    // 20 clients ask for it and read nothing: more than the 16 slots.
    let started = Instant::now();
    let unread: Vec<UnixStream> = (0..20)
        .map(|_| {
            let mut s = unix_conn(&r.socket());
            s.write_all(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                .expect("send");
            s
        })
        .collect();
    let socket = r.socket();
    let health = healthz_in_thread(
        move || unix_conn(&socket),
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".into(),
        Duration::from_secs(30),
    );
    let answered = health
        .join()
        .expect("thread")
        .unwrap_or_else(|| panic!("/healthz got no answer within 30 s; log:\n{}", r.log()));
    let took = answered - started;
    // It waited while the slots were held (2 s of no progress), no longer.
    assert!(
        took >= Duration::from_millis(2000),
        "/healthz answered {took:?} after the flood: the slots were not full"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    // The stalled answers were cut: what those clients read now ends
    // early. Which 16 of the 20 took the slots is the scheduler's choice
    // (the rest are served once the cuts free slots, and a client reading
    // by then gets its answer whole: the first client did, once in three
    // runs), so every client is read, all at once, and some answer must
    // have been cut.
    let readers: Vec<_> = unread
        .into_iter()
        .map(|mut s| std::thread::spawn(move || read_all(&mut s, Duration::from_secs(5))))
        .collect();
    let mut lengths = Vec::new();
    for reader in readers {
        let answer = reader.join().expect("reader");
        assert!(
            answer.starts_with("HTTP/1.1 200"),
            "{}",
            &answer[..answer.len().min(80)]
        );
        lengths.push(answer.len());
    }
    assert!(
        lengths.iter().any(|&n| n < body.len()),
        "no answer was cut short of the {} bytes of the body: {lengths:?}",
        body.len()
    );
    // A client that reads, however slowly overall, gets the whole answer.
    let (status, again) = r.get("/events");
    assert_eq!((status, again.len()), (200, body.len()));
}

/// The HTTP/2 connection preface, then an empty SETTINGS frame.
const H2_START: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

fn h2_answer(socket: &std::path::Path) -> String {
    let mut s = UnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    s.write_all(H2_START).expect("send");
    read_all(&mut s, Duration::from_secs(5))
}

#[test]
fn an_http2_preface_gets_the_json_400() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--name", "h2-src"]);
    let r = Repeater::builder(&sb, "h2")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    for (what, socket) in [("repeater", r.socket()), ("event-time", source.socket())] {
        let answer = h2_answer(&socket);
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{what}: {answer:?}"
        );
        let body = json_body(&answer);
        assert_eq!(body["status"], 400, "{what}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains("HTTP/2"),
            "{what}: {body}"
        );
    }
    // Both still serve HTTP/1.1 on the same sockets.
    assert_eq!(r.get("/healthz").0, 200);
    let topics = common::http::get(&source.unix(), "/topics");
    assert_eq!(topics.status, 200, "{}", topics.body);
}
