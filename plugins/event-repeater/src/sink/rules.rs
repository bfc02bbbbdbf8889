//! Topic rules: which events a sink can never take.
//!
//! The router asks the sink chosen at start about every event before
//! buffering it ([`Rules::refuse`]), so an event a broker would refuse (and
//! drop the connection over) is never published, is counted once, and
//! neither blocks the events behind it nor holds the checkpoint back.
//!
//! Events of one topic come in runs, so the verdict on the last topic is
//! kept: mapping a topic to a NATS subject or walking its characters for
//! every event cost more than the rest of the router's work.

use std::sync::{Arc, Mutex};

/// Why a sink refuses an event; the `reason` of `events_failed_total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The sink topic is not one this sink can publish to (the message
    /// shows the topic escaped).
    InvalidTopic(String),
    /// The event is larger than the sink takes.
    TooLarge(String),
}

impl Refusal {
    /// `TooLarge` when `payload_len` is over `max`, saying what `what`
    /// (e.g. "a Kafka record") may hold.
    pub fn over_limit(payload_len: usize, max: usize, what: &str) -> Option<Refusal> {
        (payload_len > max).then(|| {
            Refusal::TooLarge(format!(
                "an event of {payload_len} bytes is over the {max} {what} may hold here"
            ))
        })
    }

    /// What to tell the operator.
    pub fn message(&self) -> &str {
        match self {
            Refusal::InvalidTopic(m) | Refusal::TooLarge(m) => m,
        }
    }
}

/// A sink's rules for the events it takes.
pub trait TopicRules: Send + Sync {
    /// Why the sink can never publish to `topic`, or `None` when it can.
    /// It depends on the topic alone: the verdict is kept for the next
    /// event of the same topic.
    fn refuse_topic(&self, topic: &str) -> Option<Refusal>;

    /// Why the sink cannot take `payload_len` bytes for `topic` (a topic it
    /// takes). Asked for every event accepted: keep it cheap.
    fn refuse_size(&self, _topic: &str, _payload_len: usize) -> Option<Refusal> {
        None
    }
}

/// The chosen sink's rules, with the verdict on the last topic kept.
pub struct Rules {
    rules: Arc<dyn TopicRules>,
    last: Mutex<Last>,
}

#[derive(Default)]
struct Last {
    known: bool,
    topic: String,
    verdict: Option<Refusal>,
}

impl Rules {
    pub fn new(rules: Arc<dyn TopicRules>) -> Rules {
        Rules {
            rules,
            last: Mutex::default(),
        }
    }

    /// Why the sink cannot take an event of `payload_len` bytes for
    /// `topic`, or `None` when it can.
    pub fn refuse(&self, topic: &str, payload_len: usize) -> Option<Refusal> {
        {
            // Only the router asks: the lock is never contended.
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if !last.known || last.topic != topic {
                last.verdict = self.rules.refuse_topic(topic);
                last.topic.clear();
                last.topic.push_str(topic);
                last.known = true;
            }
            if let Some(refusal) = &last.verdict {
                return Some(refusal.clone());
            }
        }
        self.rules.refuse_size(topic, payload_len)
    }
}

/// Whether `topic` holds a control character (U+0000–U+001F,
/// U+007F–U+009F), which no sink publishes: MQTT brokers drop the
/// connection over one, NATS splits subjects on some of them, and a
/// terminal obeys them.
pub fn has_control(topic: &str) -> bool {
    topic.chars().any(char::is_control)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Refuses topics starting with `x`, and more than 10 bytes.
    #[derive(Default)]
    struct Counting {
        asked: AtomicUsize,
    }

    impl TopicRules for Counting {
        fn refuse_topic(&self, topic: &str) -> Option<Refusal> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            topic
                .starts_with('x')
                .then(|| Refusal::InvalidTopic(format!("{topic:?}")))
        }

        fn refuse_size(&self, _topic: &str, payload_len: usize) -> Option<Refusal> {
            (payload_len > 10).then(|| Refusal::TooLarge("big".into()))
        }
    }

    #[test]
    fn the_last_topics_verdict_is_kept_and_sizes_are_checked_every_time() {
        let counting = Arc::new(Counting::default());
        let rules = Rules::new(counting.clone());
        let asked = || counting.asked.load(Ordering::Relaxed);
        assert_eq!(rules.refuse("a", 1), None);
        assert_eq!(rules.refuse("a", 2), None);
        assert_eq!(asked(), 1, "the topic was checked again");
        assert!(matches!(rules.refuse("a", 11), Some(Refusal::TooLarge(_))));
        assert!(matches!(
            rules.refuse("x", 1),
            Some(Refusal::InvalidTopic(_))
        ));
        assert!(matches!(
            rules.refuse("x", 1),
            Some(Refusal::InvalidTopic(_))
        ));
        assert_eq!(asked(), 2);
        // Another topic is checked, and the first one again after it.
        assert_eq!(rules.refuse("b", 1), None);
        assert_eq!(rules.refuse("a", 1), None);
        assert_eq!(asked(), 4);
        // The empty topic is a topic like any other, checked the first time.
        let fresh = Rules::new(Arc::new(Counting::default()));
        assert_eq!(fresh.refuse("", 1), None);
    }

    #[test]
    fn over_limit_refuses_only_past_the_limit_and_names_both_sizes() {
        assert_eq!(Refusal::over_limit(10, 10, "a record"), None);
        assert_eq!(
            Refusal::over_limit(11, 10, "a record")
                .as_ref()
                .map(Refusal::message),
            Some("an event of 11 bytes is over the 10 a record may hold here")
        );
    }
}
