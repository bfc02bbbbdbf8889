//! A warning, not a refusal, for a route whose source topic the repeater's
//! source does not serve (sources can gain topics later). The repeater is
//! asked `GET /source/topics` (it asks its source), so this works for a
//! repeater on any host, one or several; a local repeater without that
//! endpoint has its source (from `/healthz`) asked directly, within a
//! second.

use std::time::Duration;

use app_event_repeater_api::{path, Health, Route, SourceTopics};

use crate::address::Endpoint;
use crate::remote::http::Client;
use crate::remote::Remote;
use crate::request::{topic_of, Method};

const SOURCE_TIMEOUT: Duration = Duration::from_secs(1);
/// A route's topic and the source's list, each cut to this in a warning
/// (a 70 KB topic made a 140 KB line).
const SHOWN: usize = 256;

/// The source topics a request (`request` path, `body`) names: the routes
/// in the body, or the topic in `/events/<sourcetopic>`.
pub fn named(request: &str, body: Option<&str>) -> Vec<String> {
    let from_body: Vec<String> = body
        .and_then(|b| serde_json::from_str(b).ok())
        .and_then(|v| Route::from_answer(v).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.sourcetopic)
        .collect();
    if !from_body.is_empty() {
        return from_body;
    }
    topic_of(request).into_iter().collect()
}

/// Whether a route for `route` takes any of `topics`.
fn served(route: &str, topics: &[String]) -> bool {
    route == "."
        || if route.ends_with('/') {
            topics.iter().any(|t| t.starts_with(route))
        } else {
            topics.iter().any(|t| t == route)
        }
}

/// Warns on stderr about each of `routes` that the source of the repeater
/// behind `remote` does not serve; silent when that cannot be known. With
/// `host`, each warning starts with that host's label (several hosts).
pub fn warn_unserved(remote: &Remote, routes: &[String], host: Option<&str>) {
    if routes.is_empty() {
        return;
    }
    let Some((source, topics)) = source_topics(remote) else {
        return;
    };
    let prefix = host.map(|h| format!("{h}: ")).unwrap_or_default();
    let listed = topics.join(", ");
    let listed = app_plugin::text::shorten(&listed, SHOWN);
    for route in routes.iter().filter(|r| !served(r, &topics)) {
        app_plugin::log::write(
            app_plugin::log::WARN,
            format_args!(
                "{prefix}the route for '{}' is in place, but {source} does not serve that topic now (it lists {listed})",
                app_plugin::text::shorten(route, SHOWN)
            ),
        );
    }
}

/// Who was asked, and the topics: the repeater's `GET /source/topics`
/// (it asks its source, which only it may be able to reach); for a local
/// repeater too old to have that, its source directly.
fn source_topics(remote: &Remote) -> Option<(String, Vec<String>)> {
    match remote.request(Method::Get, path::SOURCE_TOPICS, None) {
        Ok(reply) => {
            let topics: SourceTopics = serde_json::from_str(&reply.body).ok()?;
            return Some(("the repeater's source".to_string(), topics));
        }
        // Only a repeater without that path (404) is asked around: one
        // that refused its source's list (too large, too slow) has said
        // the list is not to be used.
        Err(crate::error::Error::Refused { status: 404, .. }) => {}
        Err(_) => return None,
    }
    if !remote.target().endpoint.is_local() {
        return None;
    }
    let health = remote.request(Method::Get, path::HEALTHZ, None).ok()?;
    let health: Health = serde_json::from_str(&health.body).ok()?;
    let url = health.source.url;
    let endpoint = match url.strip_prefix("unix:") {
        Some(path) => Endpoint::Unix(path.into()),
        None => Endpoint::parse(&url).ok()?,
    };
    let reply = Client::new(&endpoint, None, SOURCE_TIMEOUT)
        .send("GET", "/topics", None)
        .ok()?;
    if reply.status != 200 {
        return None;
    }
    let topics: SourceTopics = serde_json::from_str(&reply.body).ok()?;
    Some((format!("the source {url}"), topics))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_named_by_a_request() {
        assert_eq!(
            named(
                "/events",
                Some(r#"[{"sourcetopic":"a"},{"sourcetopic":"b/"}]"#)
            ),
            ["a", "b/"]
        );
        assert_eq!(
            named("/events/timer/sec/7", Some(r#"{"sinktopic":"x"}"#)),
            ["timer/sec/7"]
        );
        assert_eq!(named("/events/a%20b", None), ["a b"]);
        assert!(named("/events?replace=true", Some("[]")).is_empty());
    }

    #[test]
    fn exact_prefix_and_everything() {
        let topics = vec!["timer/sec/1".to_string(), "timer/min/1".to_string()];
        assert!(served("timer/sec/1", &topics));
        assert!(!served("timer/sec/7", &topics));
        assert!(served("timer/", &topics));
        assert!(!served("other/", &topics));
        assert!(served(".", &topics));
    }
}
