//! The body of every error answer.

use serde::{Deserialize, Serialize};

/// `{"error":"<what was wrong>","status":<code>}`: the message says what was
/// wrong with the request; `status` repeats the HTTP status.
///
/// ```
/// use app_event_repeater_api::ErrorBody;
/// let body = ErrorBody { error: "no route for sourcetopic \"x\"".into(), status: 404 };
/// let text = serde_json::to_string(&body).unwrap();
/// assert_eq!(text, r#"{"error":"no route for sourcetopic \"x\"","status":404}"#);
/// assert_eq!(serde_json::from_str::<ErrorBody>(&text).unwrap(), body);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// What was wrong, in words.
    pub error: String,
    /// The HTTP status (0 when a server left it out).
    #[serde(default)]
    pub status: u16,
}
