//! MQTT-style topics as NATS subjects, and NATS subject patterns.
//!
//! A topic's `/` levels become `.` tokens and empty levels are dropped, so
//! `/time/1s`, `time/1s` and `time//1s` all become `time.1s` (and a `.`
//! inside a level splits it: `a.b/c` and `a/b/c` both become `a.b.c`).
//! A topic that cannot be a subject is refused: no token left, whitespace or
//! control characters, the wildcards `*` and `>` as a token, or a first token
//! in the server's own namespaces (`$JS`, `$SYS`, … and `_INBOX`): an event
//! must never be able to call the JetStream API or answer a request.

use crate::routes::MAX_TOPIC_LEN;

/// The subject for `topic`, or why there is none.
pub fn subject(topic: &str) -> Result<String, String> {
    if topic.len() > MAX_TOPIC_LEN {
        return Err(format!(
            "the topic is longer than {MAX_TOPIC_LEN} bytes: not a usable NATS subject"
        ));
    }
    let mut out = String::with_capacity(topic.len());
    for level in topic.split('/') {
        for token in level.split('.').filter(|t| !t.is_empty()) {
            if token == "*" || token == ">" || token.contains(['*', '>']) {
                return Err(format!(
                    "{topic:?} has a NATS wildcard ('*' or '>'): not a subject to publish to"
                ));
            }
            if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(format!(
                    "{topic:?} has whitespace or control characters: not a NATS subject"
                ));
            }
            if out.is_empty() && (token.starts_with('$') || token == "_INBOX") {
                return Err(format!(
                    "{topic:?} starts in a reserved NATS namespace ('$…' or '_INBOX')"
                ));
            }
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(token);
        }
    }
    if out.is_empty() {
        return Err(format!("{topic:?} has no level left as a NATS subject"));
    }
    Ok(out)
}

/// Whether the subject `subject` matches the pattern `pattern` (`*` one
/// token, `>` one or more at the end).
pub fn matches(pattern: &str, subject: &str) -> bool {
    let mut s = subject.split('.');
    for p in pattern.split('.') {
        match (p, s.next()) {
            (">", Some(_)) => return true,
            (_, None) => return false,
            ("*", Some(_)) => {}
            (p, Some(t)) if p == t => {}
            _ => return false,
        }
    }
    s.next().is_none()
}

/// The first token of a subject (what the repeater's own stream captures).
pub fn first_token(subject: &str) -> &str {
    subject.split('.').next().unwrap_or(subject)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_become_subjects() {
        assert_eq!(subject("/time/1s").unwrap(), "time.1s");
        assert_eq!(subject("time//1s/").unwrap(), "time.1s");
        assert_eq!(subject("a.b/c").unwrap(), "a.b.c");
        assert_eq!(subject("x").unwrap(), "x");
        assert_eq!(subject("sensors/$x").unwrap(), "sensors.$x");
    }

    #[test]
    fn unusable_topics_are_refused() {
        for t in [
            "",
            "/",
            "//",
            "a b",
            "a/*",
            "a/>",
            "a/b*",
            "$JS/API/x",
            "$SYS",
            "_INBOX/1",
            "a\tb",
        ] {
            assert!(subject(t).is_err(), "{t:?}");
        }
        assert!(subject(&"a".repeat(MAX_TOPIC_LEN + 1)).is_err());
    }

    #[test]
    fn patterns() {
        assert!(matches("time.>", "time.1s"));
        assert!(!matches("time.>", "time"));
        assert!(matches("time", "time"));
        assert!(matches("*.1s", "time.1s"));
        assert!(!matches("*.1s", "time.1s.x"));
        assert!(!matches("time.1s", "time"));
        assert!(matches(">", "a.b"));
        assert_eq!(first_token("a.b.c"), "a");
    }
}
