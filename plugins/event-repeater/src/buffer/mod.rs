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

use crate::dead_letter::{Book, DeadLetters, Reason, Refused};
use crate::event_key::EventKey;
use crate::ledger::Ledger;
use crate::metrics::{inc, Metrics};
use crate::tap::{Seen, Taps, MAX_TAPS};
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
    /// A dead letter replayed (its `seq`): it does not move the
    /// checkpoint, and what becomes of it goes to the replay, not to a new
    /// letter.
    pub letter: Option<u64>,
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
    /// Where events refused or dropped are kept (`--dead-letter off`: none).
    letters: Option<Arc<DeadLetters>>,
    /// The replayed letters in flight.
    book: Book,
    /// The live taps, offered every outcome.
    taps: Arc<Taps>,
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
            drop_warning: RateLimited::new(Duration::from_secs(5)),
            letters: None,
            book: Book::default(),
            taps: Arc::new(Taps::new(MAX_TAPS, metrics.clone())),
            metrics,
        }
    }

    /// Events refused or dropped from now on are kept in `letters`.
    pub fn with_dead_letters(mut self, letters: Option<Arc<DeadLetters>>) -> Buffer {
        self.letters = letters;
        self
    }

    /// The dead letters, when kept.
    pub fn dead_letters(&self) -> Option<&Arc<DeadLetters>> {
        self.letters.as_ref()
    }

    /// The replayed letters in flight.
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// The live taps.
    pub fn taps(&self) -> &Arc<Taps> {
        &self.taps
    }

    /// Keeps an event refused before it was buffered (`refused` says why).
    pub fn keep(&self, refused: &Refused<'_>) {
        self.taps.see(refused.source_topic, || Seen {
            time: std::time::SystemTime::now(),
            reason: Some(refused.reason),
            why: Some(refused.why.into()),
            source_topic: refused.source_topic.map(Arc::from),
            sink_topic: refused.sink_topic.map(Arc::from),
            id: refused.key.cloned(),
            data: Bytes::copy_from_slice(refused.data),
        });
        if let Some(letters) = &self.letters {
            letters.keep(refused);
        }
    }

    /// A record given up for `reason` (counted there): a dead letter, or
    /// for a replayed one, told to its replay.
    fn give_up(&self, rec: &Record, reason: Reason, why: &str) {
        if let Some(seq) = rec.letter {
            // Not kept again, but the taps see it like any other.
            self.taps
                .see(Some(&rec.source_topic), || seen(rec, Some((reason, why))));
            return self.book.settle(seq, false);
        }
        self.keep(&Refused {
            reason,
            why,
            route: None,
            source_topic: Some(&rec.source_topic),
            key: rec.id.as_ref(),
            event: None,
            sink_topic: Some(&rec.sink_topic),
            data: &rec.payload,
        });
    }

    /// An in-flight event the sink refused for good, for `reason` (whose
    /// failure counter this bumps): kept as a dead letter, and done.
    pub fn refuse(&self, rec: &Record, reason: Reason, why: &str) {
        let counter = match reason {
            Reason::TooLarge => &self.metrics.failed_too_large,
            Reason::InvalidTopic => &self.metrics.failed_invalid_topic,
            Reason::Overflow => &self.metrics.dropped_overflow,
            Reason::SinkError | Reason::Invalid => &self.metrics.failed_sink,
        };
        inc(counter);
        self.give_up(rec, reason, why);
        self.done(rec);
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

    /// Events accepted after the checkpoint (done or not).
    pub fn checkpoint_lag(&self) -> usize {
        self.lock().ledger.behind()
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
                        self.give_up(
                            &old,
                            Reason::Overflow,
                            "the buffer was full (--overflow drop-oldest)",
                        );
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
                        letter: None,
                    });
                    drop(inner);
                    inc(&self.metrics.accepted);
                    self.data.notify_one();
                    return true;
                }
                if self.policy != Overflow::Block {
                    inner.ledger.skip(id);
                    drop(inner);
                    self.keep(&Refused {
                        reason: Reason::Overflow,
                        why: "the buffer was full (--overflow drop-newest)",
                        route: None,
                        source_topic: Some(&source_topic),
                        key: id,
                        event: None,
                        sink_topic: Some(&sink_topic),
                        data: &payload,
                    });
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

    /// Takes a replayed dead letter (`letter`, its seq) in: it waits for
    /// room whatever `--overflow` says (a replay is never dropped) until
    /// `deadline`; `false` when there was no room by then.
    pub async fn push_replay(
        &self,
        source_topic: Arc<str>,
        sink_topic: Arc<str>,
        payload: Bytes,
        id: Option<EventKey>,
        letter: u64,
        deadline: tokio::time::Instant,
    ) -> bool {
        let cost = payload.len() + sink_topic.len();
        loop {
            let space = self.space.notified();
            {
                let mut inner = self.lock();
                if self.fits(&inner, cost) {
                    let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                    inner.queued_bytes += cost;
                    inner.ledger.accept_replay(seq);
                    self.book.expect(letter);
                    inner.queue.push_back(Record {
                        seq,
                        source_topic,
                        sink_topic,
                        payload,
                        id,
                        letter: Some(letter),
                    });
                    drop(inner);
                    self.data.notify_one();
                    return true;
                }
            }
            if tokio::time::timeout_at(deadline, space).await.is_err() {
                return false;
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
        let mut taken = Vec::new();
        self.take_into(&mut taken, max);
        taken
    }

    /// [`Buffer::take`] into `out` (a sink's own queue), without a `Vec`
    /// in between.
    pub fn take_into(&self, out: &mut impl Extend<Record>, max: usize) {
        let mut inner = self.lock();
        let n = max.min(inner.queue.len());
        let mut bytes = 0;
        out.extend(inner.queue.drain(..n).inspect(|r| bytes += r.cost()));
        inner.queued_bytes -= bytes;
        inner.inflight += n;
        inner.inflight_bytes += bytes;
    }

    /// An in-flight event is delivered (acknowledged by the broker); its
    /// room is free and the checkpoint may move past it.
    pub fn release(&self, rec: &Record) {
        self.taps.see(Some(&rec.source_topic), || seen(rec, None));
        if let Some(seq) = rec.letter {
            self.book.settle(seq, true);
        }
        self.done(rec);
    }

    fn done(&self, rec: &Record) {
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

/// What the taps see of a record: delivered, or refused for a reason.
fn seen(rec: &Record, refused: Option<(Reason, &str)>) -> Seen {
    Seen {
        time: std::time::SystemTime::now(),
        reason: refused.map(|(r, _)| r),
        why: refused.map(|(_, why)| why.into()),
        source_topic: Some(rec.source_topic.clone()),
        sink_topic: Some(rec.sink_topic.clone()),
        id: rec.id.clone(),
        data: rec.payload.clone(),
    }
}

#[cfg(test)]
mod tests;
