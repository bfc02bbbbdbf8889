//! What a sink that awaits acknowledgements sends next: first what failed,
//! in acceptance order, then new events, taken from the buffer in batches
//! (one lock for many events rather than one per event).

use std::collections::{BTreeMap, VecDeque};

use crate::buffer::{Buffer, Record};

/// The most events taken from the buffer at once.
const TAKE_MAX: usize = 256;

/// An event on its way.
pub struct Job {
    pub rec: Record,
    /// Sent before (a republish).
    pub again: bool,
}

/// Events taken from the buffer and not sent yet, or sent and failed.
/// The buffer counts them in flight, so the checkpoint stays before them.
#[derive(Default)]
pub struct Outbox {
    /// Failed, to send again first, by acceptance order.
    retry: BTreeMap<u64, Job>,
    /// Taken, not sent; newer than everything in `retry`.
    taken: VecDeque<Record>,
}

impl Outbox {
    /// The next event to send: one to send again, else a new one, taking
    /// up to `room` events from `buffer` when none are left here.
    pub fn next(&mut self, buffer: &Buffer, room: usize) -> Option<Job> {
        if let Some((_, job)) = self.retry.pop_first() {
            return Some(job);
        }
        if self.taken.is_empty() {
            buffer.take_into(&mut self.taken, room.min(TAKE_MAX));
        }
        let rec = self.taken.pop_front()?;
        Some(Job { rec, again: false })
    }

    /// Keeps `job` to send before any new event.
    pub fn retry(&mut self, job: Job) {
        self.retry.insert(job.rec.seq, job);
    }

    /// Whether a failed event waits to be sent again.
    pub fn has_retries(&self) -> bool {
        !self.retry.is_empty()
    }

    /// Events held here: undelivered if the sink stops now.
    pub fn held(&self) -> usize {
        self.retry.len() + self.taken.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use app_plugin::daemon::Shutdown;
    use bytes::Bytes;

    use crate::event_key::EventKey;
    use crate::metrics::Metrics;
    use crate::overflow::Overflow;

    async fn buffer_of(payloads: &[&str]) -> Buffer {
        let b = Buffer::new(100, 1 << 20, Overflow::Block, Arc::new(Metrics::default()));
        for p in payloads {
            let key = EventKey::own(Arc::from(*p));
            let pushed = b
                .push(
                    "s".into(),
                    "t".into(),
                    Bytes::from(p.to_string()),
                    Some(&key),
                    &Shutdown::new(),
                )
                .await;
            assert!(pushed);
        }
        b
    }

    fn text(job: &Job) -> &str {
        std::str::from_utf8(&job.rec.payload).unwrap_or("?")
    }

    #[tokio::test]
    async fn failed_events_go_first_in_acceptance_order_then_new_ones_in_batches() {
        let b = buffer_of(&["1", "2", "3", "4", "5"]).await;
        let mut out = Outbox::default();
        let first = out.next(&b, 3).expect("an event");
        assert_eq!((text(&first), first.again), ("1", false));
        // One take moved three events in flight; two stay queued.
        assert_eq!((b.stats().inflight, b.stats().queued), (3, 2));
        assert_eq!(out.held(), 2);
        let second = out.next(&b, 3).expect("an event");
        assert_eq!(text(&second), "2");
        // Failed, they go before the third, the older first.
        out.retry(Job {
            again: true,
            ..second
        });
        out.retry(Job {
            again: true,
            ..first
        });
        assert!(out.has_retries());
        let order: Vec<(String, bool)> = std::iter::from_fn(|| out.next(&b, 10))
            .map(|j| (text(&j).to_string(), j.again))
            .collect();
        let want = [
            ("1", true),
            ("2", true),
            ("3", false),
            ("4", false),
            ("5", false),
        ];
        assert_eq!(order, want.map(|(t, a)| (t.to_string(), a)));
        assert_eq!((out.held(), b.stats().queued), (0, 0));
    }
}
