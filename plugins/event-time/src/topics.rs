//! The topic catalogue and the subscription rules.
//!
//! Topics are `/`-separated paths fixed at start-up. A subscription is one of:
//! - `.` or empty: every topic;
//! - a string ending in `/`: every topic under it (`timer/sec/` gets
//!   `timer/sec/1`, `timer/sec/5`, …);
//! - anything else: exactly that topic (`timer/sec/1` never gets `timer/sec/10`).
//!
//! A subscription that matches no known topic is refused, so that a typo is an
//! error rather than a silent, empty stream.

use std::time::Duration;

/// The timer topics: (topic, event id, period).
pub const TIMERS: [(&str, &str, Duration); 9] = [
    ("timer/msec/100", "100ms", Duration::from_millis(100)),
    ("timer/msec/500", "500ms", Duration::from_millis(500)),
    ("timer/sec/1", "1s", Duration::from_secs(1)),
    ("timer/sec/5", "5s", Duration::from_secs(5)),
    ("timer/sec/30", "30s", Duration::from_secs(30)),
    ("timer/min/1", "1m", Duration::from_secs(60)),
    ("timer/min/5", "5m", Duration::from_secs(300)),
    ("timer/min/30", "30m", Duration::from_secs(1800)),
    ("timer/hr/1", "1h", Duration::from_secs(3600)),
];

/// The topic of the numbered test stream (`--rate`).
pub const TEST_SEQ: &str = "test/seq";

/// The index of a topic in its [`Catalogue`]; events carry it so that
/// matching a subscription is a bit test, not a string comparison.
pub type TopicId = u8;

/// The topics one server publishes, in a fixed order.
#[derive(Debug, Clone)]
pub struct Catalogue {
    topics: Vec<&'static str>,
}

impl Catalogue {
    /// The timer topics, plus `test/seq` when the test stream is on.
    pub fn new(with_test_stream: bool) -> Catalogue {
        let mut topics: Vec<&'static str> = TIMERS.iter().map(|t| t.0).collect();
        if with_test_stream {
            topics.push(TEST_SEQ);
        }
        Catalogue { topics }
    }

    /// Every topic, in catalogue order.
    pub fn topics(&self) -> &[&'static str] {
        &self.topics
    }

    /// The id of a known topic.
    pub fn id(&self, topic: &str) -> Option<TopicId> {
        self.topics
            .iter()
            .position(|t| *t == topic)
            .and_then(|i| TopicId::try_from(i).ok())
    }

    /// Resolves a subscription to the set of topics it receives, or `None`
    /// when it matches no known topic.
    pub fn filter(&self, subscription: &str) -> Option<Filter> {
        let mut mask = 0u64;
        for (i, topic) in self.topics.iter().enumerate() {
            if matches(subscription, topic) {
                mask |= 1 << i;
            }
        }
        (mask != 0).then_some(Filter { mask })
    }
}

/// The set of topics a subscriber receives (at most 64 topics per catalogue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filter {
    mask: u64,
}

impl Filter {
    /// Whether events of this topic go to the subscriber.
    pub fn accepts(self, topic: TopicId) -> bool {
        topic < 64 && self.mask & (1 << topic) != 0
    }
}

/// Whether `subscription` covers `topic` under the rules in the module doc.
pub fn matches(subscription: &str, topic: &str) -> bool {
    if subscription.is_empty() || subscription == "." {
        return true;
    }
    if subscription.ends_with('/') {
        return topic.starts_with(subscription);
    }
    subscription == topic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_topic_does_not_match_a_longer_sibling() {
        assert!(matches("timer/sec/1", "timer/sec/1"));
        assert!(!matches("timer/sec/1", "timer/sec/10"));
        assert!(!matches("timer/sec/10", "timer/sec/1"));
        assert!(!matches("timer/sec", "timer/sec/1"));
    }

    #[test]
    fn trailing_slash_matches_the_subtree_on_segment_boundaries() {
        assert!(matches("timer/sec/", "timer/sec/1"));
        assert!(matches("timer/sec/", "timer/sec/30"));
        assert!(matches("timer/", "timer/hr/1"));
        assert!(!matches("timer/sec/", "timer/msec/100"));
        assert!(!matches("timer/se/", "timer/sec/1"));
        assert!(!matches("timer/sec/1/", "timer/sec/1"));
    }

    #[test]
    fn dot_and_empty_match_everything() {
        for sub in ["", "."] {
            assert!(matches(sub, "timer/sec/1"));
            assert!(matches(sub, TEST_SEQ));
        }
    }

    #[test]
    fn catalogue_filters_resolve_to_the_right_topics() {
        let cat = Catalogue::new(true);
        let id = |t| cat.id(t).unwrap();
        let exact = cat.filter("timer/sec/1").unwrap();
        assert!(exact.accepts(id("timer/sec/1")));
        assert!(!exact.accepts(id("timer/sec/5")));
        let sec = cat.filter("timer/sec/").unwrap();
        let accepted: Vec<_> = cat.topics().iter().filter(|t| sec.accepts(id(t))).collect();
        assert_eq!(accepted, [&"timer/sec/1", &"timer/sec/5", &"timer/sec/30"]);
        let all = cat.filter(".").unwrap();
        assert!(cat.topics().iter().all(|t| all.accepts(id(t))));
    }

    #[test]
    fn unknown_subscriptions_are_refused() {
        let cat = Catalogue::new(false);
        assert_eq!(cat.filter("timer/sec/10"), None);
        assert_eq!(cat.filter("timer/sec"), None);
        assert_eq!(cat.filter("nope/"), None);
        assert_eq!(cat.filter("/"), None);
        assert_eq!(
            cat.filter(TEST_SEQ),
            None,
            "test/seq exists only with --rate"
        );
        assert!(Catalogue::new(true).filter("test/").is_some());
    }
}
