//! The live tap (`GET /tap`): what becomes of the events after routing,
//! offered to the taps open now.
//!
//! A tap never slows delivery. The buffer offers an event's outcome with
//! [`Taps::see`], which with no tap open costs one relaxed atomic load and
//! builds nothing. With taps open, the event is built once ([`Seen`], its
//! topics and data shared, not copied) and pushed onto each matching tap's
//! bounded queue without waiting: a full queue skips it and counts the skip,
//! which the tap's reader reports before its next event ([`Next::Skipped`]).
//! A queue known to be full skips without a lock, and when every matching
//! queue is full the event is not built at all: a stalled tap costs an
//! event a read lock and two counters.
//! The number of taps is bounded ([`MAX_TAPS`]).
//!
//! A leaf below the buffer: it knows the metrics, the reasons and the event
//! keys, nothing of the buffer, the sink or the API.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::SystemTime;

pub use app_event_repeater_api::tap::{Outcome, TapEvent, MAX_TAPS, QUEUE_BYTES, QUEUE_EVENTS};
use bytes::Bytes;
use tokio::sync::Notify;

use crate::event_key::EventKey;
use crate::metrics::{inc, Metrics};
use crate::reason::Reason;

/// One event's outcome, as the taps see it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub time: SystemTime,
    /// Why it was not delivered (`None`: delivered).
    pub reason: Option<Reason>,
    pub why: Option<Box<str>>,
    pub source_topic: Option<Arc<str>>,
    pub sink_topic: Option<Arc<str>>,
    pub id: Option<EventKey>,
    pub data: Bytes,
}

impl Seen {
    pub fn outcome(&self) -> Outcome {
        match self.reason {
            None => Outcome::Delivered,
            Some(Reason::Overflow) => Outcome::Dropped,
            Some(_) => Outcome::Refused,
        }
    }

    /// The bytes it holds in a tap's queue.
    fn cost(&self) -> usize {
        self.data.len()
            + self.source_topic.as_ref().map_or(0, |t| t.len())
            + self.sink_topic.as_ref().map_or(0, |t| t.len())
            + self.why.as_ref().map_or(0, |w| w.len())
    }

    /// What the client reads (built by the tap's reader, not on delivery).
    pub fn event(&self) -> TapEvent {
        TapEvent {
            time: humantime::format_rfc3339_millis(self.time).to_string(),
            outcome: self.outcome(),
            reason: self.reason.map(|r| r.label().to_string()),
            why: self.why.as_deref().map(str::to_string),
            source_topic: self.source_topic.as_deref().map(str::to_string),
            sink_topic: self.sink_topic.as_deref().map(str::to_string),
            id: self.id.as_ref().map(|k| k.last_event_id().to_string()),
            data: String::from_utf8_lossy(&self.data).into_owned(),
        }
    }
}

/// Which events a tap wants, by their source topic (`None`: an event that
/// had none, such as one that was not JSON).
pub type Filter = Box<dyn Fn(Option<&str>) -> bool + Send + Sync>;

/// Why a tap could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("{0} taps are open, the most this repeater allows; close one (end its `manage tap`) and try again")]
    Full(usize),
    #[error("the repeater is stopping")]
    Stopping,
}

/// The taps open now.
pub struct Taps {
    /// How many are open: the one thing [`Taps::see`] reads when none is.
    open: AtomicUsize,
    queues: RwLock<Registry>,
    max: usize,
    metrics: Arc<Metrics>,
}

#[derive(Default)]
struct Registry {
    queues: Vec<Arc<Queue>>,
    stopping: bool,
}

/// One tap's queue.
struct Queue {
    filter: Filter,
    waiting: Mutex<Waiting>,
    ready: Notify,
    /// Set when an event found the queue full, cleared when the reader
    /// takes one: until then events skip it without its lock.
    full: AtomicBool,
    /// Skipped since the last event queued.
    skipped: AtomicU64,
}

#[derive(Default)]
struct Waiting {
    /// Events, each with how many were skipped just before it.
    events: VecDeque<(u64, Arc<Seen>)>,
    bytes: usize,
    closed: bool,
}

impl Queue {
    // Only plain memory operations happen under these locks: a poisoned
    // one still holds consistent data.
    fn lock(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Taps {
    /// Room for `max` taps.
    pub fn new(max: usize, metrics: Arc<Metrics>) -> Taps {
        Taps {
            open: AtomicUsize::new(0),
            queues: RwLock::default(),
            max,
            metrics,
        }
    }

    /// Offers the outcome of an event of `topic` to the taps; `seen` is
    /// only called when a tap open takes it and has room.
    #[inline]
    pub fn see(&self, topic: Option<&str>, seen: impl FnOnce() -> Seen) {
        if self.open.load(Ordering::Relaxed) != 0 {
            self.offer(topic, seen);
        }
    }

    #[cold]
    #[inline(never)]
    fn offer(&self, topic: Option<&str>, seen: impl FnOnce() -> Seen) {
        let registry = self.queues.read().unwrap_or_else(|e| e.into_inner());
        let mut make = Some(seen);
        let mut built: Option<(Arc<Seen>, usize)> = None;
        for queue in &registry.queues {
            if !(queue.filter)(topic) {
                continue;
            }
            if queue.full.load(Ordering::Relaxed) {
                self.skip(queue);
                continue;
            }
            if let Some(make) = make.take() {
                let seen = Arc::new(make());
                let cost = seen.cost();
                built = Some((seen, cost));
            }
            let Some((seen, cost)) = &built else {
                continue;
            };
            let mut w = queue.lock();
            // One event larger than the bytes allowed still goes into an
            // empty queue, so that a tap can show a large refused event.
            let full = w.events.len() >= QUEUE_EVENTS
                || (!w.events.is_empty() && w.bytes + cost > QUEUE_BYTES);
            if full || w.closed {
                queue.full.store(true, Ordering::Relaxed);
                drop(w);
                self.skip(queue);
                continue;
            }
            let before = queue.skipped.swap(0, Ordering::Relaxed);
            w.events.push_back((before, seen.clone()));
            w.bytes += cost;
            drop(w);
            queue.ready.notify_one();
        }
    }

    fn skip(&self, queue: &Queue) {
        queue.skipped.fetch_add(1, Ordering::Relaxed);
        inc(&self.metrics.tap_skipped);
    }

    /// Opens a tap for the events `filter` takes.
    pub fn open(self: &Arc<Taps>, filter: Filter) -> Result<Tap, OpenError> {
        let mut registry = self.queues.write().unwrap_or_else(|e| e.into_inner());
        if registry.stopping {
            return Err(OpenError::Stopping);
        }
        if registry.queues.len() >= self.max {
            return Err(OpenError::Full(self.max));
        }
        let queue = Arc::new(Queue {
            filter,
            waiting: Mutex::default(),
            ready: Notify::new(),
            full: AtomicBool::new(false),
            skipped: AtomicU64::new(0),
        });
        registry.queues.push(queue.clone());
        self.count(registry.queues.len());
        Ok(Tap {
            taps: self.clone(),
            queue,
        })
    }

    fn count(&self, n: usize) {
        self.open.store(n, Ordering::Relaxed);
        self.metrics.tap_clients.store(n as u64, Ordering::Relaxed);
    }

    /// Ends every tap (each reader gets [`Next::Closed`] once it has read
    /// what is queued) and refuses new ones: the repeater is stopping.
    pub fn close(&self) {
        let mut registry = self.queues.write().unwrap_or_else(|e| e.into_inner());
        registry.stopping = true;
        for queue in &registry.queues {
            queue.lock().closed = true;
            queue.ready.notify_one();
        }
    }

    /// Taps open now.
    pub fn len(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a tap's reader gets next.
#[derive(Debug, Clone)]
pub enum Next {
    /// This many events were skipped here (the queue was full).
    Skipped(u64),
    Event(Arc<Seen>),
    /// The repeater is stopping.
    Closed,
}

/// An open tap; dropping it closes it.
pub struct Tap {
    taps: Arc<Taps>,
    queue: Arc<Queue>,
}

impl Tap {
    /// Waits for the next thing to tell the client.
    pub async fn next(&self) -> Next {
        loop {
            let ready = self.queue.ready.notified();
            {
                let mut w = self.queue.lock();
                if let Some((before, _)) = w.events.front_mut() {
                    if *before > 0 {
                        return Next::Skipped(std::mem::take(before));
                    }
                }
                if let Some((_, seen)) = w.events.pop_front() {
                    w.bytes -= seen.cost();
                    self.queue.full.store(false, Ordering::Relaxed);
                    return Next::Event(seen);
                }
                let skipped = self.queue.skipped.swap(0, Ordering::Relaxed);
                if skipped > 0 {
                    return Next::Skipped(skipped);
                }
                if w.closed {
                    return Next::Closed;
                }
            }
            ready.await;
        }
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let mut registry = self.taps.queues.write().unwrap_or_else(|e| e.into_inner());
        registry.queues.retain(|q| !Arc::ptr_eq(q, &self.queue));
        self.taps.count(registry.queues.len());
    }
}

/// Whether a route's source topic pattern (`a/b`, `a/`, `.`) covers
/// `topic`.
pub fn covers(pattern: &str, topic: &str) -> bool {
    pattern == "." || pattern == topic || (pattern.ends_with('/') && topic.starts_with(pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(topic: &str, n: usize) -> Seen {
        Seen {
            time: SystemTime::now(),
            reason: None,
            why: None,
            source_topic: Some(Arc::from(topic)),
            sink_topic: None,
            id: None,
            data: Bytes::from(vec![b'x'; n]),
        }
    }

    async fn next(tap: &Tap) -> Next {
        tokio::time::timeout(std::time::Duration::from_secs(5), tap.next())
            .await
            .expect("the tap said nothing")
    }

    #[tokio::test]
    async fn a_full_tap_skips_its_own_events_and_says_how_many_where() {
        let metrics = Arc::new(Metrics::default());
        let taps = Arc::new(Taps::new(2, metrics.clone()));
        let mut called = false;
        taps.see(Some("a"), || {
            called = true;
            seen("a", 1)
        });
        assert!(!called, "an event was built with no tap open");
        let all = taps.open(Box::new(|_| true)).unwrap();
        let only_b = taps.open(Box::new(|t| t == Some("b"))).unwrap();
        assert_eq!(
            taps.open(Box::new(|_| true)).err(),
            Some(OpenError::Full(2))
        );
        assert_eq!(metrics.tap_clients.load(Ordering::Relaxed), 2);
        for _ in 0..QUEUE_EVENTS + 3 {
            taps.see(Some("a"), || seen("a", 1));
        }
        // A full queue is skipped without building the event.
        let mut built = false;
        taps.see(Some("a"), || {
            built = true;
            seen("a", 1)
        });
        assert!(!built, "an event was built for full taps only");
        taps.see(Some("b"), || seen("b", 1));
        // `all` skipped 5 (4 a's and the b), `only_b` nothing.
        assert!(
            matches!(next(&only_b).await, Next::Event(s) if s.source_topic.as_deref() == Some("b"))
        );
        for _ in 0..QUEUE_EVENTS {
            assert!(matches!(next(&all).await, Next::Event(_)));
        }
        assert!(matches!(next(&all).await, Next::Skipped(5)));
        assert_eq!(metrics.tap_skipped.load(Ordering::Relaxed), 5);
        // Skips before an event come before it.
        for _ in 0..QUEUE_EVENTS {
            taps.see(Some("a"), || seen("a", 1));
        }
        taps.see(Some("a"), || seen("a", 1));
        next(&all).await;
        taps.see(Some("c"), || seen("c", 1));
        for _ in 0..QUEUE_EVENTS - 1 {
            next(&all).await;
        }
        assert!(matches!(next(&all).await, Next::Skipped(1)));
        assert!(
            matches!(next(&all).await, Next::Event(s) if s.source_topic.as_deref() == Some("c"))
        );
        drop(only_b);
        assert_eq!(taps.len(), 1);
        taps.close();
        assert!(matches!(next(&all).await, Next::Closed));
        assert_eq!(
            taps.open(Box::new(|_| true)).err(),
            Some(OpenError::Stopping)
        );
        drop(all);
        assert_eq!(metrics.tap_clients.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn the_bytes_are_bounded_but_one_large_event_still_shows() {
        let taps = Arc::new(Taps::new(1, Arc::new(Metrics::default())));
        let tap = taps.open(Box::new(|_| true)).unwrap();
        taps.see(Some("a"), || seen("a", QUEUE_BYTES * 2));
        taps.see(Some("a"), || seen("a", 1));
        assert!(matches!(next(&tap).await, Next::Event(s) if s.data.len() == QUEUE_BYTES * 2));
        assert!(matches!(next(&tap).await, Next::Skipped(1)));
    }

    #[test]
    fn patterns_cover_as_routes_do() {
        assert!(covers(".", "a/b"));
        assert!(covers("a/", "a/b"));
        assert!(covers("a/b", "a/b"));
        assert!(!covers("a/b", "a/b/c"));
        assert!(!covers("a/", "ab"));
    }
}
