//! A route: which source topics are relayed, and under which sink topic.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A route as the API, the repeater's state file and a manager's route file
/// spell it: `{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}`.
///
/// A `sourcetopic` ending in `/` covers every topic under it, `.` covers all;
/// otherwise it matches exactly. A `sinktopic` that is missing, `null`, `""`
/// or `"."` means the event's own topic; it may use `{topic}` and
/// `{suffix}`. Answers always carry `sinktopic` (`""` for a missing one).
///
/// Deserializing refuses a field it does not know (a typo must not be
/// taken as a route without it); read an answer with [`Route::from_answer`],
/// which ignores fields a newer repeater may add.
///
/// ```
/// use app_event_repeater_api::Route;
/// let r: Route = serde_json::from_str(r#"{"sourcetopic":"timer/"}"#).unwrap();
/// assert_eq!(r, Route::new("timer/", ""));
/// assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"sourcetopic":"timer/","sinktopic":""}"#);
/// assert!(serde_json::from_str::<Route>(r#"{"sourcetopic":"a","color":1}"#).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// The event topic it takes, or a prefix ending in `/`, or `.`.
    pub sourcetopic: String,
    /// Where it publishes; `""` or `"."` for the event's own topic.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub sinktopic: String,
}

/// The fields of [`Route`], for reading answers leniently.
const FIELDS: [&str; 2] = ["sourcetopic", "sinktopic"];

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

impl Route {
    /// A route from its two topics.
    pub fn new(sourcetopic: impl Into<String>, sinktopic: impl Into<String>) -> Route {
        Route {
            sourcetopic: sourcetopic.into(),
            sinktopic: sinktopic.into(),
        }
    }

    /// Whether the route publishes under the event's own topic.
    pub fn is_own_topic(&self) -> bool {
        self.sinktopic.is_empty() || self.sinktopic == "."
    }

    /// The sink topic as shown to a user: `.` for the event's own topic.
    ///
    /// ```
    /// use app_event_repeater_api::Route;
    /// assert_eq!(Route::new("a", "").sink_shown(), ".");
    /// assert_eq!(Route::new("a", "/x").sink_shown(), "/x");
    /// ```
    pub fn sink_shown(&self) -> &str {
        if self.is_own_topic() {
            "."
        } else {
            &self.sinktopic
        }
    }

    /// The routes of an answer: an array (`GET /events`, and the answers
    /// of changes) or one object (`GET /events/<sourcetopic>`). Fields this
    /// version does not know are ignored.
    ///
    /// ```
    /// use app_event_repeater_api::Route;
    /// let answer = serde_json::json!([{"sourcetopic":"a","sinktopic":"b","events":3}]);
    /// assert_eq!(Route::from_answer(answer).unwrap(), [Route::new("a", "b")]);
    /// assert!(Route::from_answer(serde_json::json!({"status":"ok"})).is_err());
    /// ```
    pub fn from_answer(answer: Value) -> Result<Vec<Route>, serde_json::Error> {
        let items = match answer {
            Value::Array(items) => items,
            one => vec![one],
        };
        items
            .into_iter()
            .map(|mut item| {
                if let Value::Object(fields) = &mut item {
                    fields.retain(|k, _| FIELDS.contains(&k.as_str()));
                }
                serde_json::from_value(item)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_name_every_serialized_field() {
        let value = serde_json::to_value(Route::new("a", "b")).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut fields = FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(keys, fields);
    }

    #[test]
    fn null_and_missing_sinktopic_are_empty() {
        let r: Route = serde_json::from_str(r#"{"sourcetopic":"a","sinktopic":null}"#).unwrap();
        assert_eq!(r.sinktopic, "");
        assert!(serde_json::from_str::<Route>(r#"{"sinktopic":"a"}"#).is_err());
        assert!(serde_json::from_str::<Route>(r#"{"sourcetopic":1}"#).is_err());
    }

    #[test]
    fn unknown_fields_are_refused_in_requests_and_ignored_in_answers() {
        let text = r#"{"sourcetopic":"a","color":"red"}"#;
        let err = serde_json::from_str::<Route>(text).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("unknown field `color`, expected `sourcetopic` or `sinktopic`"),
            "{err}"
        );
        let answer = serde_json::from_str(text).unwrap();
        assert_eq!(Route::from_answer(answer).unwrap(), [Route::new("a", "")]);
    }
}
