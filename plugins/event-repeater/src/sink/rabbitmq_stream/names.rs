//! Sink topics as stream names: the topic is the stream's name, verbatim
//! (`sensors/a` goes to the stream `sensors/a`), so no two topics share a
//! stream by accident. Refused, counted as `invalid_topic`: the empty name,
//! more than 255 bytes (RabbitMQ's limit on queue names), a name starting
//! with `amq.` (reserved by RabbitMQ) and control characters (RabbitMQ
//! would strip CR and LF, merging two names).

/// The longest stream name RabbitMQ takes, in bytes.
pub const MAX_STREAM_NAME: usize = 255;

/// Why `topic` cannot name a stream, or `None` when it can.
pub fn refuse(topic: &str) -> Option<String> {
    if topic.is_empty() {
        return Some("the empty topic cannot name a RabbitMQ stream".into());
    }
    if topic.len() > MAX_STREAM_NAME {
        return Some(format!(
            "the topic is longer than {MAX_STREAM_NAME} bytes: not a RabbitMQ stream name"
        ));
    }
    if topic.starts_with("amq.") {
        return Some(format!(
            "{topic:?} starts with 'amq.', which RabbitMQ reserves for itself"
        ));
    }
    if crate::sink::has_control(topic) {
        return Some(format!(
            "{topic:?} holds a control character: not a stream name"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_stream_names_unless_rabbitmq_refuses_them() {
        for ok in ["events", "sensors/a", "/time/1s", "a b", "amq", "x.amq."] {
            assert_eq!(refuse(ok), None, "{ok:?}");
        }
        let long = "a".repeat(MAX_STREAM_NAME + 1);
        for bad in ["", "amq.x", "a\nb", "a\rb", "a\u{7f}", long.as_str()] {
            assert!(refuse(bad).is_some(), "{bad:?}");
        }
        assert_eq!(refuse(&"a".repeat(MAX_STREAM_NAME)), None);
    }
}
