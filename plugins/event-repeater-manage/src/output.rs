//! Printing the server's answer: its JSON, pretty on a terminal and compact
//! otherwise, or routes as an aligned table (`-o table`).

use serde_json::Value;

use crate::routes::{self, Route};

/// `-o json` or `-o table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// The server's JSON.
    #[default]
    Json,
    /// Routes as a table with SOURCE TOPIC and SINK TOPIC columns.
    Table,
}

/// What to print for a reply body (with a trailing newline, or empty when
/// the body is). A body that is not JSON is printed as it came; a table is
/// only made of routes, anything else stays JSON.
pub fn render(body: &str, format: Format, pretty: bool) -> String {
    if body.trim().is_empty() {
        return String::new();
    }
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        let mut text = body.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        return text;
    };
    if format == Format::Table {
        if let Some(routes) = as_routes(&value) {
            return table(&routes);
        }
    }
    json(&value, pretty)
}

/// `value` as JSON text and a newline.
pub fn json(value: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    };
    // Serialising a parsed Value cannot fail (all keys are strings).
    let mut text = text.unwrap_or_default();
    text.push('\n');
    text
}

fn as_routes(value: &Value) -> Option<Vec<Route>> {
    match value {
        Value::Array(_) => routes::from_server(value).ok(),
        Value::Object(_) => routes::from_server(&Value::Array(vec![value.clone()])).ok(),
        _ => None,
    }
}

/// Routes as an aligned two-column table under a header line.
pub fn table(routes: &[Route]) -> String {
    const SOURCE: &str = "SOURCE TOPIC";
    let width = routes
        .iter()
        .map(|r| r.sourcetopic.chars().count())
        .chain([SOURCE.len()])
        .max()
        .unwrap_or(SOURCE.len());
    let mut out = format!("{SOURCE:<width$}  SINK TOPIC\n");
    for r in routes {
        out.push_str(&format!("{:<width$}  {}\n", r.sourcetopic, r.sink()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"},{"sourcetopic":"timer/msec/100/long/topic","sinktopic":""}]"#;

    #[test]
    fn table_is_aligned() {
        assert_eq!(
            render(ROUTES, Format::Table, true),
            "SOURCE TOPIC               SINK TOPIC\n\
             timer/sec/1                /time/1s\n\
             timer/msec/100/long/topic  .\n"
        );
    }

    #[test]
    fn short_topics_align_under_the_header() {
        let t = table(&[Route::new("a", "b")]);
        assert_eq!(t, "SOURCE TOPIC  SINK TOPIC\na             b\n");
        assert_eq!(table(&[]), "SOURCE TOPIC  SINK TOPIC\n");
    }

    #[test]
    fn a_single_route_is_a_table_too() {
        let out = render(
            r#"{"sourcetopic":"x","sinktopic":"y"}"#,
            Format::Table,
            false,
        );
        assert_eq!(out, "SOURCE TOPIC  SINK TOPIC\nx             y\n");
    }

    #[test]
    fn json_is_compact_or_pretty() {
        let body = "[ {\"sourcetopic\" : \"a\"} ]";
        assert_eq!(
            render(body, Format::Json, false),
            "[{\"sourcetopic\":\"a\"}]\n"
        );
        assert_eq!(
            render(body, Format::Json, true),
            "[\n  {\n    \"sourcetopic\": \"a\"\n  }\n]\n"
        );
    }

    #[test]
    fn non_routes_stay_json_in_table_mode() {
        assert_eq!(
            render(r#"{"ok":true}"#, Format::Table, false),
            "{\"ok\":true}\n"
        );
    }

    #[test]
    fn empty_and_non_json_bodies() {
        assert_eq!(render("", Format::Json, true), "");
        assert_eq!(render("plain text", Format::Json, true), "plain text\n");
    }
}
