//! The one error type of the REST API: an HTTP status and a message saying
//! what was wrong, sent as an [`ErrorBody`]: `{"error":"…","status":N}`.

use app_event_repeater_api::ErrorBody;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Answer with `Connection: close` (the request was not read in full).
    pub close: bool,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            close: false,
        }
    }

    /// The same error, closing the connection after the answer.
    pub fn closing(self) -> ApiError {
        ApiError {
            close: true,
            ..self
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, message)
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// A request body that did not parse, with the position serde found.
    pub fn from_json(e: &serde_json::Error) -> ApiError {
        use serde_json::error::Category;
        let what = match e.classify() {
            Category::Syntax => "malformed JSON",
            Category::Eof => "malformed JSON (the body ends too early)",
            Category::Data => "invalid route",
            Category::Io => "unreadable body",
        };
        // serde_json's message already ends with "at line L column C".
        ApiError::bad_request(format!("{what}: {e}"))
    }
}

/// A refused route change, as the API answers it.
impl From<crate::routes::RouteError> for ApiError {
    fn from(e: crate::routes::RouteError) -> ApiError {
        use crate::routes::RouteError as E;
        let status = match &e {
            E::Invalid { .. } | E::Repeated { .. } => StatusCode::BAD_REQUEST,
            E::Exists(_) => StatusCode::CONFLICT,
            E::Missing(_) => StatusCode::NOT_FOUND,
            E::TooMany { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            E::Save { .. } | E::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status.as_u16())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.message,
            status: self.status.as_u16(),
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.close {
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_errors_map_to_their_statuses() {
        use crate::routes::RouteError as E;
        let status = |e: E| ApiError::from(e).status.as_u16();
        assert_eq!(status(E::Exists("\"a\"".into())), 409);
        assert_eq!(status(E::Missing("\"a\"".into())), 404);
        assert_eq!(
            status(E::TooMany {
                wanted: 2,
                limit: 1
            }),
            422
        );
        let invalid = ApiError::from(E::Invalid {
            index: 3,
            message: "bad".into(),
        });
        assert_eq!(
            (invalid.status.as_u16(), invalid.message.as_str()),
            (400, "route 3: bad")
        );
    }

    #[test]
    fn json_errors_carry_the_position() {
        let e = serde_json::from_str::<serde_json::Value>("[\n {\"a\" 1}]").unwrap_err();
        let api = ApiError::from_json(&e);
        assert_eq!(api.status, StatusCode::BAD_REQUEST);
        assert!(api.message.starts_with("malformed JSON"), "{}", api.message);
        assert!(api.message.contains("line 2 column"), "{}", api.message);
    }
}
