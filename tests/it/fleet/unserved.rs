//! Routes for topics the source does not serve: kept, with a warning on
//! every host; a topic list too large or too slow is not used.

use crate::common;

use std::time::{Duration, Instant};

use common::repeater::Repeater;
use common::Sandbox;
use serde_json::{json, Value};

use super::{manage, repeater, routes_of, write};

#[test]
fn a_route_for_a_topic_the_source_does_not_serve_is_kept_with_a_warning() {
    let sb = Sandbox::new();
    let _source = common::event_time::EventTime::start(&sb, &[]);
    // The default source: the event-time running in this sandbox.
    let r = Repeater::builder(&sb, "w").sinkprotocol("stderr").start();
    let run = manage(&sb, &["put", "timer/sec/7", "/x", "--name", "w"]);
    assert_eq!(run.exit(), 0, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(
        run.stderr.contains("warning")
            && run.stderr.contains("'timer/sec/7'")
            && run.stderr.contains("does not serve")
            && run.stderr.contains("timer/sec/1"),
        "{run:?}"
    );
    assert_eq!(
        routes_of(&r),
        vec![("timer/sec/7".to_string(), "/x".to_string())]
    );
    // Served topics and prefixes: no word.
    manage(&sb, &["put", "timer/sec/1", "/y", "--name", "w"]).ok();
    let file = write(
        sb.path(),
        "r.json",
        r#"[{"sourcetopic":"timer/"},{"sourcetopic":"timer/sec/1"}]"#,
    );
    manage(&sb, &["apply", "-f", &file, "--name", "w"]).ok();
}

/// A 60 KB source topic (the limit is 64 KiB) is taken (within the route limits) and warned
/// about in one short line, not one of 140 KB (issue 30).
#[test]
fn the_warning_for_a_huge_unserved_topic_is_one_short_line() {
    let sb = Sandbox::new();
    let _source = common::event_time::EventTime::start(&sb, &[]);
    let r = Repeater::builder(&sb, "huge")
        .sinkprotocol("stderr")
        .start();
    let topic = format!("t/{}", "x".repeat(60_000));
    // In a body: a path of 60 KB is over any URI limit.
    let file = write(
        sb.path(),
        "huge.json",
        &json!([{"sourcetopic": topic, "sinktopic": "/x"}]).to_string(),
    );
    let run = manage(&sb, &["apply", "-f", &file, "--name", "huge"]);
    assert_eq!(
        run.exit(),
        0,
        "{}",
        &run.stderr[..run.stderr.len().min(2000)]
    );
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(
        run.stderr.contains("does not serve") && run.stderr.contains("bytes more)"),
        "{}",
        &run.stderr[..run.stderr.len().min(2000)]
    );
    assert!(
        run.stderr.len() < 2048,
        "{} bytes of warning",
        run.stderr.len()
    );
    assert_eq!(routes_of(&r).len(), 1);
}

/// The check above for several hosts, each maybe on another machine: the
/// manager asks each repeater's `GET /source/topics` (the repeater asks its
/// source), and names the host in each warning. A repeater whose source is
/// down answers that endpoint 502 with a JSON error, and gets no warning.
#[test]
fn unserved_topics_are_warned_about_on_every_host() {
    let sb = Sandbox::new();
    let _source = common::event_time::EventTime::start(&sb, &[]);
    let rs: Vec<Repeater> = ["u1", "u2"]
        .iter()
        .map(|n| {
            Repeater::builder(&sb, n)
                .sinkprotocol("stderr")
                .args(["--listen", "127.0.0.1:0"])
                .start()
        })
        .collect();
    let lonely = repeater(&sb, "u3").start();
    let urls: Vec<String> = rs.iter().map(Repeater::url).collect();
    let hosts: Vec<String> = urls
        .iter()
        .cloned()
        .chain(std::iter::once(lonely.url()))
        .flat_map(|u| ["--host".to_string(), u])
        .collect();
    let with_hosts = |args: &[&str]| -> Vec<String> {
        args.iter()
            .map(|a| a.to_string())
            .chain(hosts.iter().cloned())
            .collect()
    };

    let (status, body) = rs[0].get("/source/topics");
    assert_eq!(status, 200, "{body}");
    let topics: Vec<String> = serde_json::from_str(&body).expect("a JSON array");
    assert!(topics.iter().any(|t| t == "timer/sec/1"), "{topics:?}");
    let (status, body) = lonely.get("/source/topics");
    assert_eq!(status, 502, "{body}");
    let v: Value = serde_json::from_str(&body).expect("a JSON error");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("cannot ask the source")),
        "{v}"
    );

    let args = with_hosts(&["put", "timer/sec/7", "/x"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = manage(&sb, &args);
    assert_eq!(run.exit(), 0, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 2, "{run:?}");
    for u in &urls {
        assert!(
            run.stderr
                .lines()
                .any(|l| l.contains(&format!("{u}: the route for 'timer/sec/7'"))
                    && l.contains("does not serve")
                    && l.contains("timer/sec/1")),
            "{u}: {run:?}"
        );
    }

    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"nope/"},{"sourcetopic":"timer/sec/1"}]"#,
    );
    let args = with_hosts(&["apply", "-f", &file]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = manage(&sb, &args);
    assert_eq!(run.exit(), 0, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 2, "{run:?}");
    assert!(run.stderr.lines().all(|l| l.contains("'nope/'")), "{run:?}");
}

#[test]
fn a_source_topic_list_too_large_or_too_slow_is_not_used_and_the_route_still_added() {
    let sb = Sandbox::new();
    let source = common::sse_source::ScriptedSource::start();
    let r = Repeater::builder(&sb, "lim")
        .sinkprotocol("stderr")
        .source(&source.url())
        .args(["--listen", "127.0.0.1:0"])
        .start();
    let put = |topic: &str| manage(&sb, &["put", topic, "/x", "--host", &r.url()]);
    let added = |topic: &str| r.get(&format!("/events/{topic}")).0 == 200;
    // Positive control: a small list in time, without 'a/b': warned.
    let small = serde_json::to_vec(&json!(["timer/sec/1"])).unwrap();
    source.serve_topics(&small, Duration::ZERO);
    let run = put("a/b");
    assert_eq!(run.exit(), 0, "{run:?}");
    assert!(
        run.stderr.contains("the route for 'a/b'") && run.stderr.contains("does not serve"),
        "{run:?}"
    );
    assert!(added("a/b"));
    // Over 256 KiB: the repeater refuses the list, no warning, route added.
    let many: Vec<String> = (0..20_000).map(|i| format!("t/{i:010}")).collect();
    let big = serde_json::to_vec(&many).unwrap();
    assert!(big.len() > 256 * 1024);
    source.serve_topics(&big, Duration::ZERO);
    let (status, body) = r.get("/source/topics");
    assert_eq!(status, 502, "{body}");
    let run = put("a/c");
    assert_eq!(run.exit(), 0, "{run:?}");
    assert!(!run.stderr.contains("does not serve"), "{run:?}");
    assert!(added("a/c"));
    // The small list sent 3 s after its head: past the 2 s, the same.
    source.serve_topics(&small, Duration::from_secs(3));
    let start = Instant::now();
    let (status, body) = r.get("/source/topics");
    assert_eq!(status, 502, "{body}");
    assert!(body.contains("did not finish within 2s"), "{body}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    let run = put("a/d");
    assert_eq!(run.exit(), 0, "{run:?}");
    assert!(!run.stderr.contains("does not serve"), "{run:?}");
    assert!(added("a/d"));
}
