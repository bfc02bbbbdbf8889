//! The API's paths. Every one is answered on the unix socket and, with
//! `--listen`, on TCP.

/// The route table: `GET` lists it, `POST` adds, `PUT` upserts (or, with
/// [`REPLACE`]`=true`, replaces), `DELETE` removes.
pub const EVENTS: &str = "/events";

/// One route: this, then its source topic percent-encoded
/// (`/events/timer/sec/1`, `/events/%2E` for the `.` route).
pub const EVENT_PREFIX: &str = "/events/";

/// The query parameter of `PUT /events` that makes the table exactly the
/// body (`?replace=true`).
pub const REPLACE: &str = "replace";

/// The repeater's health, a [`crate::Health`].
pub const HEALTHZ: &str = "/healthz";

/// The counters and gauges, OpenMetrics text (names in [`crate::metric`]).
pub const METRICS: &str = "/metrics";

/// The topics the repeater's source serves now, a [`crate::SourceTopics`].
pub const SOURCE_TOPICS: &str = "/source/topics";

/// The dead letters ([`crate::dead_letter`]): `GET` lists them, `DELETE`
/// purges; both take the filters of [`crate::dead_letter::query`].
pub const DEAD_LETTERS: &str = "/dead-letters";

/// `POST`: sends the dead letters that match the filters through the
/// current routes again; each one delivered is removed from the file.
pub const DEAD_LETTERS_REPLAY: &str = "/dead-letters/replay";

/// The live tap ([`crate::tap`]): `GET` streams, as Server-Sent Events,
/// the events flowing through the repeater after routing; takes
/// [`crate::tap::query`]'s `topic` or `route`.
pub const TAP: &str = "/tap";

/// The path of the route for `sourcetopic`, encoded by the caller: `/events/`
/// then `encoded`.
///
/// ```
/// assert_eq!(app_event_repeater_api::path::event("timer/sec/1"), "/events/timer/sec/1");
/// ```
pub fn event(encoded: &str) -> String {
    format!("{EVENT_PREFIX}{encoded}")
}

/// The path of `PUT /events?replace=true`.
///
/// ```
/// assert_eq!(app_event_repeater_api::path::events_replace(), "/events?replace=true");
/// ```
pub fn events_replace() -> String {
    format!("{EVENTS}?{REPLACE}=true")
}
