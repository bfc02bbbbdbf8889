//! How a tap's events are printed: one line each, every part from the
//! repeater escaped for the terminal, or one JSON object per line.

use app_event_repeater_api::tap::TapEvent;
use app_plugin::text::escape_for_terminal as shown;

use crate::output::{reformat, Format};

/// The line for `event` (with its newline); `host` prefixes it when the tap
/// is on several repeaters.
pub fn event(event: &TapEvent, format: Format, host: Option<&str>) -> String {
    if format == Format::Json {
        let mut value = serde_json::to_value(event).unwrap_or_default();
        if let (Some(host), Some(obj)) = (host, value.as_object_mut()) {
            obj.insert("host".into(), host.into());
        }
        return reformat(&value.to_string(), false);
    }
    let mut line = prefix(host);
    line.push_str(&shown(&event.time));
    line.push(' ');
    line.push_str(event.outcome.as_str());
    if let Some(reason) = &event.reason {
        line.push(' ');
        line.push_str(&shown(reason));
    }
    let topics = match (&event.source_topic, &event.sink_topic) {
        (Some(s), Some(t)) => Some(format!("{} -> {}", shown(s), shown(t))),
        (Some(s), None) => Some(shown(s).into_owned()),
        (None, Some(t)) => Some(format!("-> {}", shown(t))),
        (None, None) => None,
    };
    for part in [
        topics,
        event.id.as_ref().map(|id| format!("id={}", shown(id))),
    ]
    .into_iter()
    .flatten()
    {
        line.push(' ');
        line.push_str(&part);
    }
    line.push(' ');
    line.push_str(&shown(&event.data));
    if let Some(why) = &event.why {
        line.push_str(&format!(" ({})", shown(why)));
    }
    line.push('\n');
    line
}

/// The line saying the tap skipped `n` events.
pub fn skipped(n: u64, format: Format, host: Option<&str>) -> String {
    if format == Format::Json {
        let mut value = serde_json::json!({ "skipped": n });
        if let Some(host) = host {
            value["host"] = host.into();
        }
        return reformat(&value.to_string(), false);
    }
    format!(
        "{}skipped {n} events: this tap fell behind (delivery is not affected)\n",
        prefix(host)
    )
}

fn prefix(host: Option<&str>) -> String {
    host.map(|h| format!("{}  ", shown(h))).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use app_event_repeater_api::tap::Outcome;

    fn sample() -> TapEvent {
        TapEvent {
            time: "2026-12-03T08:00:00.123Z".into(),
            outcome: Outcome::Refused,
            reason: Some("too_large".into()),
            why: Some("over 10 bytes".into()),
            source_topic: Some("a/\u{1b}[2J".into()),
            sink_topic: Some("x/a".into()),
            id: Some("7".into()),
            data: "{\"v\":\"\u{9b}\"}\nnext".into(),
        }
    }

    #[test]
    fn a_line_is_one_escaped_line() {
        let line = event(&sample(), Format::Table, None);
        assert_eq!(
            line,
            "2026-12-03T08:00:00.123Z refused too_large a/\\x1b[2J -> x/a id=7 {\"v\":\"\\u{9b}\"}\\nnext (over 10 bytes)\n"
        );
        let line = event(&sample(), Format::Json, Some("edge1"));
        assert_eq!(line.lines().count(), 1);
        assert!(
            !line.contains('\u{9b}') && !line.contains('\u{1b}'),
            "{line}"
        );
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back["host"], "edge1");
        assert_eq!(back["data"], sample().data);
        assert_eq!(skipped(3, Format::Json, None), "{\"skipped\":3}\n");
    }
}
