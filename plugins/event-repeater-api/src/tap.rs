//! The live tap ([`crate::path::TAP`]): the events flowing through the
//! repeater after routing, as Server-Sent Events, one [`TapEvent`] in the
//! `data:` of each (the SSE `event:` name is its [`Outcome`]).
//!
//! A tap never slows delivery: each has a queue of at most
//! [`QUEUE_EVENTS`] events and [`QUEUE_BYTES`] bytes, and when its client
//! falls behind, its own new events are skipped and the client is told how
//! many with an SSE comment ([`skipped_comment`]). At most [`MAX_TAPS`] taps
//! are open at once; one more is refused with 429.

use serde::{Deserialize, Serialize};

/// What became of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Acknowledged by the sink (for QoS 0, handed to it).
    Delivered,
    /// Refused for a reason of its own (`reason`: `invalid`,
    /// `invalid_topic`, `too_large`, `sink_error`).
    Refused,
    /// Dropped from a full buffer (`reason`: `overflow`).
    Dropped,
    /// An outcome this manager does not know (a newer repeater).
    #[serde(other)]
    Other,
}

impl Outcome {
    /// Its name on the wire: the SSE `event:` and the JSON `outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Refused => "refused",
            Outcome::Dropped => "dropped",
            Outcome::Other => "other",
        }
    }
}

/// One event seen by a tap: the `data:` of an SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapEvent {
    /// When its outcome happened, RFC 3339 in UTC with milliseconds.
    pub time: String,
    pub outcome: Outcome,
    /// Why it was refused or dropped: a `reason` label of
    /// `events_failed_total` or `events_dropped_total`, or `invalid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the repeater said about it (escaped when shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The event's topic, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_topic: Option<String>,
    /// The sink topic, when one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink_topic: Option<String>,
    /// The SSE id in force (what a resume sends as `Last-Event-ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The event's data: the payload given to the sink, or, for an event
    /// refused before the buffer, the data as received.
    pub data: String,
}

/// Query parameters of `GET /tap` (both optional, at most one).
pub mod query {
    /// A source topic pattern as routes take it (`a/b`, `a/`, `.`).
    pub const TOPIC: &str = "topic";
    /// A route, by its source topic: the events that route takes.
    pub const ROUTE: &str = "route";
}

/// Events a tap's queue holds at most.
pub const QUEUE_EVENTS: usize = 1024;
/// Bytes (data and topics) a tap's queue holds at most.
pub const QUEUE_BYTES: usize = 1 << 20;
/// Taps open at once, at most.
pub const MAX_TAPS: usize = 8;
/// Seconds between keep-alive comments when no event flows.
pub const KEEP_ALIVE_SECS: u64 = 15;
/// The comment a tap starts with, once it is in place.
pub const OPEN_COMMENT: &str = "tap open";
/// The comment a tap ends with when the repeater stops.
pub const STOPPING_COMMENT: &str = "the repeater is stopping";

/// The SSE comment (the text after `: `) saying `n` events were skipped.
///
/// ```
/// use app_event_repeater_api::tap::{skipped, skipped_comment};
/// assert_eq!(skipped_comment(3), "skipped 3 events");
/// assert_eq!(skipped(&skipped_comment(3)), Some(3));
/// assert_eq!(skipped(" keep-alive"), None);
/// ```
pub fn skipped_comment(n: u64) -> String {
    format!("skipped {n} events")
}

/// How many events a comment (the text after `:`) says were skipped.
pub fn skipped(comment: &str) -> Option<u64> {
    comment
        .trim_start()
        .strip_prefix("skipped ")?
        .strip_suffix(" events")?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_reads_back_and_an_unknown_outcome_is_other() {
        let e = TapEvent {
            time: "2026-12-03T08:00:00.123Z".into(),
            outcome: Outcome::Refused,
            reason: Some("too_large".into()),
            why: None,
            source_topic: Some("a/b".into()),
            sink_topic: None,
            id: Some("7".into()),
            data: "{}".into(),
        };
        let text = serde_json::to_string(&e).unwrap();
        assert!(text.contains(r#""outcome":"refused""#), "{text}");
        assert!(!text.contains("sink_topic"), "{text}");
        assert_eq!(serde_json::from_str::<TapEvent>(&text).unwrap(), e);
        let newer = r#"{"time":"t","outcome":"sampled","data":"","extra":1}"#;
        let read: TapEvent = serde_json::from_str(newer).unwrap();
        assert_eq!(read.outcome, Outcome::Other);
    }
}
