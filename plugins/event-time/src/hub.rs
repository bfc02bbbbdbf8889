//! The hub: numbers events, keeps the recent ones, and fans them out.
//!
//! Publishing takes one short lock that assigns the sequence number, appends
//! to the bounded history ring and sends on a tokio broadcast channel. The
//! broadcast channel never waits for a receiver: when a subscriber falls more
//! than [`LIVE_CAPACITY`] events behind, it loses its place and catches up
//! from the history instead (see [`crate::sse`]), so a slow or gone
//! subscriber can never hold up the publisher or the other subscribers.
//!
//! Subscribing takes the same lock, so the broadcast receiver and the
//! subscriber's replay position meet exactly: every event is either at or
//! before the position the live receiver starts after, or arrives on it.
//! Replay is read from the history in bounded chunks ([`Hub::read`]) as the
//! subscriber's connection takes them, never copied out whole, so a slow
//! subscriber holds at most one chunk of its own.
//!
//! # Ids
//! Sequence numbers (the SSE `id:`) start at the wall clock in microseconds
//! since the Unix epoch when the process starts, then count up by one per
//! event. A restarted server therefore continues above the ids of the one
//! before (as long as that one published less than one event per
//! microsecond on average, far above anything it can serve), and a client's
//! `Last-Event-ID` from an earlier run is recognised as such: it gets
//! everything this run still holds, with a comment saying what was not.

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
    /// The id of this run's first event.
    first_seq: u64,
    next_seq: u64,
    history: VecDeque<Published>,
    history_cap: usize,
    live: broadcast::Sender<Published>,
}

/// What a new subscriber starts from.
#[derive(Debug)]
pub struct Subscription {
    /// Live events published after `head`.
    pub live: broadcast::Receiver<Published>,
    /// Replay from the event after this position up to `head` (from the
    /// history, with [`Hub::read`]); equal to `head` when there is nothing
    /// to replay.
    pub from: u64,
    /// The last sequence number already published when subscribing.
    pub head: u64,
    /// Set when the requested position is not from this run (before its
    /// first id, or ahead of its last): the position, replaced by `from`.
    pub foreign: Option<u64>,
}

/// A chunk of replay read by [`Hub::read`].
#[derive(Debug, Default)]
pub struct Chunk {
    /// The frames of the matching events, concatenated.
    pub frames: bytes::BytesMut,
    /// The position reached (the last event looked at).
    pub pos: u64,
    /// Events after the position asked for that are no longer held (an
    /// inclusive range), skipped.
    pub missed: Option<(u64, u64)>,
}

/// Most events looked at per [`Hub::read`], to keep the lock short when few
/// of them match the subscriber's filter.
const MAX_SCAN: usize = 4096;

/// The wall clock in microseconds since the epoch (at least 1).
pub fn clock_micros() -> u64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX / 2).max(1)
}

impl Hub {
    /// A hub that remembers the last `history` events, numbering them from
    /// the clock (see the module docs).
    pub fn new(history: usize) -> Hub {
        Hub::starting_at(history, clock_micros())
    }

    /// A hub whose first event gets number `first` (at least 1).
    pub fn starting_at(history: usize, first: u64) -> Hub {
        let first = first.max(1);
        let (live, _) = broadcast::channel(LIVE_CAPACITY);
        Hub {
            inner: Mutex::new(Inner {
                first_seq: first,
                next_seq: first,
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

    /// Subscribes to live events after the current head, with a replay
    /// position after `after`.
    ///
    /// `after` is the client's `Last-Event-ID`, or `None` for live events
    /// only. A position from outside this run (below its first id: an
    /// earlier run; above its head: another server) replays everything
    /// held, and is reported in `foreign`.
    pub fn subscribe(&self, after: Option<u64>) -> Subscription {
        let inner = self.lock();
        let live = inner.live.subscribe();
        let head = inner.next_seq - 1;
        let start = inner.first_seq - 1;
        let (from, foreign) = match after {
            None => (head, None),
            Some(a) if a < start || a > head => (start, Some(a)),
            Some(a) => (a, None),
        };
        Subscription {
            live,
            from,
            head,
            foreign,
        }
    }

    /// Reads held events after `pos` up to `upto` that `filter` accepts, up
    /// to about `max_bytes` of frames (at least one event).
    pub fn read(&self, filter: Filter, pos: u64, upto: u64, max_bytes: usize) -> Chunk {
        let inner = self.lock();
        let mut chunk = Chunk {
            pos,
            ..Chunk::default()
        };
        if pos >= upto {
            return chunk;
        }
        let oldest_held = inner.history.front().map_or(inner.next_seq, |e| e.seq);
        // The history is contiguous from `oldest_held` to the head.
        if pos + 1 < oldest_held {
            let last_missed = (oldest_held - 1).min(upto);
            chunk.missed = Some((pos + 1, last_missed));
            chunk.pos = last_missed;
        }
        // The ring is ordered by seq, so skip straight to the first one after `pos`.
        let first = inner.history.partition_point(|e| e.seq <= chunk.pos);
        for e in inner.history.range(first..).take(MAX_SCAN) {
            if e.seq > upto || chunk.frames.len() >= max_bytes {
                break;
            }
            if filter.accepts(e.topic) {
                chunk.frames.extend_from_slice(&e.frame);
            }
            chunk.pos = e.seq;
        }
        chunk
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topics::Catalogue;

    const FIRST: u64 = 1_000;

    fn hub_with(n: usize, history: usize) -> (Hub, Catalogue) {
        let cat = Catalogue::new(true);
        let hub = Hub::starting_at(history, FIRST);
        let a = cat.id("timer/sec/1").unwrap();
        let b = cat.id("timer/sec/5").unwrap();
        hub.publish_batch(n, |seq| {
            (if seq % 2 == 0 { b } else { a }, format!("{seq}"))
        });
        (hub, cat)
    }

    /// Every replayed sequence number from `from` to `upto`, in chunks.
    fn replay(
        hub: &Hub,
        filter: Filter,
        from: u64,
        upto: u64,
        max: usize,
    ) -> (Vec<u64>, Vec<(u64, u64)>) {
        let (mut seqs, mut missed, mut pos) = (Vec::new(), Vec::new(), from);
        while pos < upto {
            let c = hub.read(filter, pos, upto, max);
            assert!(c.pos > pos, "no progress at {pos}");
            missed.extend(c.missed);
            let text = String::from_utf8(c.frames.to_vec()).unwrap();
            seqs.extend(
                text.lines()
                    .filter_map(|l| l.strip_prefix("id: "))
                    .map(|id| id.parse::<u64>().unwrap()),
            );
            pos = c.pos;
        }
        (seqs, missed)
    }

    #[test]
    fn ids_start_at_the_clock_and_are_consecutive() {
        let before = clock_micros();
        let hub = Hub::new(10);
        let seq = hub.publish(0, "x".into());
        assert!(seq >= before && seq <= clock_micros(), "{seq}");
        assert_eq!(hub.publish(0, "y".into()), seq + 1);
        let (hub, cat) = hub_with(5, 100);
        assert_eq!(
            hub.publish(cat.id("timer/sec/1").unwrap(), "x".into()),
            FIRST + 5
        );
    }

    #[test]
    fn replay_is_after_the_position_filtered_and_chunked() {
        let (hub, cat) = hub_with(10, 100);
        let sub = hub.subscribe(Some(FIRST + 3));
        assert_eq!(
            (sub.from, sub.head, sub.foreign),
            (FIRST + 3, FIRST + 9, None)
        );
        let filter = cat.filter("timer/sec/1").unwrap();
        // Tiny chunks: one event each.
        let (seqs, missed) = replay(&hub, filter, sub.from, sub.head, 1);
        assert_eq!(seqs, [FIRST + 5, FIRST + 7, FIRST + 9]);
        assert!(missed.is_empty());
    }

    #[test]
    fn no_position_means_live_only() {
        let (hub, _) = hub_with(10, 100);
        let sub = hub.subscribe(None);
        assert_eq!(sub.from, sub.head);
    }

    #[test]
    fn history_is_bounded_and_reports_what_was_lost() {
        let (hub, cat) = hub_with(10, 3);
        let sub = hub.subscribe(Some(FIRST + 1));
        let (seqs, missed) = replay(&hub, cat.filter(".").unwrap(), sub.from, sub.head, 1 << 20);
        assert_eq!(seqs, [FIRST + 7, FIRST + 8, FIRST + 9]);
        assert_eq!(missed, [(FIRST + 2, FIRST + 6)]);
        // No history at all: everything after the position is missed.
        let (hub, cat) = hub_with(10, 0);
        let (seqs, missed) = replay(&hub, cat.filter(".").unwrap(), FIRST + 4, FIRST + 9, 100);
        assert!(seqs.is_empty());
        assert_eq!(missed, [(FIRST + 5, FIRST + 9)]);
    }

    #[test]
    fn a_position_from_another_run_replays_everything_held() {
        let (hub, cat) = hub_with(4, 100);
        for foreign in [0, 5, FIRST - 2, FIRST + 1_000] {
            let sub = hub.subscribe(Some(foreign));
            assert_eq!(sub.from, FIRST - 1);
            assert_eq!(sub.foreign, Some(foreign));
            let (seqs, _) = replay(&hub, cat.filter(".").unwrap(), sub.from, sub.head, 1 << 20);
            assert_eq!(seqs.len(), 4);
        }
        // The position just before this run's first event is this run's.
        assert_eq!(hub.subscribe(Some(FIRST - 1)).foreign, None);
    }

    #[tokio::test]
    async fn replay_and_live_meet_without_gap_or_duplicate() {
        let (hub, cat) = hub_with(3, 100);
        let mut sub = hub.subscribe(Some(FIRST - 1));
        hub.publish_batch(2, |s| (0, format!("{s}")));
        let (mut seqs, _) = replay(&hub, cat.filter(".").unwrap(), sub.from, sub.head, 1 << 20);
        while let Ok(e) = sub.live.try_recv() {
            seqs.push(e.seq);
        }
        assert_eq!(seqs, (FIRST..FIRST + 5).collect::<Vec<_>>());
    }
}
