//! The request body of the API, read with a size and a time limit.
//!
//! hyper bounds the request head (`--request-timeout`) but not the body: a
//! client that sends its head and then part of a body, or nothing, would
//! hold its connection (one of `--max-connections`) for as long as it
//! likes. [`BodyBytes`] reads the whole body within the same timeout,
//! counted from when the handler starts reading, and refuses a body over
//! [`MAX_BODY`]:
//!
//! - a `Content-Length` over the limit is answered 413 before any of the
//!   body is read. hyper sends `100 Continue` only when the body is first
//!   read, so a client that sent `Expect: 100-continue` gets the 413
//!   instead, and never sends the body;
//! - a body (chunked, or a lying length) that grows past the limit: 413;
//! - a body that has not arrived in full within the timeout: 408, and the
//!   connection is closed.
//!
//! Only the handlers that take a body read one; hyper closes a connection
//! whose body a handler left unread, so a body sent to `GET /healthz`
//! holds nothing either.

use std::time::Duration;

use axum::extract::{FromRef, FromRequest, Request};
use axum::http::{header, StatusCode};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::api_error::ApiError;

/// The largest request body accepted.
pub const MAX_BODY: usize = 1 << 20;

/// The whole request body, at most [`MAX_BODY`] bytes, read within the
/// state's [`BodyTimeout`].
pub struct BodyBytes(pub Bytes);

/// How long a body may take to arrive (`--request-timeout`): the state a
/// handler runs with provides it (`FromRef`), so that this module needs
/// nothing else of the API's.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

impl<S: Send + Sync> FromRequest<S> for BodyBytes
where
    BodyTimeout: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, st: &S) -> Result<Self, ApiError> {
        read(req, BodyTimeout::from_ref(st).0).await.map(BodyBytes)
    }
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body is over the limit of {MAX_BODY} bytes"),
    )
}

/// The declared length, when there is one (hyper has already refused a
/// malformed or conflicting `Content-Length`).
fn content_length(req: &Request) -> Option<u64> {
    req.headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

async fn read(req: Request, timeout: Duration) -> Result<Bytes, ApiError> {
    if content_length(&req).is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    let body = Limited::new(req.into_body(), MAX_BODY);
    match tokio::time::timeout(timeout, body.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::bad_request(format!(
            "cannot read the request body: {e}"
        ))),
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive in full within {} (--request-timeout); send the whole body with the request",
                humantime::format_duration(timeout)
            ),
        )
        .closing()),
    }
}
