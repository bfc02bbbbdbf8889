//! A Wikimedia-EventStreams-shaped feed over HTTPS (a CA made here,
//! `--source-ca-file`), on a path with a query, requiring two headers and a
//! bearer token, dropping the connection every 7 events: relayed into a
//! private JetStream exactly once, resumed each time by `Last-Event-ID`
//! (JSON-array ids), and the token is nowhere but in the request.

use std::time::Duration;

use super::{pki, Feed};
use crate::common::nats::NatsServer;
use crate::common::repeater::Repeater;
use crate::common::{wait_for, Sandbox};
use crate::sinks::nats::read_stream;
use serde_json::Value;

const TOKEN: &str = "tok-8f3a1c-SECRET";

/// The feed's flags as its documentation says: CA, two headers, the token
/// file, the topic from `/meta/stream`.
fn feed_flags(ca: &std::path::Path, token_file: &std::path::Path) -> Vec<String> {
    let mut flags: Vec<String> = vec!["--source-ca-file".into(), ca.display().to_string()];
    for h in ["Api-User-Agent: relay-test@example.org", "X-Two: 2"] {
        flags.extend(["--source-header".to_string(), h.to_string()]);
    }
    flags.extend([
        "--source-token-file".to_string(),
        token_file.display().to_string(),
        "--topic-from".into(),
        "field:/meta/stream".into(),
    ]);
    flags
}

#[test]
fn an_https_feed_with_headers_and_a_token_is_relayed_once_across_drops() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let sb = Sandbox::new();
    let (ca, cert, key) = pki(sb.path());
    let count = 40;
    let Some(feed) = Feed::start(sb.path(), "wiki", count, Some((&cert, &key, TOKEN))) else {
        return;
    };
    let token_file = sb.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let url = format!(
        "https://127.0.0.1:{}/v2/stream/recentchange?since=2026-12-01T00%3A00%3A00Z",
        feed.port
    );
    let r = Repeater::builder(&sb, "wiki")
        .source(&url)
        .sinkprotocol("nats")
        .sink(&server.url())
        .args(["--allowall", "--qos", "1", "--nats-stream", "WIKI"])
        .args(feed_flags(&ca, &token_file))
        .start();
    let acked = wait_for(Duration::from_secs(30), || {
        let m = r.metrics();
        (m.get("app_event_repeater_events_acked_total").copied() >= Some(count as f64))
            .then_some(())
    });
    assert!(acked.is_some(), "{}\n{:?}", r.log(), feed.requests());
    let stored = read_stream(&server.url(), "WIKI", count);
    assert_eq!(stored["missing"], 0, "{stored}");
    assert_eq!(stored["duplicates"], 0, "{stored}");
    assert_eq!(stored["messages"], count, "{stored}");
    assert_eq!(
        stored["subjects"]["mediawiki.recentchange"], count,
        "{stored}"
    );

    // Six connections (7 events each, then dropped), each after the first
    // resuming after the last id relayed: a JSON array, sent back as is.
    let requests = feed.requests();
    assert!(requests.len() >= 6, "{requests:?}");
    assert_eq!(requests[0]["last_event_id"], Value::Null);
    let resumed: Vec<&str> = requests[1..]
        .iter()
        .filter_map(|q| q["last_event_id"].as_str())
        .collect();
    assert!(
        resumed.contains(
            &r#"[{"topic": "eqiad.mediawiki.recentchange", "partition": 0, "offset": 7}]"#
        ),
        "{requests:?}"
    );
    for q in &requests {
        assert_eq!(q["authorization"], format!("Bearer {TOKEN}"), "{q}");
        assert_eq!(q["two"], "2");
        assert_eq!(q["accept_encoding"], "identity");
        let agent = q["user_agent"].as_str().unwrap_or("");
        assert!(agent.starts_with("app-event-repeater/"), "{q}");
        assert!(q["path"]
            .as_str()
            .unwrap_or("")
            .ends_with("?since=2026-12-01T00%3A00%3A00Z"));
    }

    // The token, in no output or file of the repeater's (the positive
    // control: the feed's host and port are there).
    let h = r.healthz().to_string();
    assert!(h.contains(&format!("127.0.0.1:{}", feed.port)), "{h}");
    assert!(
        h.contains("resumed after") || h.contains("live events"),
        "{h}"
    );
    let mut seen = vec![r.log(), h, r.get("/metrics").1];
    for entry in std::fs::read_dir(sb.data_dir().join("event-repeater")).unwrap() {
        seen.push(std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default());
    }
    for text in &seen {
        assert!(!text.contains("8f3a1c"), "the token leaked: {text}");
        assert!(
            !text.contains("relay-test@"),
            "a header value leaked: {text}"
        );
    }
}

/// The same feed into MQTT at QoS 1: every event at least once, in order,
/// at a persistent subscriber, across the feed's drops.
#[test]
fn the_same_feed_reaches_an_mqtt_subscriber_at_least_once_in_order() {
    use crate::common::broker::{Broker, Subscriber};
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "mediawiki.recentchange", Some("wiki-sub")) else {
        return;
    };
    let sb = Sandbox::new();
    let (ca, cert, key) = pki(sb.path());
    let count = 30;
    let Some(feed) = Feed::start(sb.path(), "wiki", count, Some((&cert, &key, TOKEN))) else {
        return;
    };
    let token_file = sb.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let url = format!(
        "https://127.0.0.1:{}/v2/stream/recentchange?since=2026-12-01T00%3A00%3A00Z",
        feed.port
    );
    let r = Repeater::builder(&sb, "wiki-mqtt")
        .source(&url)
        .sink(&broker.url())
        .args(["--allowall", "--qos", "1"])
        .args(feed_flags(&ca, &token_file))
        .start();
    let got = sub.wait(Duration::from_secs(30), |m| m.len() >= count as usize);
    let seqs: Vec<u64> = got
        .iter()
        .filter_map(|(_, p)| serde_json::from_str::<Value>(p).ok())
        .filter_map(|v| v["seq"].as_u64())
        .collect();
    let mut distinct = seqs.clone();
    distinct.dedup();
    assert_eq!(distinct, (1..=count).collect::<Vec<_>>(), "{}", r.log());
    assert!(feed.requests().len() >= 5, "{:?}", feed.requests());
}
