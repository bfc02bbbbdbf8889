//! Sink topics as Kafka topic names, by the NATS sink's rule: a topic's `/`
//! levels become `.`-separated parts and empty levels are dropped, so
//! `/time/1s`, `time/1s` and `time//1s` all go to the Kafka topic
//! `time.1s` (and `a.b/c` and `a/b/c` both to `a.b.c`). Kafka takes ASCII
//! letters, digits, `.`, `_` and `-`, up to 249 bytes; a topic with
//! anything else is refused and counted as `invalid_topic`, as is one
//! starting with `__` (Kafka's own, such as `__consumer_offsets`).

/// The longest topic name Kafka takes.
pub const MAX_TOPIC_NAME: usize = 249;

/// The Kafka topic for the sink topic `topic`, or why there is none.
pub fn kafka_topic(topic: &str) -> Result<String, String> {
    let mut out = String::with_capacity(topic.len());
    for part in topic.split(['/', '.']).filter(|p| !p.is_empty()) {
        if let Some(c) = part
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            return Err(format!(
                "{topic:?} holds {c:?}: a Kafka topic name takes only ASCII letters, digits, '.', '_' and '-' (levels '/' become '.')"
            ));
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(part);
    }
    if out.is_empty() {
        return Err(format!("{topic:?} has no level left as a Kafka topic name"));
    }
    if out.len() > MAX_TOPIC_NAME {
        return Err(format!(
            "the topic is longer than {MAX_TOPIC_NAME} bytes as a Kafka topic name"
        ));
    }
    if out.starts_with("__") {
        return Err(format!(
            "{topic:?} starts with '__', which Kafka keeps for its own topics"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_become_dots_and_what_kafka_refuses_is_refused() {
        for (topic, want) in [
            ("events", "events"),
            ("/time/1s", "time.1s"),
            ("time//1s", "time.1s"),
            ("a.b/c", "a.b.c"),
            ("bench/seq", "bench.seq"),
            ("Wiki_recent-change", "Wiki_recent-change"),
            ("_x", "_x"),
        ] {
            assert_eq!(kafka_topic(topic).as_deref(), Ok(want), "{topic:?}");
        }
        let long = "a".repeat(MAX_TOPIC_NAME + 1);
        for bad in [
            "",
            "/",
            "//",
            "a b",
            "caf\u{e9}",
            "a\nb",
            "a:b",
            "a+b",
            "__consumer_offsets",
            "/__x",
        ] {
            assert!(kafka_topic(bad).is_err(), "{bad:?}");
        }
        assert!(kafka_topic(&long).is_err());
        assert!(kafka_topic(&"a".repeat(MAX_TOPIC_NAME)).is_ok());
        // The refusal names the character and the rule.
        let e = kafka_topic("a b").unwrap_err();
        assert!(e.contains("' '") && e.contains("ASCII letters"), "{e}");
    }
}
