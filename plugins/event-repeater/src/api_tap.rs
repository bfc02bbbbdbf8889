//! `GET /tap`: the live tap ([`crate::tap`]) as Server-Sent Events.
//!
//! The answer is a stream that lasts until the client goes or the repeater
//! stops, so it must live with the API server's limits
//! ([`app_plugin::daemon::serve`]): the header-read timeout only bounds
//! reading a request head, and the write timeout only ends a connection
//! whose client takes nothing for `--request-timeout` (a tap whose reader
//! stopped: that frees its place). A keep-alive comment every
//! [`KEEP_ALIVE_SECS`] shows a client that the tap is alive and lets the
//! server notice a client that went away. When the repeater stops,
//! [`crate::tap::Taps::close`] ends every stream with a last comment.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use app_event_repeater_api::path::TAP;
use app_event_repeater_api::tap::{
    query, skipped_comment, KEEP_ALIVE_SECS, OPEN_COMMENT, STOPPING_COMMENT,
};
use axum::body::Body;
use axum::extract::{FromRef, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::FutureExt;

use crate::api_error::ApiError;
use crate::routes::RouteStore;
use crate::tap::{covers, Filter, Next, OpenError, Tap, Taps};

/// What the tap endpoint takes from the API's state.
#[derive(Clone)]
pub struct Shared {
    pub taps: Arc<Taps>,
    /// For `route=`: which routes there are.
    pub routes: Arc<RouteStore>,
}

type Params = Result<Query<BTreeMap<String, String>>, axum::extract::rejection::QueryRejection>;

/// Adds the endpoint to the API's router, whose state gives [`Shared`].
pub fn routes<S>(router: Router<S>) -> Router<S>
where
    Shared: FromRef<S>,
    S: Clone + Send + Sync + 'static,
{
    router.route(TAP, get(tap))
}

/// Events written into one chunk at most, when several are ready.
const BATCH: usize = 64;
/// Bytes of one chunk, past which no more events are added to it.
const BATCH_BYTES: usize = 64 << 10;

async fn tap(State(st): State<Shared>, params: Params) -> Result<Response, ApiError> {
    let filter = filter(&st, params).await?;
    let tap = st.taps.open(filter).map_err(|e| match e {
        OpenError::Full(_) => ApiError::new(StatusCode::TOO_MANY_REQUESTS, e.to_string()),
        OpenError::Stopping => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    })?;
    app_plugin::debug!("a tap opened ({} open)", st.taps.len());
    let body = Body::from_stream(futures_util::stream::unfold(Stream::Opening(tap), step));
    Ok((
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response())
}

/// The filter of `topic=` or `route=` (at most one; none: every event).
async fn filter(st: &Shared, params: Params) -> Result<Filter, ApiError> {
    let Query(params) =
        params.map_err(|e| ApiError::bad_request(format!("bad query: {}", e.body_text())))?;
    if params.len() > 1 {
        return Err(ApiError::bad_request(format!(
            "give {} or {}, not both",
            query::TOPIC,
            query::ROUTE
        )));
    }
    let Some((k, v)) = params.into_iter().next() else {
        return Ok(Box::new(|_| true));
    };
    if v.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{k}= is empty: give a source topic, a prefix ending in / or . for every topic"
        )));
    }
    match k.as_str() {
        query::TOPIC => Ok(Box::new(move |t| t.is_some_and(|t| covers(&v, t)))),
        query::ROUTE => {
            let routes = st.routes.list().await;
            if !routes.iter().any(|r| r.sourcetopic == v) {
                return Err(ApiError::not_found(format!(
                    "no route for sourcetopic {v:?}; list the routes with `app event-repeater manage get`"
                )));
            }
            // The events of this route: those it covers that no more
            // specific route takes (as the table in force now routes them).
            let closer: Vec<String> = routes
                .into_iter()
                .map(|r| r.sourcetopic)
                .filter(|r| *r != v && covers(&v, r))
                .collect();
            Ok(Box::new(move |t| {
                t.is_some_and(|t| covers(&v, t) && !closer.iter().any(|c| covers(c, t)))
            }))
        }
        _ => Err(ApiError::bad_request(format!(
            "unknown query parameter {k:?}; known: {}, {}",
            query::TOPIC,
            query::ROUTE
        ))),
    }
}

enum Stream {
    Opening(Tap),
    Open(Tap),
    Ended,
}

/// The next chunk of the stream: what is ready, or a keep-alive comment.
async fn step(state: Stream) -> Option<(Result<Bytes, std::convert::Infallible>, Stream)> {
    let tap = match state {
        Stream::Opening(tap) => {
            return Some((Ok(comment(OPEN_COMMENT)), Stream::Open(tap)));
        }
        Stream::Open(tap) => tap,
        Stream::Ended => return None,
    };
    let first = match tokio::time::timeout(Duration::from_secs(KEEP_ALIVE_SECS), tap.next()).await {
        Ok(next) => next,
        Err(_) => return Some((Ok(comment("keep-alive")), Stream::Open(tap))),
    };
    let mut out = BytesMut::new();
    let mut next = Some(first);
    let mut n = 0;
    while let Some(item) = next.take() {
        if !write(&mut out, item) {
            return Some((Ok(out.freeze()), Stream::Ended));
        }
        n += 1;
        if n < BATCH && out.len() < BATCH_BYTES {
            next = tap.next().now_or_never();
        }
    }
    Some((Ok(out.freeze()), Stream::Open(tap)))
}

/// Writes one item as SSE; `false` after the last one.
fn write(out: &mut BytesMut, item: Next) -> bool {
    match item {
        Next::Event(seen) => {
            let event = seen.event();
            out.put_slice(b"event: ");
            out.put_slice(event.outcome.as_str().as_bytes());
            out.put_slice(b"\ndata: ");
            // Serializing plain strings cannot fail; JSON holds no raw
            // newline, so it is one `data:` line.
            if let Ok(json) = serde_json::to_vec(&event) {
                out.put_slice(&json);
            }
            out.put_slice(b"\n\n");
            true
        }
        Next::Skipped(n) => {
            out.put_slice(&comment(&skipped_comment(n)));
            true
        }
        Next::Closed => {
            out.put_slice(&comment(STOPPING_COMMENT));
            false
        }
    }
}

fn comment(text: &str) -> Bytes {
    Bytes::from(format!(": {text}\n\n"))
}
