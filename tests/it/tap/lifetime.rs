//! A tap is a long answer: the API's request timeout (here 1 s), which
//! cuts a slow request head, does not cut it, however long it waits for an
//! event; when the repeater stops, the tap says so and ends, and the stop
//! is not held up by it.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{events, open};
use crate::common;
use common::http::{Addr, Conn, SseItem};
use common::repeater::Repeater;
use common::sse_source::ScriptedSource;
use common::Sandbox;

#[test]
fn a_tap_outlives_the_request_timeout_and_ends_when_the_repeater_stops() {
    let sb = Sandbox::new();
    let source = ScriptedSource::start();
    let mut rep = Repeater::builder(&sb, "event-repeater")
        .source(&source.url())
        .sinkprotocol("stderr")
        .args(["--allowall", "--request-timeout", "1s"])
        .start();
    let mut tap = open(&rep, "");

    // The positive control: a request head that does not finish is cut
    // after the 1 s timeout.
    let mut slow = Conn::connect(&Addr::Unix(rep.socket())).expect("connect");
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a slow head was not cut"
    );

    // The tap waits three times as long for an event, and still has it.
    std::thread::sleep(Duration::from_secs(3));
    source.push("1", &json!({"topic": "late/one"}).to_string());
    let got = events(&mut tap, 1, Duration::from_secs(10));
    assert_eq!(got.len(), 1, "the tap was cut:\n{}", rep.log());
    assert_eq!(got[0]["outcome"], "delivered");
    assert_eq!(got[0]["source_topic"], "late/one");

    // SIGTERM: the tap's last word, then its end; the stop is prompt.
    let asked = Instant::now();
    let status = rep.signal(libc::SIGTERM);
    assert!(status.success(), "{status:?}\n{}", rep.log());
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "the stop took {:?}",
        asked.elapsed()
    );
    let mut last = Vec::new();
    while let Some(item) = tap.next_item(Duration::from_secs(5)) {
        last.push(item);
    }
    assert_eq!(
        last.last(),
        Some(&SseItem::Comment("the repeater is stopping".into())),
        "{last:?}"
    );
}
