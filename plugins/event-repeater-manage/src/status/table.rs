//! One row per repeater, from two samples `--interval` apart (the rates
//! are over that interval), and the rows as an aligned table.

use std::time::Duration;

use app_event_repeater_api::metric::{self, Metric};
use app_event_repeater_api::{Health, HealthStatus};
use serde::Serialize;

use super::sample::Sample;

/// One line of the table (and one object of `-o json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    /// The host as given (name or address).
    pub host: String,
    /// The repeater's `--name`.
    pub name: Option<String>,
    /// `up`, `degraded` (source or sink not connected) or `down`.
    pub state: String,
    /// Why it is down.
    pub error: Option<String>,
    /// The repeater's version.
    pub version: Option<String>,
    /// Routes in its table.
    pub routes: Option<u64>,
    /// The source's address and whether it is connected.
    pub source: Option<String>,
    /// Whether the source stream is open.
    pub source_connected: Option<bool>,
    /// Whether the source went silent past the repeater's
    /// `--source-idle-timeout` (and has not answered again).
    pub source_stalled: Option<bool>,
    /// The sink (the broker's URL, or stderr).
    pub sink: Option<String>,
    /// Whether the sink is connected.
    pub sink_connected: Option<bool>,
    /// Whether events wait and the sink has acknowledged none for 10 s.
    pub sink_stalled: Option<bool>,
    /// Why the sink cannot store events (or is stalled), as the repeater
    /// says it.
    pub sink_problem: Option<String>,
    /// Events read from the source per second over the interval.
    pub received_per_sec: Option<f64>,
    /// Events the sink acknowledged per second over the interval.
    pub acked_per_sec: Option<f64>,
    /// Events waiting in the buffer or in flight.
    pub buffered: Option<u64>,
    /// Events dropped since the start (overflow, shutdown).
    pub dropped: Option<u64>,
    /// Seconds since it started.
    pub uptime_secs: Option<u64>,
}

/// A row from the sample before (if any) and the sample now, `elapsed` apart.
pub fn row(host: &str, before: Option<&Sample>, now: &Sample, elapsed: Duration) -> Row {
    let h = now.health.as_ref();
    // A text an older repeater did not send reads as "" (shown as "-").
    let text = |f: fn(&Health) -> &String| h.map(f).filter(|t| !t.is_empty()).cloned();
    let rate = |m: &Metric| per_sec(before.and_then(|b| b.metric(m)), now.metric(m), elapsed);
    let state = match (&now.error, h.map(|h| h.status)) {
        (Some(_), _) => "down",
        (None, Some(HealthStatus::Ok)) => "up",
        (None, _) => "degraded",
    };
    let buffered = now
        .metric(&metric::EVENTS_BUFFERED)
        .zip(now.metric(&metric::EVENTS_INFLIGHT))
        .map(|(b, i)| (b + i) as u64);
    Row {
        host: host.to_string(),
        name: text(|h| &h.name),
        state: state.to_string(),
        error: now.error.clone(),
        version: text(|h| &h.version),
        routes: h.map(|h| h.routes as u64),
        source: text(|h| &h.source.url),
        source_connected: h.map(|h| h.source.connected),
        source_stalled: h.map(|h| h.source.stalled),
        sink: text(|h| &h.sink.url),
        sink_connected: h.map(|h| h.sink.connected),
        sink_stalled: h.map(|h| h.sink.stalled),
        sink_problem: h.and_then(|h| h.sink.problem.clone()),
        received_per_sec: rate(&metric::EVENTS_RECEIVED),
        acked_per_sec: rate(&metric::EVENTS_ACKED),
        buffered,
        dropped: now.family(&metric::EVENTS_DROPPED).map(|d| d as u64),
        uptime_secs: h.map(|h| h.uptime_secs),
    }
}

/// How fast a counter grew from `before` to `now`, `elapsed` apart; `None`
/// without both values, or when it went down (a restart between the samples
/// resets the counters).
pub fn per_sec(before: Option<f64>, now: Option<f64>, elapsed: Duration) -> Option<f64> {
    let (before, now) = (before?, now?);
    let secs = elapsed.as_secs_f64();
    (secs > 0.0 && now >= before).then(|| (now - before) / secs)
}

/// `3d4h`, `2h05m`, `4m07s`, `12s`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d{h}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// A rate as a cell: `-` when unknown, one decimal under 100.
pub fn rate(r: Option<f64>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r >= 100.0 || r == 0.0 => format!("{r:.0}"),
        Some(r) => format!("{r:.1}"),
    }
}

fn link(url: &Option<String>, connected: Option<bool>) -> String {
    match (url, connected) {
        (Some(u), Some(true)) => format!("ok {u}"),
        (Some(u), Some(false)) => format!("DOWN {u}"),
        _ => "-".into(),
    }
}

/// The columns of the table.
const HEADER: [&str; 12] = [
    "HOST", "NAME", "STATE", "VERSION", "ROUTES", "SOURCE", "SINK", "IN/S", "ACKED/S", "BUFFERED",
    "DROPPED", "UPTIME",
];

/// The rows as an aligned table, one line each.
pub fn table(rows: &[Row]) -> String {
    // Every cell may come from the repeater (its name, version, source and
    // sink URLs, an error body): shortened and escaped for the terminal.
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| cells(r).iter().map(|c| shown(c)).collect())
        .collect();
    aligned(&HEADER, &cells)
}

/// A text from a repeater, made safe to show: shortened and escaped.
pub fn shown(text: &str) -> String {
    app_plugin::text::shorten_for_terminal(text)
}

/// `header` and `rows` (cells already [`shown`]) as an aligned table. A
/// row shorter than the header ends in free text (a down host's reason)
/// that does not widen its column.
pub fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let header_cells: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let widths = widths(header, rows);
    let mut out = line(&header_cells, &widths);
    for row in rows {
        out.push_str(&line(row, &widths));
    }
    out
}

/// One row's cells; a down host has its reason after its state.
fn cells(r: &Row) -> Vec<String> {
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    if r.state == "down" {
        let mut cells = vec![r.host.clone(), r.name.clone().unwrap_or("-".into())];
        cells.push("down".into());
        cells.push(r.error.clone().unwrap_or_default());
        return cells;
    }
    vec![
        r.host.clone(),
        r.name.clone().unwrap_or("-".into()),
        r.state.clone(),
        r.version.clone().unwrap_or("-".into()),
        opt(r.routes),
        if r.source_stalled == Some(true) {
            r.source
                .as_ref()
                .map_or("-".into(), |u| format!("STALLED {u}"))
        } else {
            link(&r.source, r.source_connected)
        },
        if r.sink_stalled == Some(true) {
            r.sink
                .as_ref()
                .map_or("-".into(), |u| format!("STALLED {u}"))
        } else {
            link(&r.sink, r.sink_connected)
        },
        rate(r.received_per_sec),
        rate(r.acked_per_sec),
        opt(r.buffered),
        opt(r.dropped),
        r.uptime_secs.map_or("-".to_string(), duration),
    ]
}

/// Each column's width: its widest cell or its header.
pub fn widths(header: &[&str], cells: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in cells {
        // A down host's reason is free text at the end: it does not widen columns.
        let n = if row.len() < header.len() {
            row.len() - 1
        } else {
            row.len()
        };
        for (i, c) in row.iter().take(n).enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    widths
}

/// One line: each cell padded to its column, the last as it is.
fn line(cells: &[String], widths: &[usize]) -> String {
    let mut out = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i + 1 == cells.len() {
            out.push_str(c);
        } else {
            out.push_str(&format!("{c:<w$}  ", w = widths[i]));
        }
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::sample::parse_metrics;

    fn sample(health: serde_json::Value, metrics: &str) -> Sample {
        Sample {
            error: None,
            health: Some(serde_json::from_value(health).expect("a health answer")),
            metrics: parse_metrics(metrics),
            timed_out: None,
        }
    }

    #[test]
    fn rates_are_over_the_interval() {
        let health = serde_json::json!({
            "status": "ok", "name": "r1", "version": "0.3.0", "routes": 2, "uptime_secs": 3725,
            "source": {"url": "event-time", "connected": true},
            "sink": {"url": "tcp://127.0.0.1:1883", "connected": true}
        });
        let a = sample(health.clone(), "app_event_repeater_events_received_total 100\napp_event_repeater_events_acked_total 90\n");
        let b = sample(
            health,
            "# HELP x\napp_event_repeater_events_received_total 300\napp_event_repeater_events_acked_total 290\n\
             app_event_repeater_events_buffered 3\napp_event_repeater_events_inflight 7\n\
             app_event_repeater_events_dropped_total{reason=\"overflow\"} 4\napp_event_repeater_events_dropped_total{reason=\"shutdown\"} 1\n",
        );
        let r = row("e1", Some(&a), &b, Duration::from_secs(2));
        assert_eq!(r.received_per_sec, Some(100.0));
        assert_eq!(r.acked_per_sec, Some(100.0));
        assert_eq!(r.buffered, Some(10));
        assert_eq!(r.dropped, Some(5));
        assert_eq!(r.state, "up");
        let t = table(&[r]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].starts_with("HOST  NAME  STATE  VERSION  ROUTES  SOURCE"),
            "{t}"
        );
        assert!(lines[1].contains("ok tcp://127.0.0.1:1883"), "{t}");
        assert!(lines[1].ends_with("1h02m"), "{t}");
    }

    #[test]
    fn a_stalled_source_is_shown_as_such() {
        let health = serde_json::json!({
            "status": "degraded", "name": "r1",
            "source": {"url": "event-time", "connected": false, "stalled": true},
            "sink": {"url": "stderr", "connected": true}
        });
        let r = row("e1", None, &sample(health, ""), Duration::from_secs(1));
        assert_eq!(
            (r.state.as_str(), r.source_stalled),
            ("degraded", Some(true))
        );
        assert!(table(&[r]).contains("STALLED event-time"));
    }

    #[test]
    fn a_down_host_says_why() {
        let down = Sample {
            error: Some("connection refused".into()),
            ..Sample::default()
        };
        let r = row("e2", None, &down, Duration::from_secs(1));
        assert_eq!(r.state, "down");
        assert!(table(&[r])
            .lines()
            .nth(1)
            .unwrap()
            .ends_with("down   connection refused"));
    }

    #[test]
    fn durations() {
        assert_eq!(duration(5), "5s");
        assert_eq!(duration(65), "1m05s");
        assert_eq!(duration(7260), "2h01m");
        assert_eq!(duration(90000), "1d1h");
    }
}
