//! Counters and gauges, shared by every task and shown by `GET /metrics`
//! and `GET /healthz`.
//!
//! The counters stay plain atomics, bumped on the hot path without a lock or
//! an allocation. `/metrics` copies them into a [`Snapshot`] (in `snapshot`),
//! which writes the OpenMetrics text.

mod snapshot;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

pub use snapshot::{Build, Snapshot};

/// A snapshot of the buffer, for `/metrics` and `/healthz`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    pub queued: usize,
    pub queued_bytes: usize,
    pub inflight: usize,
    pub inflight_bytes: usize,
    pub max_events: usize,
    pub max_bytes: usize,
}

/// Every counter; all relaxed atomics, read without a lock.
#[derive(Debug, Default)]
pub struct Metrics {
    pub received: AtomicU64,
    pub invalid: AtomicU64,
    pub unrouted: AtomicU64,
    pub accepted: AtomicU64,
    pub published: AtomicU64,
    pub republished: AtomicU64,
    pub acked: AtomicU64,
    pub failed_too_large: AtomicU64,
    pub failed_invalid_topic: AtomicU64,
    pub failed_sink: AtomicU64,
    pub dropped_overflow: AtomicU64,
    pub dropped_shutdown: AtomicU64,
    pub source_connected: AtomicBool,
    pub sink_connected: AtomicBool,
    /// The broker in use (MQTT with several `--sink`s: which one).
    pub sink_broker: std::sync::RwLock<String>,
    pub source_disconnects: AtomicU64,
    pub sink_disconnects: AtomicU64,
    /// Events the source said it skipped for us (never received).
    pub missed: AtomicU64,
    /// The source went silent past `--source-idle-timeout` and has sent
    /// nothing since (headers alone do not count).
    pub source_stalled: AtomicBool,
    /// Times the source went silent past `--source-idle-timeout`.
    pub source_stalls: AtomicU64,
    /// What is wrong with the source now, for `/healthz` ("" when nothing).
    pub source_problem: std::sync::RwLock<String>,
    /// How this run began (resumed after an id, or from live events and
    /// why), for `/healthz`; set once at start.
    pub source_start: std::sync::RwLock<String>,
    /// SSE ids not kept (too long, or not usable as a header).
    pub source_ids_refused: AtomicU64,
    /// What is wrong with the sink now, for `/healthz` ("" when nothing):
    /// a condition the connection state does not show (a full stream).
    pub sink_problem: std::sync::RwLock<String>,
    /// Publishes the broker refused because the stream is full (the events
    /// are kept and sent again).
    pub refused_stream_full: AtomicU64,
    /// Why the sink is stalled (events wait, none acknowledged for
    /// [`crate::sink::stall::AFTER`]), for `/healthz`; "" when it is not.
    pub sink_stalled: std::sync::RwLock<String>,
    /// Times the sink stalled.
    pub sink_stalls: AtomicU64,
    /// The sink's last error, the stall's likely reason ("" until one).
    pub sink_last_error: std::sync::RwLock<String>,
    /// JetStream acknowledgements that said duplicate.
    pub duplicates: AtomicU64,
    /// Duplicates whose stored message differs from the event sent.
    pub duplicate_conflicts: AtomicU64,
    /// Dead letters written, by [`crate::reason::Reason::index`].
    pub dead_letters: [AtomicU64; 5],
    /// Bytes in the dead-letter files.
    pub dead_letter_bytes: AtomicU64,
    /// Dead letters cut by rotation.
    pub dead_letters_cut: AtomicU64,
    /// Dead letters that could not be written.
    pub dead_letters_lost: AtomicU64,
    /// Dead letters replayed and delivered.
    pub dead_letters_replayed: AtomicU64,
    /// Live taps open now.
    pub tap_clients: AtomicU64,
    /// Events live taps skipped (their client behind).
    pub tap_skipped: AtomicU64,
}

/// Reads a problem slot ("" when none).
pub fn problem(slot: &std::sync::RwLock<String>) -> Option<String> {
    let p = slot.read().map(|p| p.clone()).unwrap_or_default();
    (!p.is_empty()).then_some(p)
}

/// Sets (or, with "", clears) a problem slot; `true` when it changed.
pub fn set_problem(slot: &std::sync::RwLock<String>, text: &str) -> bool {
    match slot.write() {
        Ok(mut p) if *p != text => {
            text.clone_into(&mut p);
            true
        }
        _ => false,
    }
}

impl Metrics {
    /// The broker in use ("" when not known).
    pub fn broker(&self) -> String {
        self.sink_broker
            .read()
            .map(|b| b.clone())
            .unwrap_or_default()
    }

    pub fn set_broker(&self, url: &str) {
        if let Ok(mut b) = self.sink_broker.write() {
            url.clone_into(&mut b);
        }
    }
}

pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}
