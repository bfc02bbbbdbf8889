//! Why an accepted event was not delivered: the `reason` of
//! `events_failed_total` and `events_dropped_total`, and of a dead letter.
//! A leaf, so the metrics, the buffer, the router and the dead letters can
//! all name it.

use app_event_repeater_api::metric::label;

/// A reason of the event's own (not a broker outage: those wait in the
/// buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The decoder could not take the data (not JSON, no topic).
    Invalid,
    /// A sink topic that cannot be made, or that the sink refuses.
    InvalidTopic,
    /// Over the sink's or the broker's size limit.
    TooLarge,
    /// The broker refused it for good.
    SinkError,
    /// Dropped by `--overflow drop-oldest|drop-newest`.
    Overflow,
}

impl Reason {
    /// Every reason, in the order of [`Reason::index`].
    pub const ALL: [Reason; 5] = [
        Reason::Invalid,
        Reason::InvalidTopic,
        Reason::TooLarge,
        Reason::SinkError,
        Reason::Overflow,
    ];

    /// The metric label and dead-letter `reason`.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Invalid => label::INVALID,
            Reason::InvalidTopic => label::INVALID_TOPIC,
            Reason::TooLarge => label::TOO_LARGE,
            Reason::SinkError => label::SINK_ERROR,
            Reason::Overflow => label::OVERFLOW,
        }
    }

    /// Its place in [`Reason::ALL`] (and in per-reason counters).
    pub fn index(self) -> usize {
        self as usize
    }

    /// The reason whose label is `text`.
    pub fn from_label(text: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.label() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasons_are_the_apis() {
        let labels = Reason::ALL.map(Reason::label);
        assert_eq!(labels, app_event_repeater_api::dead_letter::REASONS);
    }

    #[test]
    fn every_reason_has_its_own_label_and_index() {
        for (i, r) in Reason::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
            assert_eq!(Reason::from_label(r.label()), Some(r));
        }
        assert_eq!(Reason::from_label("nope"), None);
    }
}
