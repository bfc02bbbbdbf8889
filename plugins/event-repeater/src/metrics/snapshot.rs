//! `GET /metrics`: the counters read once into a [`Snapshot`], which
//! `prometheus-client` encodes as a [`Collector`]. The crate owns the format
//! (escaping, `# TYPE` lines, `_total` suffixes, `# EOF`); the families'
//! names, units and help texts are the API's ([`metric`]); this module only
//! says which value each one shows.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use app_event_repeater_api::metric::{self, label, Kind, Metric, Unit, MAX_ROUTE_SERIES};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{self, Registry};

use super::{get, problem, BufferStats, Metrics};
use crate::routes::Table;

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
    sink_stalled: bool,
    sink_stalls: u64,
    duplicates: u64,
    duplicate_conflicts: u64,
    refused_stream_full: u64,
    dead_letters: [u64; 5],
    dead_letter_bytes: u64,
    dead_letters_cut: u64,
    dead_letters_lost: u64,
    dead_letters_replayed: u64,
    tap_clients: u64,
    tap_skipped: u64,
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
            sink_stalled: problem(&self.sink_stalled).is_some(),
            sink_stalls: get(&self.sink_stalls),
            duplicates: get(&self.duplicates),
            duplicate_conflicts: get(&self.duplicate_conflicts),
            refused_stream_full: get(&self.refused_stream_full),
            dead_letters: self.dead_letters.each_ref().map(get),
            dead_letter_bytes: get(&self.dead_letter_bytes),
            dead_letters_cut: get(&self.dead_letters_cut),
            dead_letters_lost: get(&self.dead_letters_lost),
            dead_letters_replayed: get(&self.dead_letters_replayed),
            tap_clients: get(&self.tap_clients),
            tap_skipped: get(&self.tap_skipped),
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
        let mut registry = Registry::with_prefix(metric::PREFIX);
        registry.register_collector(Box::new(self));
        let mut out = String::with_capacity(8192);
        prometheus_client::encoding::text::encode(&mut out, &registry)?;
        Ok(out)
    }
}

// The encoder appends `_total` to a counter's samples and the unit to the
// family's name, which keeps every sample name as it always was
// (`app_event_repeater_events_received_total`, `..._buffer_bytes`).

static BYTES: registry::Unit = registry::Unit::Bytes;
static SECONDS: registry::Unit = registry::Unit::Seconds;

/// The `# HELP`, `# TYPE` and `# UNIT` lines of `m`, ready for its samples.
fn family<'e>(enc: &'e mut DescriptorEncoder, m: &Metric) -> Result<MetricEncoder<'e>, fmt::Error> {
    let unit = m.unit.map(|u| match u {
        Unit::Bytes => &BYTES,
        Unit::Seconds => &SECONDS,
    });
    let kind = match m.kind {
        Kind::Counter => MetricType::Counter,
        Kind::Gauge => MetricType::Gauge,
    };
    enc.encode_descriptor(m.family, m.help, unit, kind)
}

fn counter(enc: &mut DescriptorEncoder, m: &Metric, v: u64) -> fmt::Result {
    family(enc, m)?.encode_counter::<NoLabelSet, _, u64>(&v, None)
}

/// A counter family with one series per value of `label`.
fn counters_by(
    enc: &mut DescriptorEncoder,
    m: &Metric,
    label: &str,
    series: &[(&str, u64)],
) -> fmt::Result {
    let mut family = family(enc, m)?;
    for (value, v) in series {
        family
            .encode_family(&[(label, *value)])?
            .encode_counter::<NoLabelSet, _, u64>(v, None)?;
    }
    Ok(())
}

fn gauge(enc: &mut DescriptorEncoder, m: &Metric, v: u64) -> fmt::Result {
    family(enc, m)?.encode_gauge(&v)
}

/// A gauge family of one series with labels (value 1: the labels are the
/// information).
fn labelled_gauge(
    enc: &mut DescriptorEncoder,
    m: &Metric,
    labels: &impl EncodeLabelSet,
) -> fmt::Result {
    family(enc, m)?.encode_family(labels)?.encode_gauge(&1u64)
}

impl Collector for Snapshot {
    /// Every family, in the order of [`metric::ALL`].
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let e = &mut enc;
        self.events(e)?;
        self.buffer_and_links(e)?;
        let omitted = self.route_series(e)?;
        gauge(e, &metric::ROUTE_SERIES_OMITTED, omitted as u64)?;
        self.dead_letters(e)?;
        gauge(e, &metric::TAP_CLIENTS, self.tap_clients)?;
        counter(e, &metric::TAP_SKIPPED, self.tap_skipped)?;
        labelled_gauge(e, &metric::BUILD_INFO, &[(label::VERSION, self.version)])?;
        gauge(e, &metric::START_TIME, self.started_unix)
    }
}

impl Snapshot {
    /// What became of the events, from the source to the sink.
    fn events(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        counter(e, &metric::EVENTS_RECEIVED, self.received)?;
        counter(e, &metric::EVENTS_MISSED, self.missed)?;
        counter(e, &metric::EVENTS_INVALID, self.invalid)?;
        counter(e, &metric::EVENTS_UNROUTED, self.unrouted)?;
        counter(e, &metric::EVENTS_ACCEPTED, self.accepted)?;
        counter(e, &metric::EVENTS_PUBLISHED, self.published)?;
        counter(e, &metric::EVENTS_REPUBLISHED, self.republished)?;
        counter(e, &metric::EVENTS_ACKED, self.acked)?;
        counter(e, &metric::EVENTS_DUPLICATE, self.duplicates)?;
        counter(
            e,
            &metric::EVENTS_DUPLICATE_CONFLICT,
            self.duplicate_conflicts,
        )?;
        let failed = [
            (label::TOO_LARGE, self.failed_too_large),
            (label::INVALID_TOPIC, self.failed_invalid_topic),
            (label::SINK_ERROR, self.failed_sink),
        ];
        counters_by(e, &metric::EVENTS_FAILED, label::REASON, &failed)?;
        let dropped = [
            (label::OVERFLOW, self.dropped_overflow),
            (label::SHUTDOWN, self.dropped_shutdown),
        ];
        counters_by(e, &metric::EVENTS_DROPPED, label::REASON, &dropped)
    }

    /// What was kept of the events not delivered.
    fn dead_letters(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let by_reason =
            crate::reason::Reason::ALL.map(|r| (r.label(), self.dead_letters[r.index()]));
        counters_by(e, &metric::DEAD_LETTERS, label::REASON, &by_reason)?;
        gauge(e, &metric::DEAD_LETTER_BYTES, self.dead_letter_bytes)?;
        counter(e, &metric::DEAD_LETTERS_CUT, self.dead_letters_cut)?;
        counter(e, &metric::DEAD_LETTERS_LOST, self.dead_letters_lost)?;
        counter(
            e,
            &metric::DEAD_LETTERS_REPLAYED,
            self.dead_letters_replayed,
        )
    }

    /// The buffer, the table's size, and the state of the source and the sink.
    fn buffer_and_links(&self, e: &mut DescriptorEncoder) -> fmt::Result {
        let b = &self.buffer;
        gauge(e, &metric::EVENTS_BUFFERED, b.queued as u64)?;
        gauge(e, &metric::EVENTS_INFLIGHT, b.inflight as u64)?;
        gauge(
            e,
            &metric::BUFFER_BYTES,
            (b.queued_bytes + b.inflight_bytes) as u64,
        )?;
        gauge(e, &metric::BUFFER_CAPACITY_EVENTS, b.max_events as u64)?;
        gauge(e, &metric::BUFFER_CAPACITY_BYTES, b.max_bytes as u64)?;
        gauge(e, &metric::ROUTES, self.routes as u64)?;
        gauge(
            e,
            &metric::SOURCE_CONNECTED,
            u64::from(self.source_connected),
        )?;
        gauge(e, &metric::SINK_CONNECTED, u64::from(self.sink_connected))?;
        if !self.broker.is_empty() {
            let broker = [(label::BROKER, self.broker.as_str())];
            labelled_gauge(e, &metric::SINK_BROKER, &broker)?;
        }
        counter(e, &metric::SOURCE_DISCONNECTS, self.source_disconnects)?;
        counter(e, &metric::SOURCE_IDS_REFUSED, self.source_ids_refused)?;
        counter(e, &metric::SINK_DISCONNECTS, self.sink_disconnects)?;
        gauge(e, &metric::SOURCE_STALLED, u64::from(self.source_stalled))?;
        counter(e, &metric::SOURCE_STALLS, self.source_stalls)?;
        gauge(e, &metric::SINK_PROBLEM, u64::from(self.sink_problem))?;
        gauge(e, &metric::SINK_STALLED, u64::from(self.sink_stalled))?;
        counter(e, &metric::SINK_STALLS, self.sink_stalls)?;
        let refused = [(label::STREAM_FULL, self.refused_stream_full)];
        counters_by(e, &metric::SINK_REFUSED, label::REASON, &refused)
    }

    /// `route_events_total`, one series per route up to the cap; how many
    /// routes were left out.
    fn route_series(&self, e: &mut DescriptorEncoder) -> Result<usize, fmt::Error> {
        let mut family = family(e, &metric::ROUTE_EVENTS)?;
        let mut entries: Vec<_> = self.table.entries().collect();
        entries.sort_by(|a, b| a.spec.sourcetopic.cmp(&b.spec.sourcetopic));
        // Per-route series are capped so that /metrics stays small with many
        // routes; the first MAX_ROUTE_SERIES by source topic are shown.
        let omitted = entries.len().saturating_sub(MAX_ROUTE_SERIES);
        for entry in entries.into_iter().take(MAX_ROUTE_SERIES) {
            let labels = [
                (label::SOURCETOPIC, entry.spec.sourcetopic.as_str()),
                (label::SINKTOPIC, entry.spec.sinktopic.as_str()),
            ];
            family
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&get(&entry.events), None)?;
        }
        if self.table.allowall() {
            let labels = [
                (label::SOURCETOPIC, ""),
                (label::SINKTOPIC, ""),
                (label::ALLOWALL, "true"),
            ];
            family
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&get(&self.table.allowall_events), None)?;
        }
        Ok(omitted)
    }
}

#[cfg(test)]
mod tests;
