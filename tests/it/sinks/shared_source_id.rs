//! Issue 30, item 4: two different sources, each with SSE ids 1..500, one
//! repeater each, both `--source-id shared`, into one JetStream stream.
//! Their `Nats-Msg-Id`s collide, so the stream keeps one event per id and
//! drops the other as a duplicate. That used to be silent (each repeater
//! counted 500 acknowledged); now each duplicate is counted
//! (`events_duplicate_total`, `/healthz` `sink.duplicates`), those whose
//! stored message differs in `events_duplicate_conflict_total`, and a
//! repeater that finds one warns that another writer shares its id.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::nats::NatsServer;
use common::process::Proc;
use common::repeater::Repeater;
use common::{free_port, wait_for, Sandbox};
use serde_json::json;

use super::nats::{loadgen, nats_args};
use super::nats_trouble::js_api;

/// `loadgen sse` with events 1..=`count` on `topic`, on a free port.
fn source(topic: &str, count: u64) -> (Proc, String) {
    let port = free_port();
    let p = Proc::spawn(
        "loadgen sse",
        Command::new(loadgen())
            .args(["sse", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--rate", "500", "--count", &count.to_string()])
            .args(["--warmup", "0", "--topic", topic])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let up = wait_for(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "loadgen sse did not listen on {port}");
    (p, format!("http://127.0.0.1:{port}"))
}

#[test]
fn two_sources_under_one_source_id_are_counted_and_warned_about() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let n = 500;
    let (_a_src, a_url) = source("site/a", n);
    let (_b_src, b_url) = source("site/b", n);
    let start = |name: &str, url: &str| {
        let mut args = nats_args(url, &[server.url()]);
        args.extend(["--source-id".into(), "shared".into()]);
        Repeater::builder(&sb, name).args(&args).start()
    };
    let a = start("a", &a_url);
    let b = start("b", &b_url);
    for r in [&a, &b] {
        let done = wait_for(Duration::from_secs(60), || {
            ((r.metric("events_acked_total") as u64) == n).then_some(())
        });
        assert!(done.is_some(), "not all acknowledged: {}", r.log());
    }
    let info = js_api(server.port, "$JS.API.STREAM.INFO.EVENTS", &json!({}));
    let stored = info["state"]["messages"].as_u64().expect("messages");
    // One event per id is stored, the other is lost: the loss the counts
    // and the warning explain.
    assert_eq!(stored, n, "{info}");
    let dups =
        (a.metric("events_duplicate_total") as u64) + (b.metric("events_duplicate_total") as u64);
    assert_eq!(
        dups,
        2 * n - stored,
        "every lost event counted as a duplicate"
    );
    let conflicts = wait_for(Duration::from_secs(10), || {
        let c = (a.metric("events_duplicate_conflict_total") as u64)
            + (b.metric("events_duplicate_conflict_total") as u64);
        (c > 0).then_some(c)
    });
    assert!(
        conflicts.is_some(),
        "no conflict found\n{}\n{}",
        a.log(),
        b.log()
    );
    let (ha, hb) = (a.healthz(), b.healthz());
    let healthz_dups =
        ha["sink"]["duplicates"].as_u64().unwrap() + hb["sink"]["duplicates"].as_u64().unwrap();
    assert_eq!(healthz_dups, dups, "{ha}\n{hb}");
    let logs = format!("{}\n{}", a.log(), b.log());
    let warned = logs
        .matches("another writer with --source-id \"shared\"")
        .count();
    // Rate limited: at most once a minute per repeater.
    assert!((1..=2).contains(&warned), "{logs}");
}

/// The other side: two repeaters of one source sharing the id is what the
/// id is for (`app-event-time` sends every subscriber the same bytes). Their
/// duplicates are counted, and none is a conflict.
#[test]
fn two_repeaters_of_one_source_sharing_the_id_warn_of_nothing() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let _src = common::event_time::EventTime::start(&sb, &["--rate", "200", "--log", "3"]);
    let start = |name: &str| {
        let mut args = nats_args("event-time", &[server.url()]);
        args.extend(["--source-id".into(), "shared".into()]);
        Repeater::builder(&sb, name).args(&args).start()
    };
    let a = start("a");
    let b = start("b");
    let both = wait_for(Duration::from_secs(60), || {
        let dups = (a.metric("events_duplicate_total") as u64)
            + (b.metric("events_duplicate_total") as u64);
        (dups >= 300).then_some(dups)
    });
    assert!(
        both.is_some(),
        "the two repeaters' copies do not meet in the stream\n{}\n{}",
        a.log(),
        b.log()
    );
    // Checks run one at a time in the background: give them time.
    std::thread::sleep(Duration::from_secs(2));
    let conflicts = (a.metric("events_duplicate_conflict_total") as u64)
        + (b.metric("events_duplicate_conflict_total") as u64);
    assert_eq!(conflicts, 0);
    let logs = format!("{}\n{}", a.log(), b.log());
    assert!(!logs.contains("another writer"), "{logs}");
}
