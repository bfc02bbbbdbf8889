//! The REST API: routes (`/events`), health (`/healthz`) and metrics
//! (`/metrics`), served on the unix socket and, with `--listen`, on TCP.
//!
//! The handlers only translate: a request to a call of the
//! [`RouteStore`] (which makes every change all-or-nothing: computed,
//! checked, written to the state file, then swapped in), its answer or
//! [`crate::routes::RouteError`] to HTTP. Bad input never changes anything
//! and always gets a JSON error (see [`ApiError`]).

use std::sync::Arc;

use app_event_repeater_api::path::{
    DEAD_LETTERS, EVENTS, EVENT_PREFIX, HEALTHZ, METRICS, SOURCE_TOPICS, TAP,
};
use app_event_repeater_api::{metric, Health, HealthStatus, SinkHealth, SourceHealth};
use axum::extract::{FromRef, Path, Query, Request, State};
use axum::http::{header, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::api_body::{BodyBytes, BodyTimeout};
use crate::api_dead_letters;
use crate::api_error::ApiError;
use crate::api_tap;
use crate::buffer::Buffer;
use crate::metrics::{self, Metrics};
use crate::routes::current;
use crate::routes::{Route, RouteStore};

pub struct ApiState {
    pub name: String,
    /// The routes, their table, limit and file.
    pub routes: Arc<RouteStore>,
    pub metrics: Arc<Metrics>,
    pub buffer: Arc<Buffer>,
    pub source: String,
    /// The source's configuration, for `GET /source/topics`.
    pub source_config: std::sync::Arc<dyn crate::source::SourceConfig>,
    pub sink: String,
    /// When the repeater started, for uptime and the start time.
    pub started: Started,
    /// `--request-timeout`: how long a request body may take to arrive.
    pub body_timeout: std::time::Duration,
    /// The dead letters and their replay (`--dead-letter off`: none).
    pub dead_letters: Option<Arc<crate::api_dead_letters::DeadLetterApi>>,
}

/// The start of the process, on both clocks: the wall clock for the start
/// time reported, the monotonic one for the uptime.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    pub wall: std::time::SystemTime,
    pub mono: std::time::Instant,
}

impl Started {
    pub fn now() -> Started {
        Started {
            wall: std::time::SystemTime::now(),
            mono: std::time::Instant::now(),
        }
    }

    /// Seconds since the Unix epoch.
    pub fn unix_secs(&self) -> u64 {
        self.wall
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }
}

/// What the dead-letter endpoints use.
impl FromRef<Arc<ApiState>> for api_dead_letters::Shared {
    fn from_ref(st: &Arc<ApiState>) -> api_dead_letters::Shared {
        api_dead_letters::Shared(st.dead_letters.clone())
    }
}

/// What the tap endpoint uses.
impl FromRef<Arc<ApiState>> for api_tap::Shared {
    fn from_ref(st: &Arc<ApiState>) -> api_tap::Shared {
        api_tap::Shared {
            taps: st.buffer.taps().clone(),
            routes: st.routes.clone(),
        }
    }
}

/// What [`BodyBytes`] reads a body within.
impl FromRef<Arc<ApiState>> for BodyTimeout {
    fn from_ref(st: &Arc<ApiState>) -> BodyTimeout {
        BodyTimeout(st.body_timeout)
    }
}

type St = State<Arc<ApiState>>;
type Body = Result<BodyBytes, ApiError>;

/// The API's routes (no authentication; see [`with_token`]).
pub fn router(state: Arc<ApiState>) -> Router {
    let router = Router::new()
        .route(EVENTS, get(list).post(add).put(upsert).delete(remove))
        .route(EVENT_PREFIX, get(no_topic).put(no_topic).delete(no_topic))
        .route(
            &format!("{EVENT_PREFIX}{{*sourcetopic}}"),
            get(get_one).put(put_one).delete(delete_one),
        )
        .route(HEALTHZ, get(healthz))
        .route(SOURCE_TOPICS, get(source_topics))
        .route(METRICS, get(metrics));
    api_tap::routes(api_dead_letters::routes(router))
        .fallback(unknown_path)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

/// Requires `Authorization: Bearer <token>` on every request.
pub fn with_token(router: Router, token: String) -> Router {
    let token = Arc::new(token);
    router.layer(middleware::from_fn(move |req: Request, next: Next| {
        let token = token.clone();
        async move {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(bearer)
                .unwrap_or("");
            if constant_time_eq(given.as_bytes(), token.as_bytes()) {
                next.run(req).await
            } else {
                let mut resp = ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong bearer token; send Authorization: Bearer <token> (--token / APP_TOKEN)",
                )
                .into_response();
                resp.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
                resp
            }
        }
    }))
}

/// The credentials of `Bearer <token>`; the scheme is case-insensitive.
fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case("bearer ").then_some(rest)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn unknown_path(uri: Uri) -> ApiError {
    ApiError::not_found(format!(
        "unknown path {}; the API has {EVENTS}, {EVENT_PREFIX}<sourcetopic>, {HEALTHZ}, {METRICS}, {SOURCE_TOPICS}, {DEAD_LETTERS} and {TAP}",
        uri.path()
    ))
}

async fn wrong_method(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "method {} is not allowed on {}",
            req.method(),
            req.uri().path()
        ),
    )
}

async fn no_topic() -> ApiError {
    ApiError::not_found("give a sourcetopic after /events/, e.g. /events/timer/sec/1")
}

/// The body, or the JSON error of reading it (too large, too slow).
fn body_bytes(body: Body) -> Result<Bytes, ApiError> {
    body.map(|BodyBytes(bytes)| bytes)
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| ApiError::from_json(&e))
}

/// A JSON array of items, or one item alone.
fn parse_list<T: DeserializeOwned>(body: Body) -> Result<Vec<T>, ApiError> {
    let bytes = body_bytes(body)?;
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => parse(&bytes),
        Some(b'{') => Ok(vec![parse(&bytes)?]),
        Some(_) => {
            // Let serde say what is wrong and where, if it is not JSON at all.
            let _: serde_json::Value = parse(&bytes)?;
            Err(ApiError::bad_request(
                "invalid route: expected a JSON array of routes or one route object",
            ))
        }
        None => Err(ApiError::bad_request(
            "empty body: expected a JSON array of routes or one route object",
        )),
    }
}

/// The query of `PUT /events`: only `replace`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpsertQuery {
    replace: Option<String>,
}

type UpsertQueryArg = Result<Query<UpsertQuery>, axum::extract::rejection::QueryRejection>;

/// `?replace=true` (also `1` or empty) or `false` (`0`); anything else, or
/// another parameter, is a JSON 400.
fn replace_flag(query: UpsertQueryArg) -> Result<bool, ApiError> {
    let Query(q) = query.map_err(|e| {
        let detail = e.body_text();
        let detail = detail
            .strip_prefix("Failed to deserialize query string: ")
            .unwrap_or(&detail);
        ApiError::bad_request(format!(
            "unknown query parameter ({detail}); only replace=true is known"
        ))
    })?;
    match q.replace.as_deref() {
        None | Some("false" | "0") => Ok(false),
        Some("true" | "1" | "") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "replace={other:?}: expected true or false"
        ))),
    }
}

fn no_query(uri: &Uri) -> Result<(), ApiError> {
    match uri.query() {
        Some(q) if !q.is_empty() => Err(ApiError::bad_request(format!(
            "unexpected query {q:?}; this endpoint takes none"
        ))),
        _ => Ok(()),
    }
}

fn json<T: Serialize>(status: StatusCode, value: &T) -> Response {
    (status, Json(value)).into_response()
}

async fn list(State(st): St, uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    Ok(json(StatusCode::OK, &st.routes.list().await))
}

async fn add(State(st): St, uri: Uri, body: Body) -> Result<Response, ApiError> {
    no_query(&uri)?;
    let items: Vec<Route> = parse_list(body)?;
    let added = st.routes.add(items).await?;
    app_plugin::info!("added {} route(s)", added.len());
    Ok(json(StatusCode::CREATED, &added))
}

async fn upsert(State(st): St, query: UpsertQueryArg, body: Body) -> Result<Response, ApiError> {
    let replace = replace_flag(query)?;
    let items: Vec<Route> = parse_list(body)?;
    let all = st.routes.upsert(items, replace).await?;
    app_plugin::info!(
        "routes {} ({} in the table)",
        if replace { "replaced" } else { "updated" },
        all.len()
    );
    Ok(json(StatusCode::OK, &all))
}

async fn remove(State(st): St, uri: Uri, body: Body) -> Result<Response, ApiError> {
    no_query(&uri)?;
    // The routes to remove, named by source topic (a sink topic is ignored,
    // so that a listed route can be sent back as it is).
    let keys: Vec<Route> = parse_list(body)?;
    let keys: Vec<String> = keys.into_iter().map(|k| k.sourcetopic).collect();
    let removed = st.routes.remove(keys).await?;
    app_plugin::info!("removed {} route(s)", removed.len());
    Ok(json(StatusCode::OK, &removed))
}

type Topic = Result<Path<String>, axum::extract::rejection::PathRejection>;

/// The source topic of `/events/<sourcetopic…>`, or a JSON error (a path
/// that does not decode to UTF-8, such as `%ff%fe`).
fn topic_of(path: Topic) -> Result<String, ApiError> {
    path.map(|Path(t)| t).map_err(|e| {
        ApiError::bad_request(format!(
            "the source topic in the path is not usable: {}; percent-encode UTF-8",
            e.body_text()
        ))
    })
}

async fn get_one(State(st): St, topic: Topic) -> Result<Response, ApiError> {
    let topic = topic_of(topic)?;
    match st.routes.get(&topic).await {
        Some(r) => Ok(json(StatusCode::OK, &r)),
        None => Err(ApiError::not_found(format!(
            "no route for sourcetopic {topic:?}"
        ))),
    }
}

async fn put_one(State(st): St, topic: Topic, uri: Uri, body: Body) -> Result<Response, ApiError> {
    let topic = topic_of(topic)?;
    no_query(&uri)?;
    let bytes = body_bytes(body)?;
    // The path names the route; the body may repeat it or leave it out.
    let mut value: serde_json::Value = parse(&bytes)?;
    let obj = value
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("invalid route: expected one JSON route object"))?;
    match obj.get("sourcetopic") {
        None => {
            obj.insert(
                "sourcetopic".into(),
                serde_json::Value::String(topic.clone()),
            );
        }
        Some(serde_json::Value::String(s)) if *s == topic => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "sourcetopic {other} in the body differs from {topic:?} in the path"
            )))
        }
    }
    let spec: Route = serde_json::from_value(value)
        .map_err(|e| ApiError::bad_request(format!("invalid route: {e}")))?;
    let created = st.routes.put(spec.clone()).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json(status, &spec))
}

async fn delete_one(State(st): St, topic: Topic, uri: Uri) -> Result<Response, ApiError> {
    let topic = topic_of(topic)?;
    no_query(&uri)?;
    let mut removed = st.routes.remove(vec![topic]).await?;
    Ok(json(StatusCode::OK, &removed.pop()))
}

/// The source's own `GET /topics`, asked now: a manager checks new routes
/// against it, also from machines that cannot reach the source.
async fn source_topics(State(st): St, uri: Uri) -> Result<Response, ApiError> {
    no_query(&uri)?;
    let topics = st.source_config.topics().await.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!("cannot ask the source {} for its topics: {e}", st.source),
        )
    })?;
    Ok(json(StatusCode::OK, &topics))
}

async fn healthz(State(st): St) -> Response {
    use std::sync::atomic::Ordering::Relaxed;
    let m = &st.metrics;
    let source = SourceHealth {
        connected: m.source_connected.load(Relaxed),
        problem: metrics::problem(&m.source_problem),
        stalled: m.source_stalled.load(Relaxed),
        start: metrics::problem(&m.source_start),
        url: st.source.clone(),
    };
    let stalled = metrics::problem(&m.sink_stalled);
    let sink = SinkHealth {
        broker: m.broker(),
        connected: m.sink_connected.load(Relaxed),
        duplicate_conflicts: m.duplicate_conflicts.load(Relaxed),
        duplicates: m.duplicates.load(Relaxed),
        stalled: stalled.is_some(),
        problem: metrics::problem(&m.sink_problem).or(stalled),
        url: st.sink.clone(),
    };
    let ok = source.connected && !source.stalled && sink.connected && sink.problem.is_none();
    let b = st.buffer.stats();
    let health = Health {
        allowall: st.routes.allowall(),
        buffered: b.queued,
        checkpoint_lag: Some(st.buffer.checkpoint_lag() as u64),
        inflight: b.inflight,
        name: st.name.clone(),
        routes: st.routes.len().await,
        sink,
        source,
        started_unix: st.started.unix_secs(),
        status: if ok {
            HealthStatus::Ok
        } else {
            HealthStatus::Degraded
        },
        uptime_secs: st.started.mono.elapsed().as_secs(),
        version: crate::VERSION.to_string(),
    };
    json(StatusCode::OK, &health)
}

async fn metrics(State(st): St) -> Result<Response, ApiError> {
    let routes = st.routes.len().await;
    // Version and start time: what `manage status` shows besides the counters.
    let build = metrics::Build {
        version: crate::VERSION,
        started_unix: st.started.unix_secs(),
    };
    let text = st
        .metrics
        .snapshot(
            st.buffer.stats(),
            current(&st.routes.table()),
            routes,
            build,
        )
        .render()
        .map_err(|e| ApiError::internal(format!("encoding the metrics failed: {e}")))?;
    Ok(([(header::CONTENT_TYPE, metric::CONTENT_TYPE)], text).into_response())
}
