//! Counters and gauges, shared by every task and rendered by `GET /metrics`
//! in the Prometheus text format.

use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::routes::Table;

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

const P: &str = "app_event_repeater";

/// Most `route_events_total` series in one `/metrics` answer.
pub const MAX_ROUTE_SERIES: usize = 1000;

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {P}_{name} {help}");
    let _ = writeln!(out, "# TYPE {P}_{name} {kind}");
}

fn simple(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    family(out, name, kind, help);
    let _ = writeln!(out, "{P}_{name} {value}");
}

/// Escapes a label value for the text format.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// The text exposition of every metric.
    pub fn render(&self, buffer: &BufferStats, table: &Table, routes: usize) -> String {
        let mut o = String::with_capacity(4096);
        simple(
            &mut o,
            "events_received_total",
            "counter",
            "Events read from the source.",
            get(&self.received),
        );
        simple(
            &mut o,
            "events_missed_total",
            "counter",
            "Events the source reported it skipped for this reader (it no longer held them).",
            get(&self.missed),
        );
        simple(&mut o, "events_invalid_total", "counter", "Events from the source that were not usable JSON events (not JSON, no topic, oversized, not UTF-8).", get(&self.invalid));
        simple(
            &mut o,
            "events_unrouted_total",
            "counter",
            "Events that matched no route (not relayed, by design).",
            get(&self.unrouted),
        );
        simple(
            &mut o,
            "events_accepted_total",
            "counter",
            "Events routed and taken into the buffer.",
            get(&self.accepted),
        );
        simple(
            &mut o,
            "events_published_total",
            "counter",
            "Events written to the sink (first transmission).",
            get(&self.published),
        );
        simple(
            &mut o,
            "events_republished_total",
            "counter",
            "Publishes sent again after a reconnect because the broker had not acknowledged them.",
            get(&self.republished),
        );
        simple(&mut o, "events_acked_total", "counter", "Events the sink confirmed: broker acknowledgement at QoS 1 and 2, written at QoS 0 and for stderr.", get(&self.acked));
        family(
            &mut o,
            "events_failed_total",
            "counter",
            "Accepted events refused by the repeater, by reason.",
        );
        let _ = writeln!(
            o,
            "{P}_events_failed_total{{reason=\"too_large\"}} {}",
            get(&self.failed_too_large)
        );
        let _ = writeln!(
            o,
            "{P}_events_failed_total{{reason=\"invalid_topic\"}} {}",
            get(&self.failed_invalid_topic)
        );
        let _ = writeln!(
            o,
            "{P}_events_failed_total{{reason=\"sink_error\"}} {}",
            get(&self.failed_sink)
        );
        family(&mut o, "events_dropped_total", "counter", "Accepted events dropped, by reason: overflow (buffer full) or shutdown (undelivered when the drain timed out).");
        let _ = writeln!(
            o,
            "{P}_events_dropped_total{{reason=\"overflow\"}} {}",
            get(&self.dropped_overflow)
        );
        let _ = writeln!(
            o,
            "{P}_events_dropped_total{{reason=\"shutdown\"}} {}",
            get(&self.dropped_shutdown)
        );
        simple(
            &mut o,
            "events_buffered",
            "gauge",
            "Events waiting to be sent.",
            buffer.queued as u64,
        );
        simple(
            &mut o,
            "events_inflight",
            "gauge",
            "Events sent and not yet acknowledged.",
            buffer.inflight as u64,
        );
        simple(
            &mut o,
            "buffer_bytes",
            "gauge",
            "Bytes held by buffered and in-flight events.",
            (buffer.queued_bytes + buffer.inflight_bytes) as u64,
        );
        simple(
            &mut o,
            "buffer_capacity_events",
            "gauge",
            "The --buffer limit.",
            buffer.max_events as u64,
        );
        simple(
            &mut o,
            "buffer_capacity_bytes",
            "gauge",
            "The --buffer-bytes limit.",
            buffer.max_bytes as u64,
        );
        simple(
            &mut o,
            "routes",
            "gauge",
            "Routes in the table.",
            routes as u64,
        );
        simple(
            &mut o,
            "source_connected",
            "gauge",
            "1 while the event source stream is open.",
            u64::from(self.source_connected.load(Ordering::Relaxed)),
        );
        simple(
            &mut o,
            "sink_connected",
            "gauge",
            "1 while the sink is connected (always 1 for stderr).",
            u64::from(self.sink_connected.load(Ordering::Relaxed)),
        );
        let broker = self.broker();
        if !broker.is_empty() {
            family(
                &mut o,
                "sink_broker",
                "gauge",
                "The broker in use, as a label (MQTT; changes on failover).",
            );
            let _ = writeln!(o, "{P}_sink_broker{{broker=\"{}\"}} 1", label(&broker));
        }
        simple(
            &mut o,
            "source_disconnects_total",
            "counter",
            "Times the source connection was lost.",
            get(&self.source_disconnects),
        );
        simple(
            &mut o,
            "sink_disconnects_total",
            "counter",
            "Times the broker connection was lost.",
            get(&self.sink_disconnects),
        );
        family(
            &mut o,
            "route_events_total",
            "counter",
            "Events taken by each route (sourcetopic=\"\" with allowall=\"true\" for --allowall).",
        );
        let mut entries: Vec<_> = table.entries().collect();
        entries.sort_by(|a, b| a.spec.sourcetopic.cmp(&b.spec.sourcetopic));
        // Per-route series are capped so that /metrics stays small with many
        // routes; the first MAX_ROUTE_SERIES by source topic are shown.
        let omitted = entries.len().saturating_sub(MAX_ROUTE_SERIES);
        for e in entries.into_iter().take(MAX_ROUTE_SERIES) {
            let _ = writeln!(
                o,
                "{P}_route_events_total{{sourcetopic=\"{}\",sinktopic=\"{}\"}} {}",
                label(&e.spec.sourcetopic),
                label(&e.spec.sinktopic),
                get(&e.events)
            );
        }
        if table.allowall() {
            let _ = writeln!(
                o,
                "{P}_route_events_total{{sourcetopic=\"\",sinktopic=\"\",allowall=\"true\"}} {}",
                get(&table.allowall_events)
            );
        }
        simple(
            &mut o,
            "route_series_omitted",
            "gauge",
            "Routes without a route_events_total series (over the cap of 1000 series).",
            omitted as u64,
        );
        o
    }
}
