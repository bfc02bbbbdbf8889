//! One event: its JSON document and its Server-Sent Events frame.
//!
//! An event is serialised once, when it is published, into the exact bytes
//! every subscriber receives (`id: <seq>\ndata: <json>\n\n`), so that fanning
//! it out costs a reference-count increment per subscriber.

use std::time::{SystemTime, UNIX_EPOCH};

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

/// `time` as RFC 3339 in UTC with milliseconds: `2026-11-29T21:56:27.123Z`.
pub fn rfc3339_millis(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let millis = since.subsec_millis();
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's
/// `civil_from_days` (proleptic Gregorian calendar).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, millis: u64) -> String {
        rfc3339_millis(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(1_798_761_600, 120), "2027-01-01T00:00:00.120Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
    }

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
