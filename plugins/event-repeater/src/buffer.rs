//! The bounded buffer between the router and the sink.
//!
//! It holds events waiting to be sent (the queue) and accounts for events
//! sent but not yet acknowledged (in flight), so one budget, `--buffer`
//! events and `--buffer-bytes` bytes, bounds the memory of both whatever the
//! length of an outage. When an event does not fit, the `--overflow` policy
//! decides: drop the oldest queued events, drop the new one, or block the
//! router (which stops reading the source). Every drop is counted and logged
//! with a rate-limited warning.
//!
//! The buffer also keeps the [`Ledger`] of the checkpoint under the same
//! lock: every event the router sees is recorded in arrival order (accepted
//! here, or skipped as done at once), and a record is done when the sink
//! [`Buffer::release`]s it or the overflow policy drops it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use app_plugin::daemon::Shutdown;
use bytes::Bytes;
use tokio::sync::Notify;

use crate::event_key::EventKey;
use crate::ledger::Ledger;
use crate::metrics::{inc, Metrics};
use app_plugin::log::{RateLimited, WARN};

/// The policy a full buffer applies (`--overflow`).
pub use crate::overflow::Overflow;

/// One accepted event on its way to the sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Acceptance order, unique in this process.
    pub seq: u64,
    /// The topics, shared with the router's last route
    /// (`routes::LastRoute`) rather than copied for each event.
    pub source_topic: Arc<str>,
    pub sink_topic: Arc<str>,
    /// The event as one line of JSON.
    pub payload: Bytes,
    /// Its place in the source's stream and dedup key (the NATS sink's
    /// `Nats-Msg-Id`).
    pub id: Option<EventKey>,
}

impl Record {
    /// The bytes this record counts against `--buffer-bytes`.
    pub fn cost(&self) -> usize {
        self.payload.len() + self.sink_topic.len()
    }
}

// The gauges are plain numbers defined next to their rendering, so that
// `metrics` does not depend on this module (which counts into `metrics`).
pub use crate::metrics::BufferStats;

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<Record>,
    queued_bytes: usize,
    inflight: usize,
    inflight_bytes: usize,
    ledger: Ledger,
}

pub struct Buffer {
    inner: Mutex<Inner>,
    data: Notify,
    space: Notify,
    max_events: usize,
    max_bytes: usize,
    policy: Overflow,
    next_seq: AtomicU64,
    metrics: Arc<Metrics>,
    drop_warning: RateLimited,
}

impl Buffer {
    pub fn new(
        max_events: usize,
        max_bytes: usize,
        policy: Overflow,
        metrics: Arc<Metrics>,
    ) -> Buffer {
        Buffer::resuming(max_events, max_bytes, policy, metrics, None)
    }

    /// A buffer whose checkpoint starts at `checkpoint` (loaded at start).
    pub fn resuming(
        max_events: usize,
        max_bytes: usize,
        policy: Overflow,
        metrics: Arc<Metrics>,
        checkpoint: Option<EventKey>,
    ) -> Buffer {
        Buffer {
            inner: Mutex::new(Inner {
                ledger: Ledger::new(checkpoint),
                ..Inner::default()
            }),
            data: Notify::new(),
            space: Notify::new(),
            max_events: max_events.max(1),
            max_bytes,
            policy,
            next_seq: AtomicU64::new(1),
            metrics,
            drop_warning: RateLimited::new(Duration::from_secs(5)),
        }
    }

    // The lock is only held for plain memory operations, never across an
    // await, so a poisoned lock can only come from a panic in them: the data
    // is still consistent and we go on with it.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fits(&self, inner: &Inner, cost: usize) -> bool {
        inner.queue.len() + inner.inflight < self.max_events
            && inner.queued_bytes + inner.inflight_bytes + cost <= self.max_bytes
    }

    /// Records an event that is done on arrival (not routed, invalid or
    /// refused), so the checkpoint can move past it.
    pub fn skip(&self, id: Option<&EventKey>) {
        self.lock().ledger.skip(id);
    }

    /// The checkpoint (see [`crate::checkpoint`]) and its version.
    pub fn checkpoint(&self) -> (Option<EventKey>, u64) {
        self.lock().ledger.checkpoint()
    }

    /// Takes an event (source event id `id`) in, applying the overflow
    /// policy. Returns whether it was accepted; `false` means dropped
    /// (counted) or, with `block`, that `cancel` fired while waiting for room
    /// (then the event is not done, and the checkpoint stays before it).
    pub async fn push(
        &self,
        source_topic: Arc<str>,
        sink_topic: Arc<str>,
        payload: Bytes,
        id: Option<&EventKey>,
        cancel: &Shutdown,
    ) -> bool {
        let cost = payload.len() + sink_topic.len();
        loop {
            let space = self.space.notified();
            {
                let mut inner = self.lock();
                if self.policy == Overflow::DropOldest {
                    let mut dropped = 0u64;
                    while !self.fits(&inner, cost) {
                        let Some(old) = inner.queue.pop_front() else {
                            break;
                        };
                        inner.queued_bytes -= old.cost();
                        inner.ledger.done(old.seq);
                        dropped += 1;
                    }
                    if dropped > 0 {
                        self.metrics
                            .dropped_overflow
                            .fetch_add(dropped, Ordering::Relaxed);
                        self.warn_drop(dropped, "the oldest waiting events were");
                    }
                }
                if self.fits(&inner, cost) {
                    let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                    inner.queued_bytes += cost;
                    inner.ledger.accept(seq, id);
                    inner.queue.push_back(Record {
                        seq,
                        source_topic,
                        sink_topic,
                        payload,
                        id: id.cloned(),
                    });
                    drop(inner);
                    inc(&self.metrics.accepted);
                    self.data.notify_one();
                    return true;
                }
                if self.policy != Overflow::Block {
                    inner.ledger.skip(id);
                    drop(inner);
                    inc(&self.metrics.dropped_overflow);
                    self.warn_drop(1, "the new event was");
                    return false;
                }
            }
            tokio::select! {
                _ = space => {}
                _ = cancel.recv() => return false,
            }
        }
    }

    fn warn_drop(&self, n: u64, what: &str) {
        let policy = self.policy.name();
        let (max_events, max_bytes) = (self.max_events, self.max_bytes);
        self.drop_warning.log(WARN, || {
            format!(
                "buffer full ({max_events} events / {max_bytes} bytes): {what} dropped ({n}; --overflow {policy}); see events_dropped_total in /metrics"
            )
        });
    }

    /// Moves the oldest queued event to in flight.
    pub fn take_one(&self) -> Option<Record> {
        let mut inner = self.lock();
        let rec = inner.queue.pop_front()?;
        let cost = rec.cost();
        inner.queued_bytes -= cost;
        inner.inflight += 1;
        inner.inflight_bytes += cost;
        Some(rec)
    }

    /// Moves up to `max` queued events to in flight, oldest first.
    pub fn take(&self, max: usize) -> Vec<Record> {
        let mut inner = self.lock();
        let n = max.min(inner.queue.len());
        let taken: Vec<Record> = inner.queue.drain(..n).collect();
        let bytes: usize = taken.iter().map(Record::cost).sum();
        inner.queued_bytes -= bytes;
        inner.inflight += n;
        inner.inflight_bytes += bytes;
        taken
    }

    /// An in-flight event is done (acknowledged, refused or given up); its
    /// room is free and the checkpoint may move past it.
    pub fn release(&self, rec: &Record) {
        let mut inner = self.lock();
        inner.inflight = inner.inflight.saturating_sub(1);
        inner.inflight_bytes = inner.inflight_bytes.saturating_sub(rec.cost());
        inner.ledger.done(rec.seq);
        drop(inner);
        self.space.notify_one();
    }

    /// Waits until there may be queued events (returns at once if a wake-up
    /// is pending).
    pub async fn ready(&self) {
        if !self.lock().queue.is_empty() {
            return;
        }
        self.data.notified().await;
    }

    pub fn is_queue_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }

    pub fn stats(&self) -> BufferStats {
        let inner = self.lock();
        BufferStats {
            queued: inner.queue.len(),
            queued_bytes: inner.queued_bytes,
            inflight: inner.inflight,
            inflight_bytes: inner.inflight_bytes,
            max_events: self.max_events,
            max_bytes: self.max_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(n: usize, bytes: usize, policy: Overflow) -> (Buffer, Arc<Metrics>) {
        let m = Arc::new(Metrics::default());
        (Buffer::new(n, bytes, policy, m.clone()), m)
    }

    async fn push(b: &Buffer, payload: &str) -> bool {
        b.push(
            "s".into(),
            "t".into(),
            Bytes::from(payload.to_string()),
            Some(&EventKey::own(Arc::from(payload))),
            &Shutdown::new(),
        )
        .await
    }

    fn payloads(records: &[Record]) -> Vec<String> {
        records
            .iter()
            .map(|r| String::from_utf8(r.payload.to_vec()).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn drop_oldest_keeps_the_newest_and_counts() {
        let (b, m) = buffer(3, 1000, Overflow::DropOldest);
        for p in ["1", "2", "3", "4", "5"] {
            assert!(push(&b, p).await);
        }
        assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 2);
        assert_eq!(payloads(&b.take(10)), ["3", "4", "5"]);
    }

    #[tokio::test]
    async fn drop_newest_keeps_the_oldest_and_counts() {
        let (b, m) = buffer(3, 1000, Overflow::DropNewest);
        for p in ["1", "2", "3", "4", "5"] {
            push(&b, p).await;
        }
        assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 2);
        assert_eq!(payloads(&b.take(10)), ["1", "2", "3"]);
    }

    #[tokio::test]
    async fn in_flight_events_count_against_the_budget() {
        let (b, m) = buffer(2, 1000, Overflow::DropOldest);
        push(&b, "1").await;
        push(&b, "2").await;
        let taken = b.take(2);
        // Nothing queued can be dropped for room: the new event goes.
        assert!(!push(&b, "3").await);
        assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 1);
        b.release(&taken[0]);
        assert!(push(&b, "4").await);
        assert_eq!(b.stats().inflight, 1);
        assert_eq!(b.stats().queued, 1);
    }

    #[tokio::test]
    async fn the_byte_cap_applies() {
        let (b, m) = buffer(100, 10, Overflow::DropNewest);
        assert!(push(&b, "aaaa").await); // 4 + 1 = 5 bytes
        assert!(push(&b, "bbbb").await); // 10
        assert!(!push(&b, "c").await);
        assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 1);
        assert_eq!(b.stats().queued_bytes, 10);
    }

    /// On paused time a sleep ends only once every other task is idle: the
    /// waiter has run up to its wait for room, so "not finished" after it
    /// means blocked, not "not scheduled yet".
    #[tokio::test(start_paused = true)]
    async fn block_waits_for_room_and_can_be_cancelled() {
        let (b, m) = buffer(1, 1000, Overflow::Block);
        let b = Arc::new(b);
        assert!(push(&b, "1").await);
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { push(&b2, "2").await });
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!waiter.is_finished(), "the push did not wait for room");
        assert_eq!(b.stats().queued, 1);
        let t = b.take(1);
        b.release(&t[0]);
        assert!(waiter.await.unwrap());
        assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 0);
        let cancel = Shutdown::new();
        let b3 = b.clone();
        let c2 = cancel.clone();
        let waiter = tokio::spawn(async move {
            b3.push("s".into(), "t".into(), Bytes::from_static(b"3"), None, &c2)
                .await
        });
        tokio::time::sleep(Duration::from_secs(3600)).await;
        // Blocked (the buffer holds "2"), so what ends it below is the cancel.
        assert!(!waiter.is_finished(), "the push did not wait for room");
        cancel.trigger(app_plugin::daemon::Reason::Terminate);
        assert!(!waiter.await.unwrap());
        assert_eq!(b.stats().queued, 1);
    }

    fn checkpoint(b: &Buffer) -> Option<String> {
        b.checkpoint().0.map(|s| s.as_str().to_string())
    }

    #[tokio::test]
    async fn the_checkpoint_follows_releases_and_drops_in_arrival_order() {
        let (b, _) = buffer(2, 1000, Overflow::DropOldest);
        assert_eq!(checkpoint(&b), None);
        push(&b, "1").await;
        b.skip(Some(&EventKey::own(Arc::from("2"))));
        push(&b, "3").await;
        assert_eq!(checkpoint(&b), None, "1 is not done");
        // 4 pushes 1 out (dropped and counted: done).
        push(&b, "4").await;
        assert_eq!(checkpoint(&b).as_deref(), Some("2"));
        let taken = b.take(2);
        b.release(&taken[1]);
        assert_eq!(checkpoint(&b).as_deref(), Some("2"), "3 is not done");
        b.release(&taken[0]);
        assert_eq!(checkpoint(&b).as_deref(), Some("4"));
        // drop-newest: the dropped event is done too.
        let (b, _) = buffer(1, 1000, Overflow::DropNewest);
        push(&b, "5").await;
        assert!(!push(&b, "6").await);
        assert_eq!(checkpoint(&b), None);
        let t = b.take(1);
        b.release(&t[0]);
        assert_eq!(checkpoint(&b).as_deref(), Some("6"));
    }
}
