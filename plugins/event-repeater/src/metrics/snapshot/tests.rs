use std::collections::{BTreeMap, BTreeSet};

use super::super::inc;
use super::*;
use crate::routes::{Route, Routes};

fn table(routes: &[(&str, &str)], allowall: bool) -> Arc<Table> {
    let specs = routes.iter().map(|(s, t)| Route::new(*s, *t)).collect();
    let routes = Routes::from_specs(specs).expect("valid routes");
    Arc::new(Table::build(&routes, allowall, None))
}

fn render(m: &Metrics, t: &Arc<Table>) -> String {
    let buffer = BufferStats {
        queued: 3,
        queued_bytes: 300,
        inflight: 2,
        inflight_bytes: 200,
        max_events: 10_000,
        max_bytes: 1 << 26,
    };
    let build = Build {
        version: "9.8.7",
        started_unix: 1_700_000_000,
    };
    m.snapshot(buffer, t.clone(), t.entries().count(), build)
        .render()
        .expect("encodes")
}

/// `name{labels}` → value, from the sample lines.
fn samples(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("a sample line has a value");
            (k.to_string(), v.parse().expect("an integer value"))
        })
        .collect()
}

#[test]
fn every_series_keeps_its_name_and_labels() {
    let m = Metrics::default();
    m.set_broker("tcp://b:1883");
    let t = table(&[("timer/sec/1", "/time/1s"), ("we\"ird\\", "/x")], true);
    let got: BTreeSet<String> = samples(&render(&m, &t)).into_keys().collect();
    let p = "app_event_repeater_";
    let want: BTreeSet<String> = [
        "events_received_total",
        "events_missed_total",
        "events_invalid_total",
        "events_unrouted_total",
        "events_accepted_total",
        "events_published_total",
        "events_republished_total",
        "events_acked_total",
        "events_duplicate_total",
        "events_duplicate_conflict_total",
        "events_failed_total{reason=\"too_large\"}",
        "events_failed_total{reason=\"invalid_topic\"}",
        "events_failed_total{reason=\"sink_error\"}",
        "events_dropped_total{reason=\"overflow\"}",
        "events_dropped_total{reason=\"shutdown\"}",
        "events_buffered",
        "events_inflight",
        "buffer_bytes",
        "buffer_capacity_events",
        "buffer_capacity_bytes",
        "routes",
        "source_connected",
        "sink_connected",
        "sink_broker{broker=\"tcp://b:1883\"}",
        "source_disconnects_total",
        "source_ids_refused_total",
        "sink_disconnects_total",
        "source_stalled",
        "source_stalls_total",
        "sink_problem",
        "sink_stalled",
        "sink_stalls_total",
        "sink_refused_total{reason=\"stream_full\"}",
        "route_events_total{sourcetopic=\"timer/sec/1\",sinktopic=\"/time/1s\"}",
        // Label values are escaped as the text format wants.
        "route_events_total{sourcetopic=\"we\\\"ird\\\\\",sinktopic=\"/x\"}",
        "route_events_total{sourcetopic=\"\",sinktopic=\"\",allowall=\"true\"}",
        "route_series_omitted",
        "dead_letters_total{reason=\"invalid\"}",
        "dead_letters_total{reason=\"invalid_topic\"}",
        "dead_letters_total{reason=\"too_large\"}",
        "dead_letters_total{reason=\"sink_error\"}",
        "dead_letters_total{reason=\"overflow\"}",
        "dead_letter_bytes",
        "dead_letters_cut_total",
        "dead_letters_lost_total",
        "dead_letters_replayed_total",
        "tap_clients",
        "tap_skipped_total",
        "build_info{version=\"9.8.7\"}",
        "start_time_seconds",
    ]
    .iter()
    .map(|s| format!("{p}{s}"))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn values_follow_the_counters() {
    let m = Metrics::default();
    let t = table(&[("timer/sec/1", "/time/1s")], true);
    let before = samples(&render(&m, &t));
    let v = |s: &BTreeMap<String, u64>, k: &str| s[&format!("app_event_repeater_{k}")];
    assert_eq!(v(&before, "events_received_total"), 0);
    assert_eq!(v(&before, "sink_connected"), 0);
    for _ in 0..3 {
        inc(&m.received);
    }
    inc(&m.failed_sink);
    inc(&m.dropped_overflow);
    m.tap_clients.fetch_add(2, Ordering::Relaxed);
    m.tap_skipped.fetch_add(5, Ordering::Relaxed);
    m.sink_connected.store(true, Ordering::Relaxed);
    t.route("timer/sec/1");
    t.route("timer/sec/1");
    t.route("other");
    let after = samples(&render(&m, &t));
    assert_eq!(v(&after, "events_received_total"), 3);
    assert_eq!(v(&after, "events_failed_total{reason=\"sink_error\"}"), 1);
    assert_eq!(v(&after, "events_failed_total{reason=\"too_large\"}"), 0);
    assert_eq!(v(&after, "events_dropped_total{reason=\"overflow\"}"), 1);
    assert_eq!(v(&after, "sink_connected"), 1);
    assert_eq!(v(&after, "tap_clients"), 2);
    assert_eq!(v(&after, "tap_skipped_total"), 5);
    assert_eq!(
        v(
            &after,
            "route_events_total{sourcetopic=\"timer/sec/1\",sinktopic=\"/time/1s\"}"
        ),
        2
    );
    assert_eq!(
        v(
            &after,
            "route_events_total{sourcetopic=\"\",sinktopic=\"\",allowall=\"true\"}"
        ),
        1
    );
    assert_eq!(v(&after, "events_buffered"), 3);
    assert_eq!(v(&after, "buffer_bytes"), 500);
    assert_eq!(v(&after, "start_time_seconds"), 1_700_000_000);
    // No broker known: no sink_broker series at all.
    assert!(
        !after.keys().any(|k| k.contains("sink_broker")),
        "{after:?}"
    );
}

#[test]
fn the_output_is_openmetrics_text() {
    let m = Metrics::default();
    m.set_broker("tcp://b:1883");
    let t = table(&[("a", "/a"), ("b/", "/b/{suffix}")], true);
    let text = render(&m, &t);
    assert!(text.ends_with("\n# EOF\n"), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1);
    // Each sample belongs to the family whose # TYPE line precedes it:
    // counters as FAMILY_total, everything else as FAMILY.
    let mut family: Option<(String, String)> = None;
    let mut families = BTreeSet::new();
    let mut order = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            assert!(matches!(kind, "counter" | "gauge"), "{line}");
            assert!(families.insert(name.to_string()), "{name} twice");
            order.push(name.to_string());
            family = Some((name.to_string(), kind.to_string()));
        } else if let Some(rest) = line.strip_prefix("# HELP ") {
            // Help text goes out unescaped: nothing in it may need escaping.
            assert!(!rest.contains(['"', '\\']), "{line}");
        } else if line.starts_with("# UNIT ") || line == "# EOF" {
        } else {
            assert!(!line.starts_with('#'), "unknown comment {line}");
            let (name, kind) = family.as_ref().expect("a sample after a # TYPE");
            let want = if kind == "counter" {
                format!("{name}_total")
            } else {
                name.clone()
            };
            let sample = line.split(['{', ' ']).next().unwrap_or_default();
            assert_eq!(sample, want, "{line}");
        }
    }
    assert_eq!(families.len(), metric::ALL.len(), "{families:?}");
    // In the order, and with the names, that the API lists.
    let listed: Vec<String> = metric::ALL
        .iter()
        .map(|m| {
            let unit = m.unit.map_or(String::new(), |u| format!("_{}", u.as_str()));
            format!("{}_{}{unit}", metric::PREFIX, m.family)
        })
        .collect();
    assert_eq!(order, listed);
}

#[test]
fn per_route_series_are_capped() {
    let names: Vec<String> = (0..MAX_ROUTE_SERIES + 5)
        .map(|i| format!("t/{i:05}"))
        .collect();
    let routes: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "/x")).collect();
    let t = table(&routes, true);
    let s = samples(&render(&Metrics::default(), &t));
    let series: Vec<&String> = s
        .keys()
        .filter(|k| k.starts_with("app_event_repeater_route_events_total{"))
        .collect();
    // The first 1000 by source topic, and the --allowall series.
    assert_eq!(series.len(), MAX_ROUTE_SERIES + 1);
    assert!(series.iter().any(|k| k.contains("\"t/00999\"")));
    assert!(!series.iter().any(|k| k.contains("\"t/01000\"")));
    assert!(series.iter().any(|k| k.contains("allowall=\"true\"")));
    assert_eq!(s["app_event_repeater_route_series_omitted"], 5);
    assert_eq!(s["app_event_repeater_routes"], 1005);
}
