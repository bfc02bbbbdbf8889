//! Route files for `apply`, and the routes a repeater answers with, both
//! read as the API's [`Route`]:
//! `{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}`, where an empty or
//! missing `sinktopic`, or `"."`, means the event's own topic.

use std::collections::BTreeSet;

pub use app_event_repeater_api::Route;
use serde_json::Value;

use crate::error::Error;
use crate::value::check_json;

/// Reads the routes a server returned (`GET /events`): a JSON array of
/// routes. Extra fields a newer server may add are ignored.
pub fn from_server(value: &Value) -> Result<Vec<Route>, String> {
    if !value.is_array() {
        return Err(format!(
            "expected a JSON array of routes, got {}",
            kind(value)
        ));
    }
    Route::from_answer(value.clone()).map_err(|e| format!("a route that is not one: {e}"))
}

/// Reads a routes file for `apply`: a JSON array of
/// `{"sourcetopic": …, "sinktopic"?: …}` with no unknown fields, no empty
/// and no repeated `sourcetopic`.
pub fn from_file_text(text: &str, origin: &str) -> Result<Vec<Route>, Error> {
    let value = check_json(text, origin)?;
    let invalid = |message: String| Error::Invalid {
        origin: origin.to_string(),
        message,
    };
    let Value::Array(items) = value else {
        return Err(invalid(format!(
            "expected a JSON array of routes like [{{\"sourcetopic\":\"timer/sec/1\",\"sinktopic\":\"/time/1s\"}}], got {}",
            kind(&value)
        )));
    };
    checked(items, origin)
}

/// Checks the body of `post` or `put` on the routes (`/events`) as `apply`
/// checks a file, so that a mistake is exit 2 here with nothing sent:
/// an array of routes or, as the API also takes, one route object.
pub fn check_body(text: &str, origin: &str) -> Result<(), Error> {
    let items = match check_json(text, origin)? {
        Value::Array(items) => items,
        one @ Value::Object(_) => vec![one],
        other => {
            return Err(Error::Invalid {
                origin: origin.to_string(),
                message: format!(
                    "expected a JSON array of routes, or one route object like {{\"sourcetopic\":\"timer/sec/1\",\"sinktopic\":\"/time/1s\"}}, got {}",
                    kind(&other)
                ),
            })
        }
    };
    checked(items, origin).map(|_| ())
}

/// Each item a route object with no unknown field, a `sourcetopic` that is
/// not empty and not repeated; counted from 1 in messages.
fn checked(items: Vec<Value>, origin: &str) -> Result<Vec<Route>, Error> {
    let invalid = |message: String| Error::Invalid {
        origin: origin.to_string(),
        message,
    };
    let mut seen = BTreeSet::new();
    let mut routes = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let n = i + 1;
        if !item.is_object() {
            return Err(invalid(format!(
                "route {n} is {}, expected an object with a sourcetopic",
                kind(&item)
            )));
        }
        let route: Route =
            serde_json::from_value(item).map_err(|e| invalid(format!("route {n}: {e}")))?;
        if route.sourcetopic.trim().is_empty() {
            return Err(invalid(format!("route {n} has an empty sourcetopic")));
        }
        if !seen.insert(route.sourcetopic.clone()) {
            return Err(invalid(format!(
                "route {n} repeats the sourcetopic '{}'",
                route.sourcetopic
            )));
        }
        routes.push(route);
    }
    Ok(routes)
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_topic_forms_display_as_dot() {
        let none: Route = serde_json::from_str(r#"{"sourcetopic":"a"}"#).unwrap();
        assert_eq!(none.sink_shown(), ".");
        assert_eq!(Route::new("a", "").sink_shown(), ".");
        assert_eq!(Route::new("a", ".").sink_shown(), ".");
        assert_eq!(Route::new("a", "/x").sink_shown(), "/x");
    }

    #[test]
    fn file_routes_parse() {
        let routes = from_file_text(
            r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"},{"sourcetopic":"timer/"}]"#,
            "routes.json",
        )
        .unwrap();
        assert_eq!(routes[0], Route::new("timer/sec/1", "/time/1s"));
        assert!(routes[1].is_own_topic());
    }

    #[test]
    fn file_must_be_an_array_of_route_objects() {
        let cases = [
            (r#"{"sourcetopic":"a"}"#, "expected a JSON array of routes"),
            ("[1]", "route 1 is a number"),
            (
                r#"[{"sourcetopic":"a","sink":"b"}]"#,
                "route 1: unknown field `sink`",
            ),
            (
                r#"[{"sinktopic":"b"}]"#,
                "route 1: missing field `sourcetopic`",
            ),
            (
                r#"[{"sourcetopic":""}]"#,
                "route 1 has an empty sourcetopic",
            ),
            (
                r#"[{"sourcetopic":"a"},{"sourcetopic":"a","sinktopic":"x"}]"#,
                "route 2 repeats the sourcetopic 'a'",
            ),
            (r#"[{"sourcetopic":5}]"#, "route 1: invalid type"),
        ];
        for (text, want) in cases {
            let err = from_file_text(text, "f.json").unwrap_err();
            assert_eq!(err.exit_code(), 2);
            let msg = err.to_string();
            assert!(msg.starts_with("f.json: "), "{msg}");
            assert!(msg.contains(want), "{text}: {msg}");
        }
    }

    #[test]
    fn a_request_body_is_checked_as_a_file_is_and_may_be_one_object() {
        assert!(check_body(r#"{"sourcetopic":"a","sinktopic":"b"}"#, "--value").is_ok());
        assert!(check_body(r#"[{"sourcetopic":"a"},{"sourcetopic":"b"}]"#, "--value").is_ok());
        for (text, want) in [
            (
                r#"{"sourcetopic":"a","sink":"b"}"#,
                "route 1: unknown field `sink`",
            ),
            (
                r#"[{"sourcetopic":"a"},{"sourcetopic":""}]"#,
                "route 2 has an empty sourcetopic",
            ),
            ("5", "or one route object"),
        ] {
            let err = check_body(text, "--value").unwrap_err();
            assert_eq!(err.exit_code(), 2);
            let msg = err.to_string();
            assert!(
                msg.contains(want) && msg.ends_with("nothing was sent"),
                "{text}: {msg}"
            );
        }
    }

    #[test]
    fn file_syntax_error_has_position() {
        let err = from_file_text("[\n{\"sourcetopic\" \"a\"}]", "f.json").unwrap_err();
        assert!(
            matches!(
                err,
                Error::Json {
                    line: 2,
                    column: 16,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn server_routes_tolerate_extra_fields() {
        let v: Value = serde_json::from_str(
            r#"[{"sourcetopic":"a","sinktopic":"b","events":3},{"sourcetopic":"c"}]"#,
        )
        .unwrap();
        let routes = from_server(&v).unwrap();
        assert_eq!(routes[0], Route::new("a", "b"));
        assert_eq!(routes[1].sink_shown(), ".");
        assert!(from_server(&serde_json::json!({"a":1})).is_err());
        assert!(from_server(&serde_json::json!([{"sinktopic":"x"}])).is_err());
    }
}
