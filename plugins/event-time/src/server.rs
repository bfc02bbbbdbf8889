//! The HTTP routes: `GET /events` (the SSE stream) and `GET /topics`.
//!
//! Every error is JSON, `{"error":"…"}`: an unknown topic or path is `404`,
//! a wrong method `405` (with `Allow`), a bad `Last-Event-ID` or query `400`,
//! and an `Accept` header that rules out `text/event-stream` `406`. A
//! request hyper cannot parse (a head over [`MAX_CONN_BUFFER`]) gets a JSON
//! `431`/`414`/`400` too ([`app_plugin::http::JsonParseErrors`]).
//!
//! Connections are served by the SDK's loop ([`app_plugin::daemon::serve`],
//! not `axum::serve`) so that each one's write buffer is capped at
//! [`MAX_CONN_BUFFER`]: a subscriber that stops reading holds that much plus
//! one chunk, not hyper's default of about 400 KiB.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use crate::hub::Hub;
use crate::topics::Catalogue;
use app_plugin::log::{DEBUG, INFO};

/// Most bytes a connection queues for writing before it stops taking more
/// from the event stream (hyper's minimum is 8 KiB).
pub const MAX_CONN_BUFFER: usize = 16 * 1024;

/// How long a client may take to send a request head, counted from the
/// connection's start.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    pub hub: Arc<Hub>,
    pub catalogue: Arc<Catalogue>,
    pub keep_alive: Duration,
}

/// The routes, with JSON errors for everything else.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/events", get(events).fallback(method_not_allowed))
        .route("/topics", get(topics).fallback(method_not_allowed))
        .fallback(not_found)
        .with_state(state)
}

/// The query of `GET /events`.
#[derive(Debug, Deserialize)]
struct EventsQuery {
    topic: Option<String>,
    last_event_id: Option<String>,
}

async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Response {
    let Query(query) = match query {
        Ok(q) => q,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("bad query: {}", e.body_text()),
            )
        }
    };
    if !accepts_event_stream(&headers) {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            "GET /events answers text/event-stream; send Accept: text/event-stream".into(),
        );
    }
    let topic = query.topic.unwrap_or_default();
    let Some(filter) = state.catalogue.filter(&topic) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("unknown topic '{topic}'; GET /topics lists them"),
        );
    };
    let header_id = headers
        .get("last-event-id")
        .map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let last_event_id = match parse_last_event_id(header_id.or(query.last_event_id.as_deref())) {
        Ok(id) => id,
        Err(msg) => return error(StatusCode::BAD_REQUEST, msg),
    };
    app_plugin::log!(
        INFO,
        "subscriber to '{topic}' (Last-Event-ID {last_event_id:?})"
    );
    let body = Body::from_stream(crate::sse::stream(
        state.hub,
        filter,
        last_event_id,
        state.keep_alive,
    ));
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

/// `None` for no position (or an empty one, which SSE clients send after a
/// stream that had no ids), else the sequence number.
fn parse_last_event_id(value: Option<&str>) -> Result<Option<u64>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| {
            format!(
                "Last-Event-ID '{v}' is not an event id; send the id: of the last event received"
            )
        }),
    }
}

/// Whether the client takes `text/event-stream` (no `Accept` at all counts).
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(header::ACCEPT).iter().peekable();
    if values.peek().is_none() {
        return true;
    }
    values
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|item| {
            item.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .any(|media| matches!(media.as_str(), "text/event-stream" | "text/*" | "*/*"))
}

async fn topics(State(state): State<AppState>) -> Response {
    Json(state.catalogue.topics()).into_response()
}

async fn not_found(method: Method, uri: Uri) -> Response {
    app_plugin::log!(DEBUG, "no route for {method} {}", uri.path());
    error(
        StatusCode::NOT_FOUND,
        format!(
            "no such path '{}'; the paths are GET /events?topic=T and GET /topics",
            uri.path()
        ),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> Response {
    let mut response = error(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("method {method} is not allowed on {}; use GET", uri.path()),
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
    response
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_event_id_parsing() {
        assert_eq!(parse_last_event_id(None), Ok(None));
        assert_eq!(parse_last_event_id(Some("")), Ok(None));
        assert_eq!(parse_last_event_id(Some(" 42 ")), Ok(Some(42)));
        assert!(parse_last_event_id(Some("x")).unwrap_err().contains("'x'"));
        assert!(parse_last_event_id(Some("-1")).is_err());
    }

    #[test]
    fn accept_header_rules() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
            accepts_event_stream(&h)
        };
        assert!(accepts_event_stream(&HeaderMap::new()));
        assert!(with("text/event-stream"));
        assert!(with("application/json, */*;q=0.1"));
        assert!(with("Text/Event-Stream; charset=utf-8"));
        assert!(!with("application/json"));
    }
}
