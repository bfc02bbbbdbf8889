//! The answer of `GET /healthz`: always 200 while the repeater runs.

use serde::{Deserialize, Serialize};

/// `GET /healthz`.
///
/// The fields are declared in alphabetical order because that is the order
/// the answer has always had (it was a `serde_json::json!` map, which sorts
/// its keys): the bytes on the wire stay the same.
///
/// Reading is lenient both ways: a field a newer repeater adds is ignored,
/// and one an older repeater did not send reads as its default (`false`,
/// `0`, `""`, `None`).
///
/// ```
/// use app_event_repeater_api::{Health, HealthStatus};
/// let old = r#"{"status":"ok","name":"r1","source":{"url":"u","connected":true},"future":1}"#;
/// let h: Health = serde_json::from_str(old).unwrap();
/// assert_eq!((h.status, h.name.as_str(), h.source.connected), (HealthStatus::Ok, "r1", true));
/// assert!(!h.source.stalled);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Health {
    /// Whether `--allowall` relays events no route takes.
    pub allowall: bool,
    /// Events waiting in the buffer.
    pub buffered: usize,
    /// Events taken from the source after the checkpoint (the newest
    /// position with every event before it done): what a restart now would
    /// ask the source for again. `None` from a repeater older than this.
    pub checkpoint_lag: Option<u64>,
    /// Events sent and not yet acknowledged.
    pub inflight: usize,
    /// The repeater's `--name`.
    pub name: String,
    /// Routes in the table.
    pub routes: usize,
    /// The sink's side.
    pub sink: SinkHealth,
    /// The source's side.
    pub source: SourceHealth,
    /// When the repeater started, seconds since the Unix epoch.
    pub started_unix: u64,
    /// `ok` or `degraded`.
    pub status: HealthStatus,
    /// Seconds since the start, on the monotonic clock.
    pub uptime_secs: u64,
    /// The repeater's version.
    pub version: String,
}

/// `ok` when the source and the sink are connected, the source is not
/// stalled and the sink reports no problem; `degraded` otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Relaying.
    Ok,
    /// Up, but not relaying everything it should.
    Degraded,
    /// Missing, or a word this version does not know (a newer repeater's).
    #[default]
    #[serde(other)]
    Unknown,
}

/// `source` in [`Health`] (fields in alphabetical order, as [`Health`]'s).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SourceHealth {
    /// Whether the source's event stream is open.
    pub connected: bool,
    /// What is wrong with the source now, in words; `null` when nothing.
    pub problem: Option<String>,
    /// Whether the source went silent past `--source-idle-timeout` and has
    /// sent nothing since (a new subscription's headers do not count).
    pub stalled: bool,
    /// How this run began: `resumed after event id …`, or `from the
    /// source's live events: …` with the reason (no checkpoint yet, the
    /// checkpoint held no id, …); `null` from a repeater older than this.
    pub start: Option<String>,
    /// The source's address (`unix:/…/event-time.sock`, `http://…`).
    pub url: String,
}

/// `sink` in [`Health`] (fields in alphabetical order, as [`Health`]'s).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SinkHealth {
    /// The broker in use (MQTT with several `--sink`s: which one); `""`
    /// until one is known.
    pub broker: String,
    /// Whether the sink is connected (always for stderr).
    pub connected: bool,
    /// Of the duplicates, how many stored a different message: another writer with
    /// the same `--source-id` sends other events (they were lost).
    pub duplicate_conflicts: u64,
    /// Publishes the stream acknowledged as duplicates (NATS JetStream:
    /// it already held their `Nats-Msg-Id`).
    pub duplicates: u64,
    /// Why the sink cannot store events though connected (NATS: no
    /// JetStream, a full stream), or why it is stalled; `null` when nothing.
    pub problem: Option<String>,
    /// Whether events wait and the sink has acknowledged none for 10 s
    /// (the reason in `problem`).
    pub stalled: bool,
    /// The sink as given (`mqtt://…`, `nats://…`, `stderr`).
    pub url: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_keeps_its_bytes() {
        // What the repeater sent when the answer was a `json!` literal.
        let was = serde_json::json!({
            "status": "degraded",
            "name": "r1",
            "version": "0.1.0",
            "started_unix": 1_796_025_600u64,
            "uptime_secs": 5,
            "source": {"url": "unix:/s.sock", "connected": true, "stalled": false, "problem": null, "start": "resumed after event id 7"},
            "sink": {"url": "nats://n:4222", "connected": true, "broker": "", "problem": "the stream is full",
                     "duplicate_conflicts": 0, "duplicates": 2, "stalled": false},
            "routes": 2,
            "allowall": false,
            "buffered": 1,
            "checkpoint_lag": 4,
            "inflight": 3,
        });
        let now = Health {
            allowall: false,
            buffered: 1,
            checkpoint_lag: Some(4),
            inflight: 3,
            name: "r1".into(),
            routes: 2,
            sink: SinkHealth {
                broker: String::new(),
                connected: true,
                duplicate_conflicts: 0,
                duplicates: 2,
                problem: Some("the stream is full".into()),
                stalled: false,
                url: "nats://n:4222".into(),
            },
            source: SourceHealth {
                connected: true,
                problem: None,
                stalled: false,
                start: Some("resumed after event id 7".into()),
                url: "unix:/s.sock".into(),
            },
            started_unix: 1_796_025_600,
            status: HealthStatus::Degraded,
            uptime_secs: 5,
            version: "0.1.0".into(),
        };
        let text = serde_json::to_string(&now).unwrap();
        assert_eq!(text, serde_json::to_string(&was).unwrap());
        assert_eq!(serde_json::from_str::<Health>(&text).unwrap(), now);
    }

    #[test]
    fn an_unknown_status_is_neither_ok_nor_degraded() {
        let h: Health = serde_json::from_str(r#"{"status":"starting"}"#).unwrap();
        assert_eq!(h.status, HealthStatus::Unknown);
        let h: Health = serde_json::from_str("{}").unwrap();
        assert_eq!(h.status, HealthStatus::Unknown);
    }
}
