//! The dead-letter endpoints (`/dead-letters`, `/dead-letters/replay`):
//! query parameters to a [`Filter`], a call of the dead letters or the
//! replayer, and their answers or errors as HTTP.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use app_event_repeater_api::dead_letter::{
    query, Letters, Purged, DEFAULT_LIMIT, DEFAULT_REPLAY_TIMEOUT, MAX_LIMIT, MAX_REPLAY_TIMEOUT,
};
use app_event_repeater_api::path::{DEAD_LETTERS, DEAD_LETTERS_REPLAY};
use axum::extract::{FromRef, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::api_error::ApiError;
use crate::dead_letter::{DeadLetters, Filter};
use crate::reason::Reason;
use crate::replay::{ReplayError, Replayer};

type Params = Result<Query<BTreeMap<String, String>>, axum::extract::rejection::QueryRejection>;

/// What the dead-letter endpoints need, when `--dead-letter` is on.
pub struct DeadLetterApi {
    pub letters: Arc<DeadLetters>,
    pub replayer: Replayer,
}

/// What the handlers take from the API's state (`None`: `--dead-letter
/// off`).
#[derive(Clone)]
pub struct Shared(pub Option<Arc<DeadLetterApi>>);

type St = State<Shared>;

/// Adds the endpoints to the API's router, whose state gives [`Shared`].
pub fn routes<S>(router: Router<S>) -> Router<S>
where
    Shared: FromRef<S>,
    S: Clone + Send + Sync + 'static,
{
    router
        .route(DEAD_LETTERS, get(list).delete(purge))
        .route(DEAD_LETTERS_REPLAY, post(replay))
}

fn api(st: &Shared) -> Result<&DeadLetterApi, ApiError> {
    st.0.as_deref().ok_or_else(|| {
        ApiError::conflict(
            "dead letters are off (--dead-letter off): run the repeater with --dead-letter FILE to keep them",
        )
    })
}

impl From<crate::dead_letter::Error> for ApiError {
    fn from(e: crate::dead_letter::Error) -> ApiError {
        ApiError::internal(e.to_string())
    }
}

/// The parameters of `GET` (`list`), `DELETE` (`purge`) and `POST
/// .../replay` (`replay`): unknown ones refused.
struct Asked {
    filter: Filter,
    limit: usize,
    timeout: Duration,
}

fn asked(params: Params, extra: &[&str]) -> Result<Asked, ApiError> {
    let Query(params) =
        params.map_err(|e| ApiError::bad_request(format!("bad query: {}", e.body_text())))?;
    let known = [query::REASON, query::TOPIC, query::SINCE, query::UNTIL];
    let mut asked = Asked {
        filter: Filter::default(),
        limit: DEFAULT_LIMIT,
        timeout: Duration::from_secs(DEFAULT_REPLAY_TIMEOUT),
    };
    for (k, v) in params {
        match k.as_str() {
            query::REASON => {
                if Reason::from_label(&v).is_none() {
                    let all: Vec<_> = Reason::ALL.iter().map(|r| r.label()).collect();
                    return Err(ApiError::bad_request(format!(
                        "reason={v:?}: expected one of {}",
                        all.join(", ")
                    )));
                }
                asked.filter.reason = Some(v);
            }
            query::TOPIC => asked.filter.topic = Some(v),
            query::SINCE => asked.filter.since = Some(micros(&k, &v)?),
            query::UNTIL => asked.filter.until = Some(micros(&k, &v)?),
            query::LIMIT if extra.contains(&query::LIMIT) => {
                asked.limit = bounded(&k, &v, 1, MAX_LIMIT as u64)? as usize;
            }
            query::TIMEOUT if extra.contains(&query::TIMEOUT) => {
                asked.timeout = Duration::from_secs(bounded(&k, &v, 1, MAX_REPLAY_TIMEOUT)?);
            }
            _ => {
                let mut names: Vec<&str> = known.to_vec();
                names.extend(extra);
                return Err(ApiError::bad_request(format!(
                    "unknown query parameter {k:?}; known: {}",
                    names.join(", ")
                )));
            }
        }
    }
    Ok(asked)
}

fn bounded(k: &str, v: &str, min: u64, max: u64) -> Result<u64, ApiError> {
    v.parse::<u64>()
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            ApiError::bad_request(format!("{k}={v:?}: expected a number from {min} to {max}"))
        })
}

/// RFC 3339 (`2026-12-03T08:00:00Z`) or seconds since the epoch.
fn micros(k: &str, v: &str) -> Result<u64, ApiError> {
    if let Ok(secs) = v.parse::<u64>() {
        return Ok(secs.saturating_mul(1_000_000));
    }
    humantime::parse_rfc3339_weak(v)
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "{k}={v:?}: expected a time (2026-12-03T08:00:00Z) or seconds since the epoch"
            ))
        })
}

pub async fn list(State(st): St, params: Params) -> Result<Response, ApiError> {
    let api = api(&st)?;
    let asked = asked(params, &[query::LIMIT])?;
    let mut listed = api.letters.list(asked.filter).await?;
    let matched = listed.letters.len() as u64;
    listed.letters.truncate(asked.limit);
    let body = Letters {
        letters: listed.letters,
        matched,
        total: listed.total,
        unreadable: listed.unreadable,
    };
    Ok((StatusCode::OK, Json(body)).into_response())
}

pub async fn purge(State(st): St, params: Params) -> Result<Response, ApiError> {
    let api = api(&st)?;
    let asked = asked(params, &[])?;
    let (removed, left) = api.letters.purge(asked.filter).await?;
    app_plugin::info!("purged {removed} dead letter(s); {left} left");
    Ok((StatusCode::OK, Json(Purged { removed, left })).into_response())
}

pub async fn replay(State(st): St, params: Params) -> Result<Response, ApiError> {
    let api = api(&st)?;
    let asked = asked(params, &[query::TIMEOUT])?;
    let replayed = api
        .replayer
        .replay(asked.filter, asked.timeout)
        .await
        .map_err(|e| match e {
            ReplayError::Busy => ApiError::conflict(e.to_string()),
            ReplayError::Letters(e) => e.into(),
        })?;
    app_plugin::info!(
        "replayed dead letters: {} matched, {} delivered, {} refused again, {} pending",
        replayed.matched,
        replayed.delivered,
        replayed.refused,
        replayed.pending
    );
    Ok((StatusCode::OK, Json(replayed)).into_response())
}
