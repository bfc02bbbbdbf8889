//! Events as the source sends them: one JSON object per SSE `data:` field,
//! with lowercase keys (`topic`, `type`, `id`, `timestamp`, `data`) or the
//! capitalised keys of the older Go format (`Topic`, `Type`, `ID`, …).
//!
//! Only the topic is needed to route an event; the rest is relayed as it
//! came, on one line.

use serde::Deserialize;

/// An event ready to route: its topic and its JSON text on one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub topic: String,
    /// The whole event as one line of JSON.
    pub json: String,
}

#[derive(Deserialize)]
struct TopicOnly<'a> {
    #[serde(borrow, default)]
    topic: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "Topic")]
    topic_go: Option<std::borrow::Cow<'a, str>>,
}

/// Why an event could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventError {
    NotJson(String),
    NotAnObject,
    NoTopic,
}

impl std::fmt::Display for EventError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EventError::NotJson(e) => write!(f, "event data is not JSON: {e}"),
            EventError::NotAnObject => write!(f, "event data is not a JSON object"),
            EventError::NoTopic => write!(f, "event has no non-empty \"topic\" (or \"Topic\")"),
        }
    }
}

/// JSON's insignificant whitespace (RFC 8259), which may surround the value.
const JSON_WS: [char; 4] = [' ', '\t', '\n', '\r'];

impl Event {
    /// Parses the data of one SSE event, keeping it as the payload without a
    /// copy when it is already one line with nothing around the object.
    ///
    /// One pass of the JSON parser checks the whole document and reads the
    /// topic (the other fields are skipped, not built), so every event costs
    /// one scan of its bytes rather than one per question asked of it.
    pub fn parse(data: impl Into<String>) -> Result<Event, EventError> {
        let data: String = data.into();
        let text = data.trim_matches(JSON_WS);
        if !text.starts_with('{') {
            // Say "not an object" only of valid JSON, as before.
            serde_json::from_str::<serde::de::IgnoredAny>(text)
                .map_err(|e| EventError::NotJson(e.to_string()))?;
            return Err(EventError::NotAnObject);
        }
        let fields: TopicOnly<'_> =
            serde_json::from_str(text).map_err(|e| EventError::NotJson(e.to_string()))?;
        let topic = fields
            .topic
            .or(fields.topic_go)
            .filter(|t| !t.is_empty())
            .ok_or(EventError::NoTopic)?
            .into_owned();
        let json = if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
            // Multi-line data: re-encode compactly so the payload is one line.
            let value: serde_json::Value =
                serde_json::from_str(text).map_err(|e| EventError::NotJson(e.to_string()))?;
            value.to_string()
        } else if text.len() == data.len() {
            data
        } else {
            text.to_string()
        };
        Ok(Event { topic, json })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowercase_and_go_keys() {
        let e = Event::parse(r#"{"topic":"timer/sec/1","type":"timer","data":1}"#).unwrap();
        assert_eq!(e.topic, "timer/sec/1");
        assert_eq!(e.json, r#"{"topic":"timer/sec/1","type":"timer","data":1}"#);
        let e = Event::parse(r#"{"Topic":"a/b","Type":"t","ID":"x","Data":{"k":[1]}}"#).unwrap();
        assert_eq!(e.topic, "a/b");
    }

    #[test]
    fn surrounding_whitespace_is_not_relayed() {
        let e = Event::parse(" {\"topic\":\"t\"}\t").unwrap();
        assert_eq!(e.json, r#"{"topic":"t"}"#);
    }

    #[test]
    fn escaped_topics_are_decoded() {
        let e = Event::parse(r#"{"topic":"a\/b\u0041"}"#).unwrap();
        assert_eq!(e.topic, "a/bA");
    }

    #[test]
    fn multi_line_json_becomes_one_line() {
        let e = Event::parse("{\"topic\":\"t\",\n \"data\": [1,\n 2]}").unwrap();
        assert_eq!(e.json, r#"{"data":[1,2],"topic":"t"}"#);
    }

    #[test]
    fn bad_events() {
        assert!(matches!(Event::parse("nope"), Err(EventError::NotJson(_))));
        assert_eq!(Event::parse("[1]"), Err(EventError::NotAnObject));
        assert_eq!(Event::parse(r#"{"type":"x"}"#), Err(EventError::NoTopic));
        assert_eq!(Event::parse(r#"{"topic":""}"#), Err(EventError::NoTopic));
        assert!(matches!(
            Event::parse(r#"{"topic":5}"#),
            Err(EventError::NotJson(_))
        ));
        assert!(matches!(
            Event::parse(r#"{"topic":"a"} x"#),
            Err(EventError::NotJson(_))
        ));
        // Broken JSON after the topic is refused too: the whole document
        // is checked, not only up to the field the router needs.
        assert!(matches!(
            Event::parse(r#"{"topic":"a","data":[1,}"#),
            Err(EventError::NotJson(_))
        ));
        assert!(matches!(Event::parse(r#"[1"#), Err(EventError::NotJson(_))));
    }
}
