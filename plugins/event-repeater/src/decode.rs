//! How an SSE event becomes an event to route: where its topic comes from
//! (`--topic-from`) and what its payload is (`--payload`).
//!
//! The default, a JSON object with a top-level `topic` (or `Topic`), is
//! `app event-time`'s dialect and keeps its one-pass parser
//! ([`Event::parse`]). Feeds nobody here wrote name the topic elsewhere (a
//! JSON pointer such as `/meta/stream`), in the SSE `event:` field, or not
//! at all (`const:NAME`), and their data may be a JSON array or scalar, or
//! not JSON (`--payload text`: relayed as it came).

use std::borrow::Cow;

use crate::event::{Event, EventData, EventError};

/// The longest `--topic-from field:` JSON pointer accepted.
pub const MAX_POINTER: usize = 1024;

/// Where the topic comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicFrom {
    /// A JSON pointer (RFC 6901) into the data; `/topic` also takes the
    /// older format's `Topic`.
    Field(String),
    /// The SSE `event:` name (`message` when the event has none).
    EventName,
    /// The same topic for every event.
    Const(String),
}

/// What the payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// JSON, checked, relayed on one line.
    Json,
    /// The data as it came (UTF-8, checked by the SSE parser).
    Text,
}

/// `--topic-from` and `--payload` together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoder {
    topic: TopicFrom,
    payload: Payload,
    /// `field:/topic` with JSON: event-time's dialect, decided once rather
    /// than by a string comparison per event.
    dialect: bool,
}

impl Default for Decoder {
    fn default() -> Decoder {
        Decoder {
            topic: TopicFrom::Field("/topic".into()),
            payload: Payload::Json,
            dialect: true,
        }
    }
}

/// `field:/json/pointer`, `event` or `const:NAME`.
pub fn parse_topic_from(text: &str) -> Result<TopicFrom, String> {
    if text == "event" {
        return Ok(TopicFrom::EventName);
    }
    if let Some(name) = text.strip_prefix("const:") {
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err("--topic-from const:NAME needs a NAME without control characters".into());
        }
        return Ok(TopicFrom::Const(name.to_string()));
    }
    if let Some(pointer) = text.strip_prefix("field:") {
        if !pointer.starts_with('/') || pointer.len() > MAX_POINTER {
            return Err(format!(
                "--topic-from field:POINTER needs a JSON pointer (RFC 6901) starting with '/', at most {MAX_POINTER} bytes, e.g. field:/meta/stream"
            ));
        }
        return Ok(TopicFrom::Field(pointer.to_string()));
    }
    Err(format!(
        "--topic-from {}: use field:/json/pointer, event or const:NAME",
        app_plugin::text::escape_for_terminal(text)
    ))
}

impl Decoder {
    /// `--payload text` needs a topic that is not in the data.
    pub fn new(topic: TopicFrom, payload: Payload) -> Result<Decoder, String> {
        if payload == Payload::Text && matches!(topic, TopicFrom::Field(_)) {
            return Err(
                "--payload text relays data that is not JSON, so the topic cannot come from a field of it: add --topic-from event or --topic-from const:NAME".into(),
            );
        }
        let dialect = payload == Payload::Json && topic == TopicFrom::Field("/topic".into());
        Ok(Decoder {
            topic,
            payload,
            dialect,
        })
    }

    /// The event to route from one SSE event's data and `event:` name.
    pub fn decode<'a>(
        &'a self,
        data: &'a EventData,
        event_name: Option<&'a str>,
    ) -> Result<Event<'a>, EventError> {
        if self.dialect {
            return Event::parse(data);
        }
        let topic: Cow<'a, str> = match &self.topic {
            TopicFrom::Field(pointer) => return by_pointer(data, pointer),
            TopicFrom::EventName => {
                Cow::Borrowed(event_name.filter(|n| !n.is_empty()).unwrap_or("message"))
            }
            TopicFrom::Const(name) => Cow::Borrowed(name),
        };
        let json = match self.payload {
            // Shared, not copied: the payload is the data's bytes.
            Payload::Text => data.clone(),
            Payload::Json => one_line(data)?,
        };
        Ok(Event { topic, json })
    }
}

/// The JSON text of `data` on one line: the data itself unless a line
/// break lies between its tokens.
fn one_line(data: &EventData) -> Result<EventData, EventError> {
    let text = data.as_str().trim_matches([' ', '\t', '\n', '\r']);
    if memchr::memchr2(b'\n', b'\r', text.as_bytes()).is_some() {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| EventError::NotJson(e.to_string()))?;
        return Ok(EventData::from(value.to_string()));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|e| EventError::NotJson(e.to_string()))?;
    Ok(EventData::sliced(data, text))
}

/// The topic at `pointer`: a non-empty string, or a number as written.
fn by_pointer<'a>(data: &'a EventData, pointer: &str) -> Result<Event<'a>, EventError> {
    let value: serde_json::Value =
        serde_json::from_str(data.as_str()).map_err(|e| EventError::NotJson(e.to_string()))?;
    let topic = match value.pointer(pointer) {
        Some(serde_json::Value::String(s)) if !s.is_empty() => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => return Err(EventError::NoTopicAt(pointer.to_string())),
    };
    let json = one_line(data)?;
    Ok(Event {
        topic: Cow::Owned(topic),
        json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(d: &Decoder, data: &str, name: Option<&str>) -> Result<(String, String), EventError> {
        let data = EventData::from(data);
        let e = d.decode(&data, name)?;
        Ok((e.topic.into_owned(), e.json.as_str().to_string()))
    }

    #[test]
    fn the_flags_are_read_and_bad_ones_said_plainly() {
        assert_eq!(parse_topic_from("event"), Ok(TopicFrom::EventName));
        assert_eq!(
            parse_topic_from("field:/meta/stream"),
            Ok(TopicFrom::Field("/meta/stream".into()))
        );
        assert_eq!(
            parse_topic_from("const:prices"),
            Ok(TopicFrom::Const("prices".into()))
        );
        assert!(parse_topic_from("field:meta")
            .unwrap_err()
            .contains("starting with '/'"));
        assert!(parse_topic_from("const:").is_err());
        assert!(parse_topic_from("\u{1b}[31m")
            .unwrap_err()
            .contains("\\x1b[31m"));
        let e = Decoder::new(TopicFrom::Field("/x".into()), Payload::Text).unwrap_err();
        assert!(e.contains("--topic-from event"), "{e}");
    }

    #[test]
    fn topics_from_a_pointer_the_event_name_or_a_constant() {
        let wiki = Decoder::new(TopicFrom::Field("/meta/stream".into()), Payload::Json).unwrap();
        let data = r#"{"meta":{"stream":"mediawiki.recentchange","id":3},"title":"X"}"#;
        assert_eq!(
            decode(&wiki, data, Some("message")).unwrap().0,
            "mediawiki.recentchange"
        );
        let by_number = Decoder::new(TopicFrom::Field("/meta/id".into()), Payload::Json).unwrap();
        assert_eq!(decode(&by_number, data, None).unwrap().0, "3");
        assert_eq!(
            decode(&wiki, r#"{"meta":{}}"#, None),
            Err(EventError::NoTopicAt("/meta/stream".into()))
        );
        // Hue: a JSON array, the topic from the event name.
        let hue = Decoder::new(TopicFrom::EventName, Payload::Json).unwrap();
        let (topic, json) = decode(&hue, "[{\"id\":\"a\"},\n{\"id\":\"b\"}]", None).unwrap();
        assert_eq!(
            (topic.as_str(), json.as_str()),
            ("message", r#"[{"id":"a"},{"id":"b"}]"#)
        );
        assert!(matches!(
            decode(&hue, "101.5 x", None),
            Err(EventError::NotJson(_))
        ));
        let text = Decoder::new(TopicFrom::EventName, Payload::Text).unwrap();
        assert_eq!(
            decode(&text, "101.5", Some("price")).unwrap(),
            ("price".into(), "101.5".into())
        );
        let fixed = Decoder::new(TopicFrom::Const("feed".into()), Payload::Text).unwrap();
        assert_eq!(
            decode(&fixed, "a\nb", None).unwrap(),
            ("feed".into(), "a\nb".into())
        );
        // The default is today's dialect, Go keys included.
        let default = Decoder::default();
        assert_eq!(
            decode(&default, r#"{"Topic":"a/b"}"#, None).unwrap().0,
            "a/b"
        );
    }
}
