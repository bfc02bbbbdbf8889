//! A feed from an SSE server nobody here wrote: `sse-starlette` (PyPI) on
//! uvicorn, relayed into a private JetStream with a `kill -9` of the
//! repeater in the middle: every event stored once (resumed by
//! `Last-Event-ID` from the checkpoint, the replayed one deduplicated).

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::nats::NatsServer;
use crate::common::process::Proc;
use crate::common::repeater::Repeater;
use crate::common::tools::{require_tool, skip, REQUIRE_ALL};
use crate::common::{free_port, wait_for, Sandbox};
use crate::sinks::nats::read_stream;

const SERVER: &str = include_str!("starlette_server.py");

#[test]
fn an_sse_starlette_feed_is_stored_once_across_a_kill() {
    let Some(python) = require_tool("python3", "python3") else {
        return;
    };
    let import = Command::new(&python)
        .args(["-c", "import sse_starlette, uvicorn"])
        .stderr(Stdio::null())
        .status();
    if !import.is_ok_and(|s| s.success()) {
        let why = "sse-starlette is not installed (pip install sse-starlette uvicorn)";
        assert!(
            std::env::var(REQUIRE_ALL).as_deref() != Ok("1"),
            "{why} but {REQUIRE_ALL}=1"
        );
        skip(why);
        return;
    }
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let script = sb.path().join("starlette_server.py");
    std::fs::write(&script, SERVER).unwrap();
    let port = free_port();
    let count: u64 = 60;
    let _feed = Proc::spawn(
        "sse-starlette",
        Command::new(&python)
            .arg(&script)
            .args([&port.to_string(), &count.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit()),
    );
    let up = wait_for(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "uvicorn did not listen on {port}");
    let mut r = Repeater::builder(&sb, "starlette")
        .source(&format!("http://127.0.0.1:{port}/feed/numbers"))
        .sinkprotocol("nats")
        .sink(&server.url())
        .args([
            "--allowall",
            "--qos",
            "1",
            "--nats-stream",
            "STAR",
            "--log",
            "3",
        ])
        .start();
    let acked = |r: &Repeater, n: f64| {
        wait_for(Duration::from_secs(20), || {
            (r.metrics()["app_event_repeater_events_acked_total"] >= n).then_some(())
        })
        .is_some()
    };
    assert!(acked(&r, 20.0), "{}", r.log());
    r.kill9();
    r.restart();
    let stored = wait_for(Duration::from_secs(30), || {
        let s = read_stream(&server.url(), "STAR", count);
        (s["distinct"] == count).then_some(s)
    })
    .unwrap_or_else(|| panic!("not all stored: {}", r.log()));
    assert_eq!(stored["missing"], 0, "{stored}");
    assert_eq!(stored["duplicates"], 0, "{stored}");
    assert_eq!(stored["subjects"]["starlette.seq"], count, "{stored}");
    assert!(r.log().contains("resuming after event id"), "{}", r.log());
}
