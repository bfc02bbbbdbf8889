//! Dead letters: events the repeater accepted and then could not deliver
//! for a reason of their own, kept one JSON line each in the dead-letter
//! file (`--dead-letter`), listed, replayed and purged over the API
//! ([`crate::path::DEAD_LETTERS`]).

use serde::{Deserialize, Serialize};

/// One dead letter: a line of the file, and an element of [`Letters`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Letter {
    /// Unique and increasing in one file (microseconds since the Unix
    /// epoch when it was written, or one more than the one before): what
    /// replay and purge name a letter by, and the publishing id a replay
    /// into a RabbitMQ stream is deduplicated by.
    pub seq: u64,
    /// When it was written, RFC 3339 in UTC (`2026-12-03T08:00:00.123Z`).
    pub time: String,
    /// Why it was not delivered: a `reason` label of `events_failed_total`
    /// or `events_dropped_total`, or `invalid`.
    pub reason: String,
    /// What the repeater said about it (escaped when shown).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// The route's source topic (its pattern), when it was routed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// The event's topic, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_topic: Option<String>,
    /// The SSE id in force (what a resume sends as `Last-Event-ID`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The dedup key when it is not `id` (an event without an `id:` of
    /// its own: `LASTID#N.HASH`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The SSE `event:` name, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The sink topic tried, when one was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink_topic: Option<String>,
    /// The event's data: as received for events refused before the
    /// buffer; the payload the sink was given (JSON on one line, or the
    /// text) for events refused by the sink or dropped from the buffer.
    pub data: String,
}

/// The answer of `GET /dead-letters`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Letters {
    /// Letters that match, oldest first, at most `limit`.
    pub letters: Vec<Letter>,
    /// How many letters match in all (more than `letters` holds when the
    /// limit cut the answer).
    pub matched: u64,
    /// Letters in the file(s), matching or not.
    pub total: u64,
    /// Lines of the file that are not letters (cut by a crash or a full
    /// disk), skipped.
    #[serde(default)]
    pub unreadable: u64,
}

/// The answer of `POST /dead-letters/replay`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replayed {
    /// Letters that matched the filters.
    pub matched: u64,
    /// Delivered, and removed from the file.
    pub delivered: u64,
    /// Refused again (still in the file, the reason unchanged).
    pub refused: u64,
    /// Not delivered within the timeout (still in the file; a later replay
    /// sends them again, which the broker deduplicates where it can).
    pub pending: u64,
}

/// The answer of `DELETE /dead-letters`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Purged {
    /// Letters removed.
    pub removed: u64,
    /// Letters left (those the filters did not match).
    pub left: u64,
}

/// Query parameters that choose letters (every one optional; all must
/// match).
pub mod query {
    /// A reason, e.g. `too_large`.
    pub const REASON: &str = "reason";
    /// A source topic pattern as routes take it (`a/b`, `a/`, `.`).
    pub const TOPIC: &str = "topic";
    /// Written at or after this time (RFC 3339, or seconds since the epoch).
    pub const SINCE: &str = "since";
    /// Written before this time.
    pub const UNTIL: &str = "until";
    /// The most letters in an answer (`GET` only; default 100, at most 10000).
    pub const LIMIT: &str = "limit";
    /// How long replay waits for the broker, in seconds (default 30, at most 600).
    pub const TIMEOUT: &str = "timeout";
}

/// Every dead letter's `reason` (the `reason` filter takes one of them).
pub const REASONS: [&str; 5] = [
    crate::metric::label::INVALID,
    crate::metric::label::INVALID_TOPIC,
    crate::metric::label::TOO_LARGE,
    crate::metric::label::SINK_ERROR,
    crate::metric::label::OVERFLOW,
];

/// The default and largest `limit` of `GET /dead-letters`.
pub const DEFAULT_LIMIT: usize = 100;
/// See [`DEFAULT_LIMIT`].
pub const MAX_LIMIT: usize = 10_000;
/// The default and largest `timeout` of a replay, in seconds.
pub const DEFAULT_REPLAY_TIMEOUT: u64 = 30;
/// See [`DEFAULT_REPLAY_TIMEOUT`].
pub const MAX_REPLAY_TIMEOUT: u64 = 600;
