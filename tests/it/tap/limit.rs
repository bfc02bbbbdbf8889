//! The number of taps is bounded: one more than the limit is refused with a
//! JSON error naming the limit, and a tap closed frees its place.

use std::time::Duration;

use super::open;
use crate::common;
use common::repeater::Repeater;
use common::{wait_for, Sandbox};

const MAX_TAPS: usize = 8;

#[test]
fn one_tap_more_than_the_limit_is_refused_with_the_limit_named() {
    let sb = Sandbox::new();
    let rep = Repeater::builder(&sb, "event-repeater")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let mut taps: Vec<_> = (0..MAX_TAPS).map(|_| open(&rep, "")).collect();
    assert_eq!(rep.metric("tap_clients"), MAX_TAPS as f64);
    let (status, body) = rep.get("/tap");
    assert_eq!(status, 429, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).expect("a JSON error");
    let message = error["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("8 taps are open, the most this repeater allows"),
        "{body}"
    );
    // The API itself still answers.
    assert_eq!(rep.get("/healthz").0, 200);

    // A client that goes frees its place (the server notices at the latest
    // at the next keep-alive, 15 s).
    drop(taps.pop());
    let freed = wait_for(Duration::from_secs(20), || {
        (rep.metric("tap_clients") < MAX_TAPS as f64).then_some(())
    });
    assert!(freed.is_some(), "a closed tap kept its place");
    taps.push(open(&rep, ""));
    assert_eq!(rep.metric("tap_clients"), MAX_TAPS as f64);
}
