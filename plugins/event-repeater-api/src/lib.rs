//! The event repeater's REST contract, in one place for both sides: the
//! repeater (`app-event-repeater`) answers with these types and the manager
//! (`app-event-repeater-manage`) reads them with the same types, as docker's
//! cli-plugins share one contract.
//!
//! - [`path`]: the endpoints;
//! - [`Route`]: a route, in request and answer bodies, the state file and
//!   route files;
//! - [`Health`]: the answer of `GET /healthz`;
//! - [`ErrorBody`]: every error answer;
//! - [`dead_letter`]: dead letters, listed, replayed and purged;
//! - [`tap`]: the live tap's events;
//! - [`metric`]: the names (and help texts) of what `GET /metrics` shows.
//!
//! `docs/rest-api.md` describes the API; the bytes on the wire are what
//! these types serialize to, so changing a field here changes the API.
//!
//! Compatibility: what a client sends is checked strictly (an unknown route
//! field is refused); what a client reads is read leniently, so that a
//! manager works with older and newer repeaters (unknown fields are
//! ignored, a field an older repeater did not have reads as its default).

pub mod dead_letter;
pub mod error;
pub mod health;
pub mod metric;
pub mod path;
pub mod route;
pub mod tap;

pub use error::ErrorBody;
pub use health::{Health, HealthStatus, SinkHealth, SourceHealth};
pub use route::Route;

/// The answer of `GET /source/topics`: the topics the repeater's source
/// serves now, as its own `GET /topics` lists them.
pub type SourceTopics = Vec<String>;
