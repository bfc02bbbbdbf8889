//! Text streams, and what servers answer besides a stream: `429` with
//! `Retry-After` (waited out), `204` (no reconnection, as the SSE standard
//! says), an HTML page with `200` (an error naming what was served).

use std::time::Duration;

use super::Feed;
use crate::common::repeater::Repeater;
use crate::common::{wait_for, Sandbox};

fn repeater<'a>(sb: &'a Sandbox, feed: &Feed, extra: &[&str]) -> Repeater<'a> {
    Repeater::builder(sb, "plain")
        .source(&format!("http://127.0.0.1:{}/prices?symbol=X", feed.port))
        .sinkprotocol("stderr")
        .args(["--allowall", "--topic-from", "event", "--payload", "text"])
        .args(extra)
        .start()
}

/// The stderr sink's events: (sink topic, event as printed).
fn relayed(r: &Repeater) -> Vec<(String, serde_json::Value)> {
    r.log()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| Some((v["sink_topic"].as_str()?.to_string(), v["event"].clone())))
        .collect()
}

#[test]
fn a_text_stream_is_relayed_as_it_came_under_its_event_name() {
    let sb = Sandbox::new();
    let Some(feed) = Feed::start(sb.path(), "text", 5, None) else {
        return;
    };
    let r = repeater(&sb, &feed, &[]);
    let got = wait_for(Duration::from_secs(10), || {
        let e = relayed(&r);
        (e.len() >= 5).then_some(e)
    })
    .unwrap_or_else(|| panic!("{}", r.log()));
    let want: Vec<(String, serde_json::Value)> = (1..=5)
        .map(|n| ("price".to_string(), format!("{}.5", 100 + n).into()))
        .collect();
    assert_eq!(got, want);
    // Without --payload text the same data is JSON (a number): relayed as
    // such; the positive control that the flag is what made it a string.
    drop(r);
    let sb2 = Sandbox::new();
    let r = Repeater::builder(&sb2, "json")
        .source(&format!("http://127.0.0.1:{}/prices?symbol=X", feed.port))
        .sinkprotocol("stderr")
        .args(["--allowall", "--topic-from", "const:px"])
        .start();
    let got = wait_for(Duration::from_secs(10), || {
        let e = relayed(&r);
        (e.len() >= 5).then_some(e)
    })
    .unwrap_or_else(|| panic!("{}", r.log()));
    assert_eq!(got[0], ("px".to_string(), serde_json::json!(101.5)));
}

#[test]
fn a_429_with_retry_after_is_waited_out() {
    let sb = Sandbox::new();
    let Some(feed) = Feed::start(sb.path(), "429", 3, None) else {
        return;
    };
    let r = repeater(&sb, &feed, &[]);
    let got = wait_for(Duration::from_secs(15), || {
        (relayed(&r).len() >= 3).then_some(())
    });
    assert!(got.is_some(), "{}", r.log());
    let q = feed.requests();
    let waited = q[1]["time"].as_f64().unwrap() - q[0]["time"].as_f64().unwrap();
    assert!(
        waited >= 2.0,
        "asked again after {waited:.2}s, not Retry-After: 2"
    );
    assert!(waited < 4.0, "waited {waited:.2}s for a Retry-After of 2");
    // The refusal was logged with its status and body, escaped.
    let log = r.log();
    assert!(
        log.contains("429 Too Many Requests: slow down \\x1b[31mplease"),
        "{log}"
    );
    assert!(!log.contains('\u{1b}'), "{log:?}");
}

#[test]
fn a_204_stops_the_reconnections_and_is_reported() {
    let sb = Sandbox::new();
    let Some(feed) = Feed::start(sb.path(), "204", 0, None) else {
        return;
    };
    let r = repeater(&sb, &feed, &[]);
    let reported = wait_for(Duration::from_secs(10), || {
        let h = r.healthz();
        h["source"]["problem"]
            .as_str()
            .filter(|p| p.contains("204 No Content"))
            .map(str::to_string)
    });
    assert!(reported.is_some(), "{}", r.log());
    // The positive control: the first request was made; then none for 2 s
    // (the backoff alone would have asked about 5 times).
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(feed.requests().len(), 1, "{:?}", feed.requests());
    assert_eq!(r.healthz()["status"], "degraded");
}

#[test]
fn an_html_page_is_an_error_naming_what_was_served() {
    let sb = Sandbox::new();
    let Some(feed) = Feed::start(sb.path(), "html", 0, None) else {
        return;
    };
    let r = repeater(&sb, &feed, &[]);
    let problem = wait_for(Duration::from_secs(10), || {
        r.healthz()["source"]["problem"]
            .as_str()
            .map(str::to_string)
    })
    .unwrap_or_else(|| panic!("{}", r.log()));
    assert!(
        problem.contains("Content-Type text/html; charset=utf-8, not text/event-stream"),
        "{problem}"
    );
    assert!(relayed(&r).is_empty());
}
