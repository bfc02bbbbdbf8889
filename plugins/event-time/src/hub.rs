//! The hub: numbers events, keeps the recent ones, and fans them out.
//!
//! Publishing takes one short lock that assigns the sequence number, appends
//! to the bounded history ring and sends on a tokio broadcast channel. The
//! broadcast channel never waits for a receiver: when a subscriber falls more
//! than [`LIVE_CAPACITY`] events behind, it loses its place and catches up
//! from the history instead (see [`crate::sse`]), so a slow or gone
//! subscriber can never hold up the publisher or the other subscribers.
//!
//! Subscribing takes the same lock, so the broadcast receiver and the history
//! snapshot meet exactly: every event is either in the snapshot or arrives on
//! the receiver, never both and never neither.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::event::Published;
use crate::topics::{Filter, TopicId};

/// How many events the live channel holds for its slowest receiver.
pub const LIVE_CAPACITY: usize = 4096;

/// Default `--history`.
pub const DEFAULT_HISTORY: usize = 10_000;

/// The publisher side, shared by the event sources and the HTTP handlers.
#[derive(Debug)]
pub struct Hub {
    // A std mutex is enough: it is never held across an await, and every
    // critical section is a few pointer moves (or one bounded snapshot).
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    next_seq: u64,
    history: VecDeque<Published>,
    history_cap: usize,
    live: broadcast::Sender<Published>,
}

/// What a new subscriber starts from.
#[derive(Debug)]
pub struct Subscription {
    /// Live events published after the snapshot.
    pub live: broadcast::Receiver<Published>,
    /// Held events after the requested position that match the filter, oldest first.
    pub replay: Vec<Published>,
    /// The last sequence number already published when the snapshot was taken.
    pub head: u64,
    /// Sequence numbers after the requested position that are no longer held
    /// (an inclusive range), if any.
    pub missed: Option<(u64, u64)>,
}

impl Hub {
    /// A hub that remembers the last `history` events.
    pub fn new(history: usize) -> Hub {
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        Hub {
            inner: Mutex::new(Inner {
                next_seq: 1,
                history: VecDeque::with_capacity(history.min(DEFAULT_HISTORY)),
                history_cap: history,
                live,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the ring half-updated in
        // a way that matters (every step is a single push/pop), so go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes a batch of events under one lock: `make(seq)` returns the
    /// topic and JSON of the event that gets number `seq`. Returns the last
    /// sequence number used.
    pub fn publish_batch<F>(&self, count: usize, mut make: F) -> u64
    where
        F: FnMut(u64) -> (TopicId, String),
    {
        let mut inner = self.lock();
        for _ in 0..count {
            let seq = inner.next_seq;
            inner.next_seq += 1;
            let (topic, json) = make(seq);
            let event = Published::new(seq, topic, &json);
            if inner.history_cap > 0 {
                if inner.history.len() == inner.history_cap {
                    inner.history.pop_front();
                }
                inner.history.push_back(event.clone());
            }
            // An error only means nobody is listening right now.
            let _ = inner.live.send(event);
        }
        inner.next_seq - 1
    }

    /// Publishes one event; returns its sequence number.
    pub fn publish(&self, topic: TopicId, json: String) -> u64 {
        let mut json = Some(json);
        self.publish_batch(1, |_| (topic, json.take().unwrap_or_default()))
    }

    /// Subscribes to live events and snapshots the held events with a
    /// sequence number above `after` that `filter` accepts.
    ///
    /// `after` is the client's `Last-Event-ID`, or `None` for live events
    /// only. A position ahead of this server's last event comes from an
    /// earlier run of the server (sequence numbers restart at 1), so
    /// everything held is replayed.
    pub fn subscribe(&self, filter: Filter, after: Option<u64>) -> Subscription {
        let inner = self.lock();
        let live = inner.live.subscribe();
        let head = inner.next_seq - 1;
        let after = match after {
            None => head,
            Some(a) if a > head => 0,
            Some(a) => a,
        };
        let oldest_held = inner.history.front().map_or(head + 1, |e| e.seq);
        let missed = (after + 1 < oldest_held).then(|| (after + 1, oldest_held - 1));
        // The ring is ordered by seq, so skip straight to the first one after `after`.
        let start = inner.history.partition_point(|e| e.seq <= after);
        let replay = inner
            .history
            .range(start..)
            .filter(|e| filter.accepts(e.topic))
            .cloned()
            .collect();
        Subscription {
            live,
            replay,
            head,
            missed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topics::Catalogue;

    fn hub_with(n: usize, history: usize) -> (Hub, Catalogue) {
        let cat = Catalogue::new(true);
        let hub = Hub::new(history);
        let a = cat.id("timer/sec/1").unwrap();
        let b = cat.id("timer/sec/5").unwrap();
        hub.publish_batch(n, |seq| {
            (if seq % 2 == 0 { b } else { a }, format!("{seq}"))
        });
        (hub, cat)
    }

    #[test]
    fn sequence_numbers_are_consecutive_from_one() {
        let (hub, cat) = hub_with(5, 100);
        assert_eq!(hub.publish(cat.id("timer/sec/1").unwrap(), "x".into()), 6);
    }

    #[test]
    fn replay_is_after_the_position_and_filtered() {
        let (hub, cat) = hub_with(10, 100);
        let sub = hub.subscribe(cat.filter("timer/sec/1").unwrap(), Some(4));
        let seqs: Vec<u64> = sub.replay.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [5, 7, 9]);
        assert_eq!(sub.head, 10);
        assert_eq!(sub.missed, None);
    }

    #[test]
    fn no_position_means_live_only() {
        let (hub, cat) = hub_with(10, 100);
        let sub = hub.subscribe(cat.filter(".").unwrap(), None);
        assert!(sub.replay.is_empty());
    }

    #[test]
    fn history_is_bounded_and_reports_what_was_lost() {
        let (hub, cat) = hub_with(10, 3);
        let sub = hub.subscribe(cat.filter(".").unwrap(), Some(2));
        let seqs: Vec<u64> = sub.replay.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [8, 9, 10]);
        assert_eq!(sub.missed, Some((3, 7)));
    }

    #[test]
    fn a_position_from_an_earlier_run_replays_everything_held() {
        let (hub, cat) = hub_with(4, 100);
        let sub = hub.subscribe(cat.filter(".").unwrap(), Some(1_000));
        assert_eq!(sub.replay.len(), 4);
    }

    #[tokio::test]
    async fn snapshot_and_live_meet_without_gap_or_duplicate() {
        let (hub, cat) = hub_with(3, 100);
        let mut sub = hub.subscribe(cat.filter(".").unwrap(), Some(0));
        hub.publish_batch(2, |s| (0, format!("{s}")));
        let mut seqs: Vec<u64> = sub.replay.iter().map(|e| e.seq).collect();
        while let Ok(e) = sub.live.try_recv() {
            seqs.push(e.seq);
        }
        assert_eq!(seqs, [1, 2, 3, 4, 5]);
    }
}
