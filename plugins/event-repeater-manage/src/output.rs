//! Printing the server's answer: its JSON, pretty on a terminal and compact
//! otherwise, or routes as an aligned table (`-o table`).

use app_plugin::text::escape_for_terminal as shown;
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
/// the body is). A body that is not JSON (`/metrics`) is printed line by
/// line, each escaped for the terminal; a table is only made of routes
/// (escaped too), anything else stays JSON.
pub fn render(body: &str, format: Format, pretty: bool) -> String {
    if body.trim().is_empty() {
        return String::new();
    }
    let Ok(value) = serde_json::from_str::<Value>(body.trim()) else {
        return body.lines().map(|l| format!("{}\n", shown(l))).collect();
    };
    if format == Format::Table {
        if let Some(routes) = as_routes(&value) {
            return table(&routes);
        }
        if let Some(letters) = crate::letters::table(&value) {
            return letters;
        }
    }
    reformat(body.trim(), pretty)
}

/// What to print for the answers of several hosts (`(host, body)` in host
/// order): routes as one table with a HOST column, else one JSON object
/// keyed by host (a body that is not JSON becomes a string, an empty one
/// `null`).
pub fn render_hosts(answers: &[(String, String)], format: Format, pretty: bool) -> String {
    if format == Format::Table {
        let tables: Option<Vec<(&str, Vec<Route>)>> = answers
            .iter()
            .map(|(host, body)| {
                let value = serde_json::from_str::<Value>(body.trim()).ok()?;
                Some((host.as_str(), as_routes(&value)?))
            })
            .collect();
        if let Some(tables) = tables {
            return host_table(&tables);
        }
    }
    let mut json = String::from("{");
    for (i, (host, body)) in answers.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&Value::String(host.clone()).to_string());
        json.push(':');
        let body = body.trim();
        if body.is_empty() {
            json.push_str("null");
        } else if serde_json::from_str::<Value>(body).is_ok() {
            json.push_str(body);
        } else {
            json.push_str(&Value::String(body.to_string()).to_string());
        }
    }
    json.push('}');
    reformat(&json, pretty)
}

fn host_table(tables: &[(&str, Vec<Route>)]) -> String {
    let tables: Vec<(String, Vec<Route>)> = tables
        .iter()
        .map(|(h, routes)| (shown(h).into_owned(), routes.iter().map(escaped).collect()))
        .collect();
    const HOST: &str = "HOST";
    const SOURCE: &str = "SOURCE TOPIC";
    let hw = tables
        .iter()
        .map(|(h, _)| h.chars().count())
        .chain([HOST.len()])
        .max()
        .unwrap_or(HOST.len());
    let sw = tables
        .iter()
        .flat_map(|(_, routes)| routes.iter().map(|r| r.sourcetopic.chars().count()))
        .chain([SOURCE.len()])
        .max()
        .unwrap_or(SOURCE.len());
    let mut out = format!("{HOST:<hw$}  {SOURCE:<sw$}  SINK TOPIC\n");
    for (host, routes) in &tables {
        if routes.is_empty() {
            out.push_str(&format!("{host:<hw$}  (no routes)\n"));
        }
        for r in routes {
            out.push_str(&format!(
                "{host:<hw$}  {:<sw$}  {}\n",
                r.sourcetopic,
                r.sink_shown()
            ));
        }
    }
    out
}

/// Re-lays out JSON text that is known to be valid, keeping the server's key
/// order (a parsed `Value` would sort the keys): compact, or indented by two
/// spaces like `serde_json::to_string_pretty`. Ends with a newline. The
/// characters a terminal would act on are written as `\uXXXX` escapes, so
/// the output is the same JSON value and safe to show.
pub fn reformat(json: &str, pretty: bool) -> String {
    let mut out = String::with_capacity(json.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = json.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            // A JSON string may hold DEL, C1 and bidi characters raw: write
            // them as \uXXXX, the same JSON value, harmless on a terminal.
            if !escaped && app_plugin::text::is_dangerous(c) {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
                continue;
            }
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            c if c.is_whitespace() => {}
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                // Skip to the next token to see whether the container is empty.
                while chars.peek().is_some_and(|n| n.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    if let Some(close) = chars.next() {
                        out.push(close);
                    }
                } else {
                    depth += 1;
                    if pretty {
                        newline(&mut out, depth);
                    }
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if pretty {
                    newline(&mut out, depth);
                }
                out.push(c);
            }
            ',' => {
                out.push(c);
                if pretty {
                    newline(&mut out, depth);
                }
            }
            ':' => {
                out.push(c);
                if pretty {
                    out.push(' ');
                }
            }
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

fn as_routes(value: &Value) -> Option<Vec<Route>> {
    match value {
        Value::Array(_) => routes::from_server(value).ok(),
        Value::Object(_) => routes::from_server(&Value::Array(vec![value.clone()])).ok(),
        _ => None,
    }
}

/// A route as shown in a table: its topics escaped for the terminal.
fn escaped(r: &Route) -> Route {
    Route {
        sourcetopic: shown(&r.sourcetopic).into_owned(),
        sinktopic: shown(&r.sinktopic).into_owned(),
    }
}

/// Routes as an aligned two-column table under a header line; a topic's
/// control, bidi and invisible characters are shown escaped.
pub fn table(routes: &[Route]) -> String {
    let routes: Vec<Route> = routes.iter().map(escaped).collect();
    const SOURCE: &str = "SOURCE TOPIC";
    let width = routes
        .iter()
        .map(|r| r.sourcetopic.chars().count())
        .chain([SOURCE.len()])
        .max()
        .unwrap_or(SOURCE.len());
    let mut out = format!("{SOURCE:<width$}  SINK TOPIC\n");
    for r in &routes {
        out.push_str(&format!("{:<width$}  {}\n", r.sourcetopic, r.sink_shown()));
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
    fn reformat_keeps_key_order() {
        let body = r#"{ "sourcetopic": "b", "sinktopic": "a" }"#;
        assert_eq!(
            reformat(body, false),
            "{\"sourcetopic\":\"b\",\"sinktopic\":\"a\"}\n"
        );
        assert_eq!(
            reformat(body, true),
            "{\n  \"sourcetopic\": \"b\",\n  \"sinktopic\": \"a\"\n}\n"
        );
    }

    #[test]
    fn reformat_matches_serde_json_layout() {
        // Keys in sorted order, so serde_json's own output is the reference.
        let samples = [
            r#"[]"#,
            r#"{}"#,
            r#"[ {"a": [1, 2, {"b": {}}], "c": [ ], "d": "x, y: {z} [\"q\"] \\"}, null, true, -1.5 ]"#,
            r#"{"a":{"b":{"c":[[],[{}]]}}}"#,
            "\"just a string\"",
            "42",
        ];
        for text in samples {
            let value: Value = serde_json::from_str(text).unwrap();
            let want_pretty = format!("{}\n", serde_json::to_string_pretty(&value).unwrap());
            let want_compact = format!("{}\n", serde_json::to_string(&value).unwrap());
            assert_eq!(reformat(text, true), want_pretty, "{text}");
            assert_eq!(reformat(text, false), want_compact, "{text}");
        }
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
    fn several_hosts_are_keyed_or_get_a_host_column() {
        let answers = vec![
            ("e1".to_string(), ROUTES.to_string()),
            ("http://127.0.0.1:2".to_string(), "[]".to_string()),
        ];
        assert_eq!(
            render_hosts(&answers, Format::Table, false),
            "HOST                SOURCE TOPIC               SINK TOPIC\n\
             e1                  timer/sec/1                /time/1s\n\
             e1                  timer/msec/100/long/topic  .\n\
             http://127.0.0.1:2  (no routes)\n"
        );
        let json = render_hosts(&answers, Format::Json, false);
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["e1"][0]["sourcetopic"], "timer/sec/1");
        assert_eq!(v["http://127.0.0.1:2"], serde_json::json!([]));
        let odd = vec![
            ("a".to_string(), "".to_string()),
            ("b".to_string(), "x".to_string()),
        ];
        assert_eq!(
            render_hosts(&odd, Format::Json, false),
            "{\"a\":null,\"b\":\"x\"}\n"
        );
    }

    #[test]
    fn hostile_topics_are_escaped_in_tables_and_json_stays_the_same_value() {
        let body = "[{\"sourcetopic\":\"a\\u001b]0;pwned\\u0007\u{9b}2J\",\"sinktopic\":\"x\\r\\nforged  \u{202e}txt\"}]";
        let table = render(body, Format::Table, false);
        assert_eq!(table.lines().count(), 2, "{table:?}");
        for bad in ['\x1b', '\x07', '\u{9b}', '\r', '\u{202e}'] {
            assert!(!table.contains(bad), "{bad:?} in {table:?}");
        }
        assert!(table.contains("a\\x1b]0;pwned\\x07\\u{9b}2J"), "{table:?}");
        let json = render(body, Format::Json, true);
        assert!(
            !json.contains('\u{9b}') && !json.contains('\u{202e}'),
            "{json:?}"
        );
        let a: Value = serde_json::from_str(body).unwrap();
        let b: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn empty_and_non_json_bodies() {
        assert_eq!(render("", Format::Json, true), "");
        assert_eq!(render("plain text", Format::Json, true), "plain text\n");
    }
}
