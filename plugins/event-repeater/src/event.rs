//! Events as the source sends them: one JSON object per SSE `data:` field,
//! with lowercase keys (`topic`, `type`, `id`, `timestamp`, `data`) or the
//! capitalised keys of the older Go format (`Topic`, `Type`, `ID`, …).
//!
//! Only the topic is needed to route an event; the rest is relayed as it
//! came, on one line.

use std::borrow::Cow;

use bytes::Bytes;
use serde::Deserialize;

/// An event's data, known to be UTF-8: the SSE parser checked it (or it
/// came as a `String`). The bytes are shared, usually with the buffer the
/// source's chunk was read into, so relaying an event does not copy it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventData(Bytes);

impl EventData {
    /// `bytes`, if they are UTF-8; else they are handed back.
    pub fn utf8(bytes: Bytes) -> Result<EventData, Bytes> {
        match std::str::from_utf8(&bytes) {
            Ok(_) => Ok(EventData(bytes)),
            Err(_) => Err(bytes),
        }
    }

    /// The part `text` of `data` (a slice of its `as_str`), shared.
    pub fn sliced(data: &EventData, text: &str) -> EventData {
        EventData(data.0.slice_ref(text.as_bytes()))
    }

    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// The shared bytes, for a sink.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }

    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor took a `String` or checked the bytes
        // (`utf8`), and `Bytes` never changes the bytes it shares. Checking
        // again here cost as much as the check itself (it is on every
        // event's path, and the JSON parser would check each string again).
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<String> for EventData {
    fn from(s: String) -> EventData {
        EventData(Bytes::from(s))
    }
}

impl From<&str> for EventData {
    fn from(s: &str) -> EventData {
        EventData(Bytes::copy_from_slice(s.as_bytes()))
    }
}

/// An event ready to route: its topic and its JSON text on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    /// Borrowed from the data unless it had escapes to decode.
    pub topic: Cow<'a, str>,
    /// The whole event as one line of JSON.
    pub json: EventData,
}

/// The topic, borrowed from the data where it can be: serde borrows a
/// `Cow<str>` only as a field of its own, not inside an `Option`.
#[derive(Deserialize)]
struct Topic<'a>(#[serde(borrow)] Cow<'a, str>);

#[derive(Deserialize)]
struct TopicOnly<'a> {
    #[serde(borrow, default)]
    topic: Option<Topic<'a>>,
    #[serde(borrow, default, rename = "Topic")]
    topic_go: Option<Topic<'a>>,
}

/// Why an event could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("event data is not JSON: {0}")]
    NotJson(String),
    #[error("event data is not a JSON object")]
    NotAnObject,
    #[error("event has no non-empty \"topic\" (or \"Topic\")")]
    NoTopic,
    /// `--topic-from field:POINTER` found no string or number there.
    #[error("event has no non-empty string or number at {0} (--topic-from field:{0})")]
    NoTopicAt(String),
}

/// JSON's insignificant whitespace (RFC 8259), which may surround the value.
const JSON_WS: [char; 4] = [' ', '\t', '\n', '\r'];

impl<'a> Event<'a> {
    /// Parses the data of one SSE event, keeping it as the payload without a
    /// copy when it is already one line with nothing around the object.
    ///
    /// One pass of the JSON parser checks the whole document and reads the
    /// topic (the other fields are skipped, not built), so every event costs
    /// one scan of its bytes rather than one per question asked of it.
    pub fn parse(data: &'a EventData) -> Result<Event<'a>, EventError> {
        let text = data.as_str().trim_matches(JSON_WS);
        if !text.starts_with('{') {
            // Say "not an object" only of valid JSON, as before.
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .map_err(|e| EventError::NotJson(e.to_string()))?;
            return Err(EventError::NotAnObject);
        }
        let fields: TopicOnly<'a> =
            serde_json::from_str(text).map_err(|e| EventError::NotJson(e.to_string()))?;
        let topic = fields
            .topic
            .or(fields.topic_go)
            .map(|t| t.0)
            .filter(|t| !t.is_empty())
            .ok_or(EventError::NoTopic)?;
        // A JSON text is one line unless a line break lies between its
        // tokens (inside strings they are escaped): only then is it rebuilt.
        let json = if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| EventError::NotJson(e.to_string()))?;
            EventData::from(value.to_string())
        } else {
            // Whitespace trimmed is ASCII: what is left is still UTF-8.
            EventData(data.as_bytes().slice_ref(text.as_bytes()))
        };
        Ok(Event { topic, json })
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// The topic and the JSON relayed, as text.
    fn parse(data: &str) -> Result<(String, String), EventError> {
        let data = EventData::from(data);
        let e = Event::parse(&data)?;
        Ok((e.topic.into_owned(), e.json.as_str().to_string()))
    }

    #[test]
    fn lowercase_and_go_keys() {
        let e = parse(r#"{"topic":"timer/sec/1","type":"timer","data":1}"#).unwrap();
        assert_eq!(e.0, "timer/sec/1");
        assert_eq!(e.1, r#"{"topic":"timer/sec/1","type":"timer","data":1}"#);
        let e = parse(r#"{"Topic":"a/b","Type":"t","ID":"x","Data":{"k":[1]}}"#).unwrap();
        assert_eq!(e.0, "a/b");
    }

    #[test]
    fn one_line_events_are_relayed_without_a_copy() {
        let data = EventData::from(r#" {"topic":"a/b","data":1}"#);
        let e = Event::parse(&data).unwrap();
        // The payload is the data's own bytes, the topic borrowed from them.
        assert_eq!(e.json.as_bytes().as_ptr(), data.as_bytes()[1..].as_ptr());
        assert!(matches!(e.topic, Cow::Borrowed("a/b")));
        let data = EventData::from(r#"{"topic":"a\/b","data":1}"#);
        assert!(matches!(Event::parse(&data).unwrap().topic, Cow::Owned(_)));
        let data = EventData::from("{\"topic\":\"a\",\n\"data\":1}");
        assert_ne!(
            Event::parse(&data).unwrap().json.as_bytes().as_ptr(),
            data.as_bytes().as_ptr()
        );
    }

    #[test]
    fn surrounding_whitespace_is_not_relayed() {
        let e = parse(" {\"topic\":\"t\"}\t").unwrap();
        assert_eq!(e.1, r#"{"topic":"t"}"#);
    }

    #[test]
    fn escaped_topics_are_decoded() {
        let e = parse(r#"{"topic":"a\/b\u0041"}"#).unwrap();
        assert_eq!(e.0, "a/bA");
    }

    #[test]
    fn multi_line_json_becomes_one_line() {
        let e = parse("{\"topic\":\"t\",\n \"data\": [1,\n 2]}").unwrap();
        assert_eq!(e.1, r#"{"data":[1,2],"topic":"t"}"#);
    }

    #[test]
    fn bad_events() {
        assert!(matches!(parse("nope"), Err(EventError::NotJson(_))));
        assert_eq!(parse("[1]"), Err(EventError::NotAnObject));
        assert_eq!(parse(r#"{"type":"x"}"#), Err(EventError::NoTopic));
        assert_eq!(parse(r#"{"topic":""}"#), Err(EventError::NoTopic));
        assert!(matches!(
            parse(r#"{"topic":5}"#),
            Err(EventError::NotJson(_))
        ));
        assert!(matches!(
            parse(r#"{"topic":"a"} x"#),
            Err(EventError::NotJson(_))
        ));
        // Broken JSON after the topic is refused too: the whole document
        // is checked, not only up to the field the router needs.
        assert!(matches!(
            parse(r#"{"topic":"a","data":[1,}"#),
            Err(EventError::NotJson(_))
        ));
        assert!(matches!(parse(r#"[1"#), Err(EventError::NotJson(_))));
    }
}
