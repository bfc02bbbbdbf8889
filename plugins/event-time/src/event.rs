//! One event: its JSON document and its Server-Sent Events frame.
//!
//! An event is serialised once, when it is published, into the exact bytes
//! every subscriber receives (`id: <seq>\ndata: <json>\n\n`), so that fanning
//! it out costs a reference-count increment per subscriber.

use bytes::Bytes;
use serde::Serialize;

use crate::topics::TopicId;

/// The JSON document of an event, on one line.
#[derive(Debug, Serialize)]
pub struct EventDoc<'a> {
    pub topic: &'a str,
    #[serde(rename = "type")]
    pub kind: &'a str,
    pub id: &'a str,
    pub timestamp: String,
    pub data: u64,
}

impl EventDoc<'_> {
    /// The document as one line of JSON.
    pub fn to_json(&self) -> String {
        // Strings and integers always serialise.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A published event, as held in the history and sent to subscribers.
#[derive(Debug, Clone)]
pub struct Published {
    /// The server-wide sequence number, also the SSE `id:`.
    pub seq: u64,
    /// Which topic, for matching subscriptions.
    pub topic: TopicId,
    /// The complete SSE frame.
    pub frame: Bytes,
}

impl Published {
    /// Frames `json` as SSE event number `seq`.
    pub fn new(seq: u64, topic: TopicId, json: &str) -> Published {
        let mut frame = String::with_capacity(json.len() + 32);
        frame.push_str("id: ");
        frame.push_str(&seq.to_string());
        frame.push_str("\ndata: ");
        frame.push_str(json);
        frame.push_str("\n\n");
        Published {
            seq,
            topic,
            frame: Bytes::from(frame),
        }
    }
}

pub use app_plugin::time::rfc3339_millis;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_json_has_the_documented_shape() {
        let doc = EventDoc {
            topic: "timer/sec/1",
            kind: "timer",
            id: "1s",
            timestamp: "T".into(),
            data: 1_000_000_000,
        };
        assert_eq!(
            doc.to_json(),
            r#"{"topic":"timer/sec/1","type":"timer","id":"1s","timestamp":"T","data":1000000000}"#
        );
    }

    #[test]
    fn frame_is_id_then_data() {
        let p = Published::new(42, 3, "{}");
        assert_eq!(&p.frame[..], b"id: 42\ndata: {}\n\n");
    }
}
