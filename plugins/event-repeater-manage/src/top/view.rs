//! What `top` shows of one host, from two samples: its `status` row
//! ([`table::row`]) plus the rate of each route, the buffer's fill and the
//! refused, dropped and dead-lettered events by reason; the hosts sorted;
//! and the cells of the three tables (hosts, routes, reasons), made safe to
//! show, for the screen and the plain table alike.

use std::time::Duration;

use app_event_repeater_api::metric::{self, label, Metric};
use serde::Serialize;

use crate::status::sample::{Labels, Sample};
use crate::status::table::{self, per_sec, rate, shown, Row};

/// One host as `top` shows it (and one object of `top -o json`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Host {
    /// What `status` shows of it.
    #[serde(flatten)]
    pub status: Row,
    /// The `--buffer` limit (buffered and in-flight events count against it).
    pub buffer_capacity: Option<u64>,
    /// Accepted events refused (`events_failed_total`), since the start.
    pub refused: Option<u64>,
    /// Events kept in the dead-letter file, since the start; `None` from a
    /// repeater older than dead letters.
    pub dead_lettered: Option<u64>,
    /// Events after the checkpoint (`/healthz` `checkpoint_lag`).
    pub checkpoint_lag: Option<u64>,
    /// The source's problem, in its words.
    pub source_problem: Option<String>,
    /// The `--timeout` it did not answer within.
    pub timed_out_secs: Option<f64>,
    /// Each route's events, busiest first.
    pub route_rates: Vec<RouteRate>,
    /// Refused, dropped and dead-lettered events, by reason (only those
    /// with any).
    pub reasons: Vec<Reason>,
}

/// One route's events.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RouteRate {
    /// Its source topic (empty for `--allowall`).
    pub sourcetopic: String,
    /// Its sink topic (empty: the event's own topic).
    pub sinktopic: String,
    /// The `--allowall` series (events no route took).
    pub allowall: bool,
    /// Events it took since the start.
    pub events: u64,
    /// Events per second over the interval.
    pub per_sec: Option<f64>,
}

/// Events lost (or set aside) for one reason.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Reason {
    /// `refused`, `dropped` or `dead-lettered`.
    pub kind: &'static str,
    /// The `reason` label.
    pub reason: String,
    /// Since the start.
    pub events: u64,
    /// Per second over the interval.
    pub per_sec: Option<f64>,
}

/// The host `label` from the sample before (if any) and the one now,
/// `elapsed` apart.
pub fn host(label: &str, before: Option<&Sample>, now: &Sample, elapsed: Duration) -> Host {
    let series = |name: &str| {
        let then = before.map(|b| b.series(name)).unwrap_or_default();
        now.series(name)
            .into_iter()
            .map(move |(labels, value)| {
                let was = then.iter().find(|(l, _)| *l == labels).map(|(_, v)| *v);
                (labels, value, per_sec(was, Some(value), elapsed))
            })
            .collect::<Vec<_>>()
    };
    let total = |name: &str| {
        let all = now.series(name);
        (!all.is_empty()).then(|| all.iter().map(|(_, v)| *v as u64).sum())
    };
    let mut reasons = Vec::new();
    for (kind, name) in [
        ("refused", metric::EVENTS_FAILED.sample()),
        ("dropped", metric::EVENTS_DROPPED.sample()),
        ("dead-lettered", metric::DEAD_LETTERS.sample()),
    ] {
        for (labels, value, per_sec) in series(&name) {
            if value > 0.0 {
                reasons.push(Reason {
                    kind,
                    reason: get(&labels, label::REASON).unwrap_or("-").to_string(),
                    events: value as u64,
                    per_sec,
                });
            }
        }
    }
    let mut route_rates: Vec<RouteRate> = series(&metric::ROUTE_EVENTS.sample())
        .into_iter()
        .map(|(labels, value, per_sec)| RouteRate {
            sourcetopic: get(&labels, label::SOURCETOPIC).unwrap_or("").to_string(),
            sinktopic: get(&labels, label::SINKTOPIC).unwrap_or("").to_string(),
            allowall: get(&labels, label::ALLOWALL) == Some("true"),
            events: value as u64,
            per_sec,
        })
        .collect();
    route_rates.sort_by(|a, b| descending(a.per_sec, b.per_sec));
    Host {
        status: table::row(label, before, now, elapsed),
        buffer_capacity: gauge(now, &metric::BUFFER_CAPACITY_EVENTS),
        refused: total(&metric::EVENTS_FAILED.sample()),
        dead_lettered: total(&metric::DEAD_LETTERS.sample()),
        checkpoint_lag: now.health.as_ref().and_then(|h| h.checkpoint_lag),
        source_problem: now.health.as_ref().and_then(|h| h.source.problem.clone()),
        timed_out_secs: now.timed_out,
        route_rates,
        reasons,
    }
}

fn gauge(s: &Sample, m: &Metric) -> Option<u64> {
    s.metric(m).map(|v| v as u64)
}

fn get<'a>(labels: &'a Labels, name: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Busiest first; unknown rates last; equal ones keep their order (the
/// sorts using it are stable).
fn descending(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    let key = |r: Option<f64>| r.unwrap_or(f64::NEG_INFINITY);
    key(b).total_cmp(&key(a))
}

/// The hosts by events per second in, busiest first; ties (and hosts that
/// are down) keep the order they were given in.
pub fn sort(hosts: &mut [Host]) {
    hosts.sort_by(|a, b| descending(a.status.received_per_sec, b.status.received_per_sec));
}

/// The columns of the hosts table.
pub const HOSTS: [&str; 13] = [
    "HOST", "NAME", "STATE", "IN/S", "OUT/S", "BUFFER", "CKPT LAG", "SOURCE", "SINK", "REFUSED",
    "DROPPED", "DEAD", "NOTE",
];

/// The columns of the routes table.
pub const ROUTES: [&str; 5] = ["HOST", "IN/S", "EVENTS", "SOURCE TOPIC", "SINK TOPIC"];

/// The columns of the reasons table.
pub const REASONS: [&str; 5] = ["HOST", "WHAT", "REASON", "PER/S", "EVENTS"];

fn count(v: Option<u64>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// `connected`, `down`, `stalled`, or `problem` (the sink's, in NOTE).
fn link(connected: Option<bool>, stalled: Option<bool>, problem: bool) -> String {
    match (connected, stalled) {
        (None, _) => "-",
        (_, Some(true)) => "stalled",
        (Some(true), _) if problem => "problem",
        (Some(true), _) => "connected",
        (Some(false), _) => "down",
    }
    .to_string()
}

/// `12/10000 0%`: buffered and in-flight events of the `--buffer` limit.
fn fill(buffered: Option<u64>, capacity: Option<u64>) -> String {
    match (buffered, capacity) {
        (Some(b), Some(c)) if c > 0 => format!("{b}/{c} {}%", b * 100 / c),
        (Some(b), _) => b.to_string(),
        _ => "-".to_string(),
    }
}

/// Why a host is not fine, in words: a short "timed out after 2s", the
/// error, the source's and the sink's problems.
fn note(h: &Host) -> String {
    if let Some(secs) = h.timed_out_secs {
        return format!("timed out after {secs}s");
    }
    if let Some(e) = &h.status.error {
        return e.clone();
    }
    let mut notes = Vec::new();
    if let Some(p) = &h.source_problem {
        notes.push(format!("source: {p}"));
    }
    if let Some(p) = &h.status.sink_problem {
        notes.push(format!("sink: {p}"));
    }
    notes.join("; ")
}

/// One row of the hosts table per host.
pub fn host_cells(hosts: &[Host]) -> Vec<Vec<String>> {
    hosts
        .iter()
        .map(|h| {
            let r = &h.status;
            let down = r.state == "down" || r.state == "waiting";
            let cells = if down {
                let mut cells = vec![r.host.clone(), r.name.clone().unwrap_or("-".into())];
                // Said in STATE too: on a narrow screen NOTE is cut first.
                let timed_out = h.timed_out_secs.is_some();
                cells.push(if timed_out {
                    "timed out".into()
                } else {
                    r.state.clone()
                });
                cells.extend(vec!["-".to_string(); HOSTS.len() - 4]);
                cells.push(note(h));
                cells
            } else {
                vec![
                    r.host.clone(),
                    r.name.clone().unwrap_or("-".into()),
                    r.state.clone(),
                    rate(r.received_per_sec),
                    rate(r.acked_per_sec),
                    fill(r.buffered, h.buffer_capacity),
                    count(h.checkpoint_lag),
                    link(r.source_connected, r.source_stalled, false),
                    link(r.sink_connected, r.sink_stalled, r.sink_problem.is_some()),
                    count(h.refused),
                    count(r.dropped),
                    count(h.dead_lettered),
                    note(h),
                ]
            };
            cells.iter().map(|c| shown(c)).collect()
        })
        .collect()
}

/// One row per route of every host, the hosts in their order.
pub fn route_cells(hosts: &[Host]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for h in hosts {
        for r in &h.route_rates {
            let (source, sink) = if r.allowall {
                ("(--allowall)", ".")
            } else if r.sinktopic.is_empty() {
                (r.sourcetopic.as_str(), ".")
            } else {
                (r.sourcetopic.as_str(), r.sinktopic.as_str())
            };
            let cells = [
                h.status.host.as_str(),
                &rate(r.per_sec),
                &r.events.to_string(),
                source,
                sink,
            ];
            rows.push(cells.iter().map(|c| shown(c)).collect());
        }
    }
    rows
}

/// One row per reason with any events, of every host.
pub fn reason_cells(hosts: &[Host]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for h in hosts {
        for r in &h.reasons {
            let cells = [
                h.status.host.as_str(),
                r.kind,
                &r.reason,
                &rate(r.per_sec),
                &r.events.to_string(),
            ];
            rows.push(cells.iter().map(|c| shown(c)).collect());
        }
    }
    rows
}

#[cfg(test)]
mod tests;
