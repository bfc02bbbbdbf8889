//! JetStream conditions that retried for ever behind a `/healthz` that said
//! "ok" (issue 19, item 11), against real `nats-server` processes: a server
//! without JetStream and `--nats-replicas 3` on a single server refuse the
//! start (exit 1, one clear line), a server without JetStream met later is
//! reported once and in `/healthz`, and a stream the user made with
//! `max_msgs` and `discard new` is reported as full while its events are
//! kept, counted and all delivered once it has room.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::nats::{nats_args, read_stream, start_source};
use common::nats::NatsServer;
use common::repeater::Repeater;
use common::{free_port, plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

/// One JetStream API request over the NATS protocol (`PUB subject` with a
/// reply inbox), as the `nats` CLI would send it: the JSON answer.
pub(crate) fn js_api(port: u16, subject: &str, body: &Value) -> Value {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to nats-server");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut reader = BufReader::new(s.try_clone().expect("clone"));
    let mut info = String::new();
    reader.read_line(&mut info).expect("INFO");
    let body = body.to_string();
    write!(
        s,
        "CONNECT {{\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true}}\r\n\
         SUB _INBOX.app-test 1\r\nPUB {subject} _INBOX.app-test {}\r\n{body}\r\n",
        body.len()
    )
    .expect("send");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let mut line = String::new();
        reader.read_line(&mut line).expect("an answer");
        if line.starts_with("PING") {
            s.write_all(b"PONG\r\n").expect("PONG");
        } else if line.starts_with("MSG ") {
            let len: usize = line
                .split_whitespace()
                .last()
                .and_then(|n| n.parse().ok())
                .expect("a MSG length");
            let mut payload = vec![0u8; len + 2];
            reader.read_exact(&mut payload).expect("the payload");
            return serde_json::from_slice(&payload[..len]).expect("a JSON answer");
        } else {
            assert!(
                !line.starts_with("-ERR") && !line.starts_with("HMSG"),
                "{line}"
            );
        }
    }
    panic!("no answer to {subject} within 10 s");
}

/// `app-event-repeater run ARGS…` (at the default log level) expected to
/// refuse the start: its exit code and stderr.
fn refused(sb: &Sandbox, args: &[String]) -> (i32, String) {
    let mut cmd = sb.command(plugin_bin("app-event-repeater"));
    let at = args.iter().position(|a| a == "--log");
    let args: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| !matches!(at, Some(at) if *i == at || *i == at + 1))
        .map(|(_, a)| a)
        .collect();
    cmd.arg("run").args(["--name", "refused"]).args(args);
    let ran = common::run::Run::new(cmd).assert();
    (ran.exit(), ran.stderr.clone())
}

#[test]
fn a_server_without_jetstream_is_refused_at_start_and_reported_when_met_later() {
    let port = free_port();
    let Some(server) = NatsServer::start_without_jetstream(port) else {
        return;
    };
    let sb = Sandbox::new();
    let none = sb.runtime_dir().join("no-source.sock");
    let args = nats_args(&none.to_string_lossy(), &[server.url()]);
    let t = Instant::now();
    let (code, stderr) = refused(&sb, &args);
    assert_eq!(code, 1, "{stderr}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(
        stderr.contains("no JetStream")
            && stderr.contains("-js")
            && stderr.contains("does not start"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    // Positive control: core NATS (--qos 0) needs no JetStream and starts.
    let mut core = args.clone();
    let qos = core.iter().position(|a| a == "--qos").expect("--qos");
    core[qos + 1] = "0".into();
    let r = Repeater::builder(&sb, "core").args(&core).start();
    let connected = wait_for(Duration::from_secs(10), || {
        (r.healthz()["sink"]["connected"] == true).then_some(())
    });
    assert!(connected.is_some(), "{}", r.log());
    drop(r);
    drop(server);

    // Met later: the server is away at start, then comes without JetStream.
    let src_port = free_port();
    let _source = start_source(src_port, 200, 200, None);
    let url = format!("http://127.0.0.1:{src_port}");
    // At --log 4: each try again is said at debug.
    let mut args = nats_args(&url, &[format!("nats://127.0.0.1:{port}")]);
    let log = args.iter().position(|a| a == "--log").expect("--log");
    args[log + 1] = "4".into();
    let r = Repeater::builder(&sb, "later").args(args).start();
    let Some(_server) = NatsServer::start_without_jetstream(port) else {
        return;
    };
    let h = wait_for(Duration::from_secs(20), || {
        let h = r.healthz();
        h["sink"]["problem"]
            .as_str()?
            .contains("no JetStream")
            .then_some(h)
    })
    .unwrap_or_else(|| panic!("no sink.problem: {}", r.log()));
    assert_eq!(h["status"], "degraded", "{h}");
    assert_eq!(h["sink"]["connected"], true, "{h}");
    assert_eq!((r.metric("sink_problem") as u64), 1);
    // Retried with backoff for several seconds more: said once.
    let retries = |log: &str| log.matches("JetStream still refuses, trying again").count();
    let before = retries(&r.log());
    std::thread::sleep(Duration::from_secs(6));
    // The positive control: it was tried again meanwhile (each try met the
    // same refusal, said at debug), so a warning per try would be there.
    let retried = wait_for(Duration::from_secs(10), || {
        (retries(&r.log()) >= before + 2).then_some(())
    });
    assert!(retried.is_some(), "not tried again: {}", r.log());
    let log = r.log();
    assert_eq!(log.matches("no JetStream").count(), 1, "{log}");
    assert!(
        !log.contains("requested JetStream resource does not exist; retrying"),
        "{log}"
    );
    assert_eq!((r.metric("events_acked_total") as u64), 0);
}

#[test]
fn replicas_over_one_on_a_single_server_are_refused_at_start() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let none = sb.runtime_dir().join("no-source.sock");
    let mut args = nats_args(&none.to_string_lossy(), &[server.url()]);
    args.extend(["--nats-replicas".into(), "3".into()]);
    let (code, stderr) = refused(&sb, &args);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("--nats-replicas 3") && stderr.contains("not in a cluster"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    // Positive control: one replica starts; and a stream that exists is
    // used as it is, whatever --nats-replicas says.
    args.truncate(args.len() - 2);
    let r = Repeater::builder(&sb, "one").args(&args).start();
    assert_eq!(r.healthz()["status"], "degraded"); // no source
    drop(r);
    let created = js_api(
        server.port,
        "$JS.API.STREAM.CREATE.EVENTS",
        &json!({"name": "EVENTS", "subjects": ["bench.>"], "storage": "memory", "num_replicas": 1}),
    );
    assert!(created["error"].is_null(), "{created}");
    args.extend(["--nats-replicas".into(), "3".into()]);
    let r = Repeater::builder(&sb, "existing").args(&args).start();
    assert!(r.healthz()["sink"]["problem"].is_null());
}

#[test]
fn a_full_stream_is_reported_its_events_kept_and_delivered_once_it_has_room() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let config = |max_msgs: i64| {
        json!({"name": "FULL", "subjects": ["bench.>"], "storage": "memory",
               "num_replicas": 1, "max_msgs": max_msgs, "discard": "new",
               "duplicate_window": 120_000_000_000u64})
    };
    let created = js_api(server.port, "$JS.API.STREAM.CREATE.FULL", &config(20));
    assert!(created["error"].is_null(), "{created}");
    let sb = Sandbox::new();
    let src_port = free_port();
    let _source = start_source(src_port, 500, 100, None);
    let mut args = nats_args(&format!("http://127.0.0.1:{src_port}"), &[server.url()]);
    args.extend(["--nats-stream".into(), "FULL".into()]);
    let r = Repeater::builder(&sb, "full").args(&args).start();

    let h = wait_for(Duration::from_secs(20), || {
        let h = r.healthz();
        let full = h["sink"]["problem"].as_str()?.contains("FULL is full");
        // Read after the count, so the snapshot holds all 100 (read before
        // it, one event could still be on its way in).
        let kept = |h: &serde_json::Value| {
            h["buffered"].as_u64().unwrap_or(0) + h["inflight"].as_u64().unwrap_or(0)
        };
        let all_in = full && (r.metric("events_received_total") as u64) == 100;
        let h = r.healthz();
        (all_in && kept(&h) == 80).then_some(h)
    })
    .unwrap_or_else(|| {
        panic!(
            "not reported full with 80 kept: {}\n{}",
            r.healthz(),
            r.log()
        )
    });
    assert_eq!(h["status"], "degraded", "{h}");
    assert_eq!((r.metric("events_acked_total") as u64), 20);
    assert!((r.metric("sink_refused_total{reason=\"stream_full\"}") as u64) > 0);
    assert_eq!((r.metric("sink_problem") as u64), 1);
    // The 80 that do not fit are kept (the wait above), not dropped or failed.
    assert_eq!(
        (r.metric("events_dropped_total{reason=\"overflow\"}") as u64),
        0
    );
    assert_eq!(
        (r.metric("events_failed_total{reason=\"sink_error\"}") as u64),
        0
    );
    // Retried with backoff for a while: said once, and the refusals counted.
    let refused_before = r.metric("sink_refused_total{reason=\"stream_full\"}") as u64;
    std::thread::sleep(Duration::from_secs(6));
    assert!((r.metric("sink_refused_total{reason=\"stream_full\"}") as u64) > refused_before);
    let log = r.log();
    assert_eq!(log.matches("FULL is full").count(), 1, "{log}");

    // Room again: every kept event is stored, once, and the report clears.
    let updated = js_api(server.port, "$JS.API.STREAM.UPDATE.FULL", &config(1000));
    assert!(updated["error"].is_null(), "{updated}");
    let h = wait_for(Duration::from_secs(30), || {
        let h = r.healthz();
        ((r.metric("events_acked_total") as u64) == 100 && h["sink"]["problem"].is_null())
            .then_some(h)
    })
    .unwrap_or_else(|| panic!("not delivered after the room came back: {}", r.log()));
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!((r.metric("sink_problem") as u64), 0);
    assert!(
        r.log().contains("the stream FULL has room again"),
        "{}",
        r.log()
    );
    let stored = read_stream(&server.url(), "FULL", 100);
    assert_eq!(stored["missing"], 0, "{stored}");
    assert_eq!(stored["duplicates"], 0, "{stored}");
}

#[test]
fn replicas_over_the_cluster_size_are_reported_and_the_events_kept() {
    let Some(servers) = NatsServer::cluster(3) else {
        return;
    };
    let urls: Vec<String> = servers.iter().map(NatsServer::url).collect();
    let sb = Sandbox::new();
    let src_port = free_port();
    let _source = start_source(src_port, 200, 50, None);
    let mut args = nats_args(&format!("http://127.0.0.1:{src_port}"), &urls);
    args.extend(["--nats-replicas".into(), "5".into()]);
    // A cluster may grow (or have servers down for now): not a start-up
    // failure, but said, shown and retried.
    let r = Repeater::builder(&sb, "r5").args(&args).start();
    let h = wait_for(Duration::from_secs(30), || {
        let h = r.healthz();
        let p = h["sink"]["problem"].as_str()?.contains("--nats-replicas 5");
        // `received` counts an event before the buffer takes it: wait for
        // both (seen as 49 of 50 held, 1 run in 4).
        let held = h["buffered"].as_u64()? + h["inflight"].as_u64()?;
        (p && (r.metric("events_received_total") as u64) == 50 && held == 50).then_some(h)
    })
    .unwrap_or_else(|| panic!("not reported: {}", r.log()));
    assert_eq!(h["status"], "degraded", "{h}");
    let problem = h["sink"]["problem"].as_str().unwrap();
    assert!(problem.contains("fewer than 5 servers"), "{problem}");
    assert_eq!(
        h["buffered"].as_u64().unwrap() + h["inflight"].as_u64().unwrap(),
        50,
        "{h}"
    );
    std::thread::sleep(Duration::from_secs(4));
    let log = r.log();
    assert_eq!(log.matches("--nats-replicas 5").count(), 1, "{log}");
    assert_eq!(
        (r.metric("events_failed_total{reason=\"sink_error\"}") as u64),
        0
    );
    assert_eq!(
        (r.metric("events_dropped_total{reason=\"overflow\"}") as u64),
        0
    );
}

#[test]
fn events_over_the_streams_max_msg_size_are_counted_not_retried_for_ever() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let config = |max_msg_size: i64| {
        json!({"name": "SMALL", "subjects": ["bench.>"], "storage": "memory",
               "num_replicas": 1, "max_msg_size": max_msg_size,
               "duplicate_window": 120_000_000_000u64})
    };
    let created = js_api(server.port, "$JS.API.STREAM.CREATE.SMALL", &config(100));
    assert!(created["error"].is_null(), "{created}");
    // 200 events of 300 bytes at 20/s: over the stream's limit until the
    // test raises it.
    let src_port = free_port();
    let mut cmd = std::process::Command::new(plugin_bin("loadgen"));
    cmd.args(["sse", "--listen", &format!("127.0.0.1:{src_port}")])
        .args([
            "--rate", "20", "--count", "200", "--size", "300", "--warmup", "0",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _source = common::process::Proc::spawn("loadgen sse", &mut cmd);
    let up = wait_for(Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", src_port)).ok()
    });
    assert!(up.is_some(), "loadgen sse did not listen");
    let sb = Sandbox::new();
    let mut args = nats_args(&format!("http://127.0.0.1:{src_port}"), &[server.url()]);
    args.extend(["--nats-stream".into(), "SMALL".into()]);
    let r = Repeater::builder(&sb, "small").args(&args).start();
    let too_large = "events_failed_total{reason=\"too_large\"}";
    let refused = wait_for(Duration::from_secs(20), || {
        ((r.metric(too_large) as u64) >= 10).then_some(())
    });
    assert!(refused.is_some(), "none refused: {}", r.log());
    // Not held: nothing waits for a resend that could never be stored.
    let updated = js_api(server.port, "$JS.API.STREAM.UPDATE.SMALL", &config(10_000));
    assert!(updated["error"].is_null(), "{updated}");
    let done = wait_for(Duration::from_secs(30), || {
        let acked = r.metric("events_acked_total") as u64;
        (acked + (r.metric(too_large) as u64) == 200).then_some(acked)
    })
    .unwrap_or_else(|| panic!("not all accounted for: {}", r.log()));
    let failed = r.metric(too_large) as u64;
    assert!(done >= 50, "only {done} stored after the limit was raised");
    let h = r.healthz();
    assert_eq!(
        h["buffered"].as_u64().unwrap() + h["inflight"].as_u64().unwrap(),
        0,
        "{h}"
    );
    // Exactly the refused ones are missing from the stream, none twice.
    let stored = read_stream(&server.url(), "SMALL", 200);
    assert_eq!(stored["missing"], failed, "{stored}");
    assert_eq!(stored["duplicates"], 0, "{stored}");
    assert!(
        r.log().contains("over the stream's max_msg_size"),
        "{}",
        r.log()
    );
}
