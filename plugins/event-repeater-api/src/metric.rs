//! What `GET /metrics` shows: each family's name, type, unit and help text.
//!
//! The answer is OpenMetrics text. A family is named here without the
//! [`PREFIX`], the unit and `_total`; its samples carry all three
//! ([`Metric::sample`]): the family [`EVENTS_RECEIVED`] has the sample
//! `app_event_repeater_events_received_total`. Help texts go out as they
//! are, so none holds `"`, `\` or a newline (a test checks).

/// Every sample name starts with this and `_`.
pub const PREFIX: &str = "app_event_repeater";

/// The Content-Type of `/metrics`: OpenMetrics text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Most [`ROUTE_EVENTS`] series in one answer (the first routes by source
/// topic); [`ROUTE_SERIES_OMITTED`] counts the rest.
pub const MAX_ROUTE_SERIES: usize = 1000;

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (until a restart); samples end in `_total`.
    Counter,
    /// Goes up and down.
    Gauge,
}

/// A family's unit, which its name ends with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// `_bytes`.
    Bytes,
    /// `_seconds`.
    Seconds,
}

impl Unit {
    /// The name's suffix without the `_`.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Seconds => "seconds",
        }
    }
}

/// One family of `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    /// The name without [`PREFIX`], unit or `_total`.
    pub family: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// The unit the name ends with, if any.
    pub unit: Option<Unit>,
    /// The `# HELP` text.
    pub help: &'static str,
}

impl Metric {
    const fn counter(family: &'static str, help: &'static str) -> Metric {
        Metric {
            family,
            kind: Kind::Counter,
            unit: None,
            help,
        }
    }

    const fn gauge(family: &'static str, help: &'static str) -> Metric {
        Metric {
            family,
            kind: Kind::Gauge,
            unit: None,
            help,
        }
    }

    const fn with_unit(self, unit: Unit) -> Metric {
        Metric {
            unit: Some(unit),
            ..self
        }
    }

    /// The name of the family's samples (before any `{labels}`).
    ///
    /// ```
    /// use app_event_repeater_api::metric;
    /// assert_eq!(metric::EVENTS_ACKED.sample(), "app_event_repeater_events_acked_total");
    /// assert_eq!(metric::BUFFER_BYTES.sample(), "app_event_repeater_buffer_bytes");
    /// assert_eq!(metric::EVENTS_BUFFERED.sample(), "app_event_repeater_events_buffered");
    /// ```
    pub fn sample(&self) -> String {
        let mut name = format!("{PREFIX}_{}", self.family);
        if let Some(unit) = self.unit {
            name.push('_');
            name.push_str(unit.as_str());
        }
        if self.kind == Kind::Counter {
            name.push_str("_total");
        }
        name
    }
}

/// Label names and the values of the `reason` label.
pub mod label {
    /// Why an event was failed, dropped or refused.
    pub const REASON: &str = "reason";
    /// A route's source topic (`route_events_total`).
    pub const SOURCETOPIC: &str = "sourcetopic";
    /// A route's sink topic (`route_events_total`).
    pub const SINKTOPIC: &str = "sinktopic";
    /// `true` on the `--allowall` series of `route_events_total`.
    pub const ALLOWALL: &str = "allowall";
    /// The broker in use (`sink_broker`).
    pub const BROKER: &str = "broker";
    /// The repeater's version (`build_info`).
    pub const VERSION: &str = "version";
    /// `events_failed`: over the sink's packet or payload limit.
    pub const TOO_LARGE: &str = "too_large";
    /// `events_failed`: a topic the sink cannot take.
    pub const INVALID_TOPIC: &str = "invalid_topic";
    /// `events_failed`: the sink could not write it.
    pub const SINK_ERROR: &str = "sink_error";
    /// `events_dropped`: the buffer was full.
    pub const OVERFLOW: &str = "overflow";
    /// `events_dropped`: undelivered when the drain at shutdown ended.
    pub const SHUTDOWN: &str = "shutdown";
    /// `sink_refused`: the JetStream stream is full.
    pub const STREAM_FULL: &str = "stream_full";
    /// `dead_letters`: data the decoder could not take (not JSON, no topic).
    pub const INVALID: &str = "invalid";
}

/// Events read from the source.
pub const EVENTS_RECEIVED: Metric =
    Metric::counter("events_received", "Events read from the source.");
/// Events the source said it skipped for this reader.
pub const EVENTS_MISSED: Metric = Metric::counter(
    "events_missed",
    "Events the source reported it skipped for this reader (it no longer held them).",
);
/// Source events that were not usable.
pub const EVENTS_INVALID: Metric = Metric::counter(
    "events_invalid",
    "Events from the source that were not usable JSON events (not JSON, no topic, oversized, not UTF-8).",
);
/// Events no route matched.
pub const EVENTS_UNROUTED: Metric = Metric::counter(
    "events_unrouted",
    "Events that matched no route (not relayed, by design).",
);
/// Events routed and buffered.
pub const EVENTS_ACCEPTED: Metric = Metric::counter(
    "events_accepted",
    "Events routed and taken into the buffer.",
);
/// Events written to the sink the first time.
pub const EVENTS_PUBLISHED: Metric = Metric::counter(
    "events_published",
    "Events written to the sink (first transmission).",
);
/// Publishes sent again after a reconnect.
pub const EVENTS_REPUBLISHED: Metric = Metric::counter(
    "events_republished",
    "Publishes sent again after a reconnect because the broker had not acknowledged them.",
);
/// Events the sink confirmed.
pub const EVENTS_ACKED: Metric = Metric::counter(
    "events_acked",
    "Events the sink confirmed: broker acknowledgement at QoS 1 and 2, written at QoS 0 and for stderr.",
);
/// Accepted events refused, by [`label::REASON`]: [`label::TOO_LARGE`],
/// [`label::INVALID_TOPIC`], [`label::SINK_ERROR`].
pub const EVENTS_FAILED: Metric = Metric::counter(
    "events_failed",
    "Accepted events refused by the repeater, by reason.",
);
/// Accepted events dropped, by [`label::REASON`]: [`label::OVERFLOW`],
/// [`label::SHUTDOWN`].
pub const EVENTS_DROPPED: Metric = Metric::counter(
    "events_dropped",
    "Accepted events dropped, by reason: overflow (buffer full) or shutdown (undelivered when the drain timed out).",
);
/// Events waiting to be sent.
pub const EVENTS_BUFFERED: Metric = Metric::gauge("events_buffered", "Events waiting to be sent.");
/// Events sent and not yet acknowledged.
pub const EVENTS_INFLIGHT: Metric =
    Metric::gauge("events_inflight", "Events sent and not yet acknowledged.");
/// Bytes held by buffered and in-flight events.
pub const BUFFER_BYTES: Metric =
    Metric::gauge("buffer", "Bytes held by buffered and in-flight events.").with_unit(Unit::Bytes);
/// The `--buffer` limit.
pub const BUFFER_CAPACITY_EVENTS: Metric =
    Metric::gauge("buffer_capacity_events", "The --buffer limit.");
/// The `--buffer-bytes` limit.
pub const BUFFER_CAPACITY_BYTES: Metric =
    Metric::gauge("buffer_capacity", "The --buffer-bytes limit.").with_unit(Unit::Bytes);
/// Routes in the table.
pub const ROUTES: Metric = Metric::gauge("routes", "Routes in the table.");
/// 1 while the source's stream is open.
pub const SOURCE_CONNECTED: Metric = Metric::gauge(
    "source_connected",
    "1 while the event source stream is open.",
);
/// 1 while the sink is connected.
pub const SINK_CONNECTED: Metric = Metric::gauge(
    "sink_connected",
    "1 while the sink is connected (always 1 for stderr).",
);
/// Always 1, the broker in use in [`label::BROKER`]; absent until known.
pub const SINK_BROKER: Metric = Metric::gauge(
    "sink_broker",
    "The broker in use, as a label (MQTT; changes on failover).",
);
/// Times the source connection was lost.
pub const SOURCE_DISCONNECTS: Metric = Metric::counter(
    "source_disconnects",
    "Times the source connection was lost.",
);
/// SSE ids over the length limit, not kept.
pub const SOURCE_IDS_REFUSED: Metric = Metric::counter(
    "source_ids_refused",
    "SSE ids from the source over 1024 bytes, not kept (the event was relayed; the checkpoint stayed at the id before).",
);
/// Times the broker connection was lost.
pub const SINK_DISCONNECTS: Metric =
    Metric::counter("sink_disconnects", "Times the broker connection was lost.");
/// 1 while the source is stalled.
pub const SOURCE_STALLED: Metric = Metric::gauge(
    "source_stalled",
    "1 while the source is stalled: silent past --source-idle-timeout and nothing received since.",
);
/// Times the source went silent past `--source-idle-timeout`.
pub const SOURCE_STALLS: Metric = Metric::counter(
    "source_stalls",
    "Times the source went silent past --source-idle-timeout (each followed by a reconnect).",
);
/// 1 while `/healthz` shows a `sink.problem`.
pub const SINK_PROBLEM: Metric = Metric::gauge(
    "sink_problem",
    "1 while the sink cannot store events for a reason the connection state does not show (see sink.problem in /healthz).",
);
/// 1 while events wait and the sink acknowledged none for a while.
pub const SINK_STALLED: Metric = Metric::gauge(
    "sink_stalled",
    "1 while events wait and the sink has acknowledged none for 10 s or more (connected or not; the reason is sink.problem in /healthz).",
);
/// Times the sink stalled so.
pub const SINK_STALLS: Metric = Metric::counter(
    "sink_stalls",
    "Times events waited and the sink acknowledged none for 10 s.",
);
/// JetStream acknowledgements that said `duplicate`: the stream already
/// held a message with the publish's `Nats-Msg-Id`.
pub const EVENTS_DUPLICATE: Metric = Metric::counter(
    "events_duplicate",
    "Publishes the stream acknowledged as duplicates (it already held their Nats-Msg-Id): sent again by this repeater, an earlier run of it, or another writer with the same --source-id.",
);
/// Duplicates whose stored message differs from the event sent: another
/// writer used the same `--source-id` for other events, which were lost.
pub const EVENTS_DUPLICATE_CONFLICT: Metric = Metric::counter(
    "events_duplicate_conflict",
    "Duplicates whose stored message differs from the event sent (checked for those this run had not sent before): another writer with the same --source-id sends other events, and this event was not stored.",
);
/// Publishes the broker refused, by [`label::REASON`]:
/// [`label::STREAM_FULL`].
pub const SINK_REFUSED: Metric = Metric::counter(
    "sink_refused",
    "Publishes the broker refused, by reason; the events are kept and sent again.",
);
/// Events taken by each route, by [`label::SOURCETOPIC`] and
/// [`label::SINKTOPIC`] (and [`label::ALLOWALL`] for `--allowall`).
pub const ROUTE_EVENTS: Metric = Metric::counter(
    "route_events",
    "Events taken by each route (for --allowall: sourcetopic and sinktopic empty, allowall=true).",
);
/// Routes without a [`ROUTE_EVENTS`] series (over [`MAX_ROUTE_SERIES`]).
pub const ROUTE_SERIES_OMITTED: Metric = Metric::gauge(
    "route_series_omitted",
    "Routes without a route_events_total series (over the cap of 1000 series).",
);
/// Events written to the dead-letter file, by [`label::REASON`] (the
/// labels of [`EVENTS_FAILED`] and [`EVENTS_DROPPED`], and
/// [`label::INVALID`]).
pub const DEAD_LETTERS: Metric = Metric::counter(
    "dead_letters",
    "Events refused or dropped and kept in the dead-letter file, by reason.",
);
/// Bytes in the dead-letter file and its `.1`.
pub const DEAD_LETTER_BYTES: Metric = Metric::gauge(
    "dead_letter",
    "Bytes in the dead-letter file and its rotated .1.",
)
.with_unit(Unit::Bytes);
/// Dead letters cut by rotation (the old `.1` replaced) or purged.
pub const DEAD_LETTERS_CUT: Metric = Metric::counter(
    "dead_letters_cut",
    "Dead letters removed by rotation past --dead-letter-max (the old .1 file replaced).",
);
/// Dead letters that could not be written (disk full, writer behind).
pub const DEAD_LETTERS_LOST: Metric = Metric::counter(
    "dead_letters_lost",
    "Events that should have been kept as dead letters but could not be written (disk full or the writer behind).",
);
/// Dead letters replayed and delivered (then removed from the file).
pub const DEAD_LETTERS_REPLAYED: Metric = Metric::counter(
    "dead_letters_replayed",
    "Dead letters replayed and delivered, then removed from the file.",
);
/// Live taps open now ([`crate::path::TAP`]).
pub const TAP_CLIENTS: Metric = Metric::gauge("tap_clients", "Live taps (GET /tap) open now.");
/// Events a live tap skipped because its client fell behind.
pub const TAP_SKIPPED: Metric = Metric::counter(
    "tap_skipped",
    "Events live taps skipped because their client fell behind (delivery is not affected).",
);
/// Always 1, the version in [`label::VERSION`].
pub const BUILD_INFO: Metric = Metric::gauge("build_info", "The repeater's version.");
/// When the repeater started, seconds since the Unix epoch.
pub const START_TIME: Metric = Metric::gauge(
    "start_time",
    "When the repeater started, in seconds since the Unix epoch.",
)
.with_unit(Unit::Seconds);

/// Every family, in the order of the answer.
pub const ALL: [Metric; 41] = [
    EVENTS_RECEIVED,
    EVENTS_MISSED,
    EVENTS_INVALID,
    EVENTS_UNROUTED,
    EVENTS_ACCEPTED,
    EVENTS_PUBLISHED,
    EVENTS_REPUBLISHED,
    EVENTS_ACKED,
    EVENTS_DUPLICATE,
    EVENTS_DUPLICATE_CONFLICT,
    EVENTS_FAILED,
    EVENTS_DROPPED,
    EVENTS_BUFFERED,
    EVENTS_INFLIGHT,
    BUFFER_BYTES,
    BUFFER_CAPACITY_EVENTS,
    BUFFER_CAPACITY_BYTES,
    ROUTES,
    SOURCE_CONNECTED,
    SINK_CONNECTED,
    SINK_BROKER,
    SOURCE_DISCONNECTS,
    SOURCE_IDS_REFUSED,
    SINK_DISCONNECTS,
    SOURCE_STALLED,
    SOURCE_STALLS,
    SINK_PROBLEM,
    SINK_STALLED,
    SINK_STALLS,
    SINK_REFUSED,
    ROUTE_EVENTS,
    ROUTE_SERIES_OMITTED,
    DEAD_LETTERS,
    DEAD_LETTER_BYTES,
    DEAD_LETTERS_CUT,
    DEAD_LETTERS_LOST,
    DEAD_LETTERS_REPLAYED,
    TAP_CLIENTS,
    TAP_SKIPPED,
    BUILD_INFO,
    START_TIME,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_texts_need_no_escaping_and_families_are_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for m in ALL {
            assert!(!m.help.contains(['"', '\\', '\n']), "{}", m.family);
            assert!(seen.insert(m.sample()), "{} twice", m.family);
        }
        assert!(ROUTE_SERIES_OMITTED
            .help
            .contains(&format!("cap of {MAX_ROUTE_SERIES} series")));
    }

    #[test]
    fn the_api_document_names_every_sample() {
        let doc = include_str!("../../../docs/rest-api.md");
        for m in ALL {
            let sample = m.sample();
            let short = sample.trim_start_matches(&format!("{PREFIX}_"));
            assert!(
                doc.contains(&format!("`{short}")),
                "docs/rest-api.md does not name {short}"
            );
        }
    }
}
