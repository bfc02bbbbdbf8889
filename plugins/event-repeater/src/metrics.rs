//! Counters and gauges, shared by every task and rendered by `GET /metrics`
//! in the OpenMetrics text format.
//!
//! The counters stay plain atomics, bumped on the hot path without a lock or
//! an allocation. `/metrics` copies them into a [`Snapshot`], which
//! `prometheus-client` encodes as a [`Collector`]: the crate owns the format
//! (escaping, `# TYPE` lines, `_total` suffixes, `# EOF`), this module only
//! names the series.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

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
    /// The source went silent past `--source-idle-timeout` and has not
    /// answered a new subscription since.
    pub source_stalled: AtomicBool,
    /// Times the source went silent past `--source-idle-timeout`.
    pub source_stalls: AtomicU64,
    /// What is wrong with the source now, for `/healthz` ("" when nothing).
    pub source_problem: std::sync::RwLock<String>,
    /// SSE ids over the length limit, not kept.
    pub source_ids_refused: AtomicU64,
    /// What is wrong with the sink now, for `/healthz` ("" when nothing):
    /// a condition the connection state does not show (a full stream).
    pub sink_problem: std::sync::RwLock<String>,
    /// Publishes the broker refused because the stream is full (the events
    /// are kept and sent again).
    pub refused_stream_full: AtomicU64,
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

/// Every metric name starts with this (and `_`).
pub const PREFIX: &str = "app_event_repeater";

/// The Content-Type of `/metrics`: the OpenMetrics text format that
/// `prometheus_client::encoding::text` writes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Most `route_events_total` series in one `/metrics` answer.
pub const MAX_ROUTE_SERIES: usize = 1000;

/// Everything `/metrics` shows, read once per request.
#[derive(Debug)]
pub struct Snapshot {
    received: u64,
    missed: u64,
    invalid: u64,
    unrouted: u64,
    accepted: u64,
    published: u64,
    republished: u64,
    acked: u64,
    failed_too_large: u64,
    failed_invalid_topic: u64,
    failed_sink: u64,
    dropped_overflow: u64,
    dropped_shutdown: u64,
    source_connected: bool,
    sink_connected: bool,
    broker: String,
    source_disconnects: u64,
    source_ids_refused: u64,
    sink_disconnects: u64,
    source_stalled: bool,
    source_stalls: u64,
    sink_problem: bool,
    refused_stream_full: u64,
    buffer: BufferStats,
    routes: usize,
    /// The per-route counters live in the table's entries; they are read
    /// when encoding.
    table: Arc<Table>,
    version: &'static str,
    started_unix: u64,
}

/// The process facts `/metrics` shows besides the counters (what `manage
/// status` reports as version and uptime).
#[derive(Debug, Clone, Copy)]
pub struct Build {
    pub version: &'static str,
    pub started_unix: u64,
}

impl Metrics {
    /// Reads every counter now.
    pub fn snapshot(
        &self,
        buffer: BufferStats,
        table: Arc<Table>,
        routes: usize,
        build: Build,
    ) -> Snapshot {
        Snapshot {
            received: get(&self.received),
            missed: get(&self.missed),
            invalid: get(&self.invalid),
            unrouted: get(&self.unrouted),
            accepted: get(&self.accepted),
            published: get(&self.published),
            republished: get(&self.republished),
            acked: get(&self.acked),
            failed_too_large: get(&self.failed_too_large),
            failed_invalid_topic: get(&self.failed_invalid_topic),
            failed_sink: get(&self.failed_sink),
            dropped_overflow: get(&self.dropped_overflow),
            dropped_shutdown: get(&self.dropped_shutdown),
            source_connected: self.source_connected.load(Ordering::Relaxed),
            sink_connected: self.sink_connected.load(Ordering::Relaxed),
            broker: self.broker(),
            source_disconnects: get(&self.source_disconnects),
            source_ids_refused: get(&self.source_ids_refused),
            sink_disconnects: get(&self.sink_disconnects),
            source_stalled: self.source_stalled.load(Ordering::Relaxed),
            source_stalls: get(&self.source_stalls),
            sink_problem: problem(&self.sink_problem).is_some(),
            refused_stream_full: get(&self.refused_stream_full),
            buffer,
            routes,
            table,
            version: build.version,
            started_unix: build.started_unix,
        }
    }
}

impl Snapshot {
    /// The whole exposition, ending in `# EOF`.
    pub fn render(self) -> Result<String, fmt::Error> {
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register_collector(Box::new(self));
        let mut out = String::with_capacity(8192);
        prometheus_client::encoding::text::encode(&mut out, &registry)?;
        Ok(out)
    }
}

// Counter families are named without `_total`: the encoder appends it to
// the samples, which keeps them `app_event_repeater_events_received_total`
// and so on, as before. Help texts go out unescaped, so they must not hold
// `"`, `\` or a newline (a unit test checks).

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> fmt::Result {
    enc.encode_descriptor(name, help, None, MetricType::Counter)?
        .encode_counter::<NoLabelSet, _, u64>(&v, None)
}

/// A counter family with one series per value of `label`.
fn counters_by(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &str,
    series: &[(&str, u64)],
) -> fmt::Result {
    let mut family = enc.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (value, v) in series {
        family
            .encode_family(&[(label, *value)])?
            .encode_counter::<NoLabelSet, _, u64>(v, None)?;
    }
    Ok(())
}

fn gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    v: u64,
) -> fmt::Result {
    enc.encode_descriptor(name, help, unit, MetricType::Gauge)?
        .encode_gauge(&v)
}

/// A gauge family of one series with labels (value 1: the labels are the
/// information).
fn labelled_gauge(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    labels: &impl EncodeLabelSet,
) -> fmt::Result {
    enc.encode_descriptor(name, help, None, MetricType::Gauge)?
        .encode_family(labels)?
        .encode_gauge(&1u64)
}

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let e = &mut enc;
        counter(
            e,
            "events_received",
            "Events read from the source.",
            self.received,
        )?;
        counter(
            e,
            "events_missed",
            "Events the source reported it skipped for this reader (it no longer held them).",
            self.missed,
        )?;
        counter(
            e,
            "events_invalid",
            "Events from the source that were not usable JSON events (not JSON, no topic, oversized, not UTF-8).",
            self.invalid,
        )?;
        counter(
            e,
            "events_unrouted",
            "Events that matched no route (not relayed, by design).",
            self.unrouted,
        )?;
        counter(
            e,
            "events_accepted",
            "Events routed and taken into the buffer.",
            self.accepted,
        )?;
        counter(
            e,
            "events_published",
            "Events written to the sink (first transmission).",
            self.published,
        )?;
        counter(
            e,
            "events_republished",
            "Publishes sent again after a reconnect because the broker had not acknowledged them.",
            self.republished,
        )?;
        counter(
            e,
            "events_acked",
            "Events the sink confirmed: broker acknowledgement at QoS 1 and 2, written at QoS 0 and for stderr.",
            self.acked,
        )?;
        counters_by(
            e,
            "events_failed",
            "Accepted events refused by the repeater, by reason.",
            "reason",
            &[
                ("too_large", self.failed_too_large),
                ("invalid_topic", self.failed_invalid_topic),
                ("sink_error", self.failed_sink),
            ],
        )?;
        counters_by(
            e,
            "events_dropped",
            "Accepted events dropped, by reason: overflow (buffer full) or shutdown (undelivered when the drain timed out).",
            "reason",
            &[
                ("overflow", self.dropped_overflow),
                ("shutdown", self.dropped_shutdown),
            ],
        )?;
        let b = &self.buffer;
        gauge(
            e,
            "events_buffered",
            "Events waiting to be sent.",
            None,
            b.queued as u64,
        )?;
        gauge(
            e,
            "events_inflight",
            "Events sent and not yet acknowledged.",
            None,
            b.inflight as u64,
        )?;
        // With a unit the family name gains `_bytes` / `_seconds`, which the
        // names already ended with: the samples keep their names.
        gauge(
            e,
            "buffer",
            "Bytes held by buffered and in-flight events.",
            Some(&Unit::Bytes),
            (b.queued_bytes + b.inflight_bytes) as u64,
        )?;
        gauge(
            e,
            "buffer_capacity_events",
            "The --buffer limit.",
            None,
            b.max_events as u64,
        )?;
        gauge(
            e,
            "buffer_capacity",
            "The --buffer-bytes limit.",
            Some(&Unit::Bytes),
            b.max_bytes as u64,
        )?;
        gauge(
            e,
            "routes",
            "Routes in the table.",
            None,
            self.routes as u64,
        )?;
        gauge(
            e,
            "source_connected",
            "1 while the event source stream is open.",
            None,
            u64::from(self.source_connected),
        )?;
        gauge(
            e,
            "sink_connected",
            "1 while the sink is connected (always 1 for stderr).",
            None,
            u64::from(self.sink_connected),
        )?;
        if !self.broker.is_empty() {
            labelled_gauge(
                e,
                "sink_broker",
                "The broker in use, as a label (MQTT; changes on failover).",
                &[("broker", self.broker.as_str())],
            )?;
        }
        counter(
            e,
            "source_disconnects",
            "Times the source connection was lost.",
            self.source_disconnects,
        )?;
        counter(
            e,
            "source_ids_refused",
            "SSE ids from the source over 1024 bytes, not kept (the event was relayed; the checkpoint stayed at the id before).",
            self.source_ids_refused,
        )?;
        counter(
            e,
            "sink_disconnects",
            "Times the broker connection was lost.",
            self.sink_disconnects,
        )?;
        gauge(
            e,
            "source_stalled",
            "1 while the source is stalled: silent past --source-idle-timeout and not yet answering again.",
            None,
            u64::from(self.source_stalled),
        )?;
        counter(
            e,
            "source_stalls",
            "Times the source went silent past --source-idle-timeout (each followed by a reconnect).",
            self.source_stalls,
        )?;
        gauge(
            e,
            "sink_problem",
            "1 while the sink cannot store events for a reason the connection state does not show (see sink.problem in /healthz).",
            None,
            u64::from(self.sink_problem),
        )?;
        counters_by(
            e,
            "sink_refused",
            "Publishes the broker refused, by reason; the events are kept and sent again.",
            "reason",
            &[("stream_full", self.refused_stream_full)],
        )?;
        let omitted = self.route_series(e)?;
        gauge(
            e,
            "route_series_omitted",
            "Routes without a route_events_total series (over the cap of 1000 series).",
            None,
            omitted as u64,
        )?;
        labelled_gauge(
            e,
            "build_info",
            "The repeater's version.",
            &[("version", self.version)],
        )?;
        gauge(
            e,
            "start_time",
            "When the repeater started, in seconds since the Unix epoch.",
            Some(&Unit::Seconds),
            self.started_unix,
        )
    }
}

impl Snapshot {
    /// `route_events_total`, one series per route up to the cap; how many
    /// routes were left out.
    fn route_series(&self, e: &mut DescriptorEncoder) -> Result<usize, fmt::Error> {
        let mut family = e.encode_descriptor(
            "route_events",
            "Events taken by each route (for --allowall: sourcetopic and sinktopic empty, allowall=true).",
            None,
            MetricType::Counter,
        )?;
        let mut entries: Vec<_> = self.table.entries().collect();
        entries.sort_by(|a, b| a.spec.sourcetopic.cmp(&b.spec.sourcetopic));
        // Per-route series are capped so that /metrics stays small with many
        // routes; the first MAX_ROUTE_SERIES by source topic are shown.
        let omitted = entries.len().saturating_sub(MAX_ROUTE_SERIES);
        for entry in entries.into_iter().take(MAX_ROUTE_SERIES) {
            let labels = [
                ("sourcetopic", entry.spec.sourcetopic.as_str()),
                ("sinktopic", entry.spec.sinktopic.as_str()),
            ];
            family
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&get(&entry.events), None)?;
        }
        if self.table.allowall() {
            let labels = [("sourcetopic", ""), ("sinktopic", ""), ("allowall", "true")];
            family
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&get(&self.table.allowall_events), None)?;
        }
        Ok(omitted)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::routes::{RouteSpec, Routes};

    fn table(routes: &[(&str, &str)], allowall: bool) -> Arc<Table> {
        let specs = routes
            .iter()
            .map(|(s, t)| RouteSpec {
                sourcetopic: s.to_string(),
                sinktopic: t.to_string(),
            })
            .collect();
        let routes = Routes::from_specs(specs).expect("valid routes");
        Arc::new(Table::build(&routes, allowall, None))
    }

    fn render(m: &Metrics, t: &Arc<Table>) -> String {
        let buffer = BufferStats {
            queued: 3,
            queued_bytes: 300,
            inflight: 2,
            inflight_bytes: 200,
            max_events: 10_000,
            max_bytes: 1 << 26,
        };
        let build = Build {
            version: "9.8.7",
            started_unix: 1_700_000_000,
        };
        m.snapshot(buffer, t.clone(), t.entries().count(), build)
            .render()
            .expect("encodes")
    }

    /// `name{labels}` → value, from the sample lines.
    fn samples(text: &str) -> BTreeMap<String, u64> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').expect("a sample line has a value");
                (k.to_string(), v.parse().expect("an integer value"))
            })
            .collect()
    }

    #[test]
    fn every_series_keeps_its_name_and_labels() {
        let m = Metrics::default();
        m.set_broker("tcp://b:1883");
        let t = table(&[("timer/sec/1", "/time/1s"), ("we\"ird\\", "/x")], true);
        let got: BTreeSet<String> = samples(&render(&m, &t)).into_keys().collect();
        let p = "app_event_repeater_";
        let want: BTreeSet<String> = [
            "events_received_total",
            "events_missed_total",
            "events_invalid_total",
            "events_unrouted_total",
            "events_accepted_total",
            "events_published_total",
            "events_republished_total",
            "events_acked_total",
            "events_failed_total{reason=\"too_large\"}",
            "events_failed_total{reason=\"invalid_topic\"}",
            "events_failed_total{reason=\"sink_error\"}",
            "events_dropped_total{reason=\"overflow\"}",
            "events_dropped_total{reason=\"shutdown\"}",
            "events_buffered",
            "events_inflight",
            "buffer_bytes",
            "buffer_capacity_events",
            "buffer_capacity_bytes",
            "routes",
            "source_connected",
            "sink_connected",
            "sink_broker{broker=\"tcp://b:1883\"}",
            "source_disconnects_total",
            "source_ids_refused_total",
            "sink_disconnects_total",
            "source_stalled",
            "source_stalls_total",
            "sink_problem",
            "sink_refused_total{reason=\"stream_full\"}",
            "route_events_total{sourcetopic=\"timer/sec/1\",sinktopic=\"/time/1s\"}",
            // Label values are escaped as the text format wants.
            "route_events_total{sourcetopic=\"we\\\"ird\\\\\",sinktopic=\"/x\"}",
            "route_events_total{sourcetopic=\"\",sinktopic=\"\",allowall=\"true\"}",
            "route_series_omitted",
            "build_info{version=\"9.8.7\"}",
            "start_time_seconds",
        ]
        .iter()
        .map(|s| format!("{p}{s}"))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn values_follow_the_counters() {
        let m = Metrics::default();
        let t = table(&[("timer/sec/1", "/time/1s")], true);
        let before = samples(&render(&m, &t));
        let v = |s: &BTreeMap<String, u64>, k: &str| s[&format!("app_event_repeater_{k}")];
        assert_eq!(v(&before, "events_received_total"), 0);
        assert_eq!(v(&before, "sink_connected"), 0);
        for _ in 0..3 {
            inc(&m.received);
        }
        inc(&m.failed_sink);
        inc(&m.dropped_overflow);
        m.sink_connected.store(true, Ordering::Relaxed);
        t.route("timer/sec/1");
        t.route("timer/sec/1");
        t.route("other");
        let after = samples(&render(&m, &t));
        assert_eq!(v(&after, "events_received_total"), 3);
        assert_eq!(v(&after, "events_failed_total{reason=\"sink_error\"}"), 1);
        assert_eq!(v(&after, "events_failed_total{reason=\"too_large\"}"), 0);
        assert_eq!(v(&after, "events_dropped_total{reason=\"overflow\"}"), 1);
        assert_eq!(v(&after, "sink_connected"), 1);
        assert_eq!(
            v(
                &after,
                "route_events_total{sourcetopic=\"timer/sec/1\",sinktopic=\"/time/1s\"}"
            ),
            2
        );
        assert_eq!(
            v(
                &after,
                "route_events_total{sourcetopic=\"\",sinktopic=\"\",allowall=\"true\"}"
            ),
            1
        );
        assert_eq!(v(&after, "events_buffered"), 3);
        assert_eq!(v(&after, "buffer_bytes"), 500);
        assert_eq!(v(&after, "start_time_seconds"), 1_700_000_000);
        // No broker known: no sink_broker series at all.
        assert!(
            !after.keys().any(|k| k.contains("sink_broker")),
            "{after:?}"
        );
    }

    #[test]
    fn the_output_is_openmetrics_text() {
        let m = Metrics::default();
        m.set_broker("tcp://b:1883");
        let t = table(&[("a", "/a"), ("b/", "/b/{suffix}")], true);
        let text = render(&m, &t);
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        assert_eq!(text.matches("# EOF").count(), 1);
        // Each sample belongs to the family whose # TYPE line precedes it:
        // counters as FAMILY_total, everything else as FAMILY.
        let mut family: Option<(String, String)> = None;
        let mut families = BTreeSet::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
                assert!(matches!(kind, "counter" | "gauge"), "{line}");
                assert!(families.insert(name.to_string()), "{name} twice");
                family = Some((name.to_string(), kind.to_string()));
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                // Help text goes out unescaped: nothing in it may need escaping.
                assert!(!rest.contains(['"', '\\']), "{line}");
            } else if line.starts_with("# UNIT ") || line == "# EOF" {
            } else {
                assert!(!line.starts_with('#'), "unknown comment {line}");
                let (name, kind) = family.as_ref().expect("a sample after a # TYPE");
                let want = if kind == "counter" {
                    format!("{name}_total")
                } else {
                    name.clone()
                };
                let sample = line.split(['{', ' ']).next().unwrap_or_default();
                assert_eq!(sample, want, "{line}");
            }
        }
        assert_eq!(families.len(), 30, "{families:?}");
    }

    #[test]
    fn per_route_series_are_capped() {
        let names: Vec<String> = (0..MAX_ROUTE_SERIES + 5)
            .map(|i| format!("t/{i:05}"))
            .collect();
        let routes: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "/x")).collect();
        let t = table(&routes, true);
        let s = samples(&render(&Metrics::default(), &t));
        let series: Vec<&String> = s
            .keys()
            .filter(|k| k.starts_with("app_event_repeater_route_events_total{"))
            .collect();
        // The first 1000 by source topic, and the --allowall series.
        assert_eq!(series.len(), MAX_ROUTE_SERIES + 1);
        assert!(series.iter().any(|k| k.contains("\"t/00999\"")));
        assert!(!series.iter().any(|k| k.contains("\"t/01000\"")));
        assert!(series.iter().any(|k| k.contains("allowall=\"true\"")));
        assert_eq!(s["app_event_repeater_route_series_omitted"], 5);
        assert_eq!(s["app_event_repeater_routes"], 1005);
    }
}
