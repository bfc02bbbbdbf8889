//! The live tap (`GET /tap`, `manage tap`; issue 33 item 3) against a real
//! repeater: a scripted source (tests/it/common/sse_source.rs) and, where
//! delivery is what is checked, a real mosquitto.
//!
//! - `outcomes`: delivered and refused events, each with its outcome, and
//!   the filters
//! - `stalled`: a tap that never reads skips its own events, is told how
//!   many, and delivery does not notice
//! - `limit`: one tap more than the limit is refused with a clear error
//! - `lifetime`: a tap outlives the API's timeouts and ends when the
//!   repeater stops
//! - `manage`: `manage tap` prints them, over the socket and TLS with a token

use crate::common;

use std::time::{Duration, Instant};

use common::http::{Addr, SseItem, SseStream};
use common::repeater::Repeater;
use serde_json::Value;

mod lifetime;
mod limit;
mod manage;
mod outcomes;
mod stalled;

/// A tap on `rep`'s socket (`query`: "" or `?topic=…`), once it is in place.
fn open(rep: &Repeater, query: &str) -> SseStream {
    let mut tap = SseStream::open(&Addr::Unix(rep.socket()), &format!("/tap{query}"), &[]);
    assert_eq!(
        tap.next_item(Duration::from_secs(5)),
        Some(SseItem::Comment("tap open".into())),
        "the tap did not open:\n{}",
        rep.log()
    );
    tap
}

/// The tap's events until `n` came or `timeout` passed (comments skipped).
fn events(tap: &mut SseStream, n: usize, timeout: Duration) -> Vec<Value> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    while out.len() < n {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        match tap.next_item(left) {
            Some(SseItem::Event { data, .. }) => out.push(
                serde_json::from_str(&data).unwrap_or_else(|e| panic!("not JSON ({e}): {data}")),
            ),
            Some(SseItem::Comment(_)) => {}
            None => break,
        }
    }
    out
}
