use super::*;
use crate::status::sample::parse_metrics;

fn sample(metrics: &str) -> Sample {
    let health = serde_json::json!({
        "status": "ok", "name": "r1",
        "source": {"url": "event-time", "connected": true},
        "sink": {"url": "stderr", "connected": true, "problem": "no \x1b[31mJetStream"}
    });
    Sample {
        health: Some(serde_json::from_value(health).expect("a health answer")),
        metrics: parse_metrics(metrics),
        ..Sample::default()
    }
}

const BEFORE: &str = "\
app_event_repeater_events_received_total 100
app_event_repeater_route_events_total{sourcetopic=\"a\",sinktopic=\"/a\"} 10
app_event_repeater_route_events_total{sourcetopic=\"b\x1b]0;t\x07\",sinktopic=\"\"} 50
app_event_repeater_events_failed_total{reason=\"too_large\"} 0
app_event_repeater_events_dropped_total{reason=\"overflow\"} 1
";

const NOW: &str = "\
app_event_repeater_events_received_total 300
app_event_repeater_events_buffered 40
app_event_repeater_events_inflight 10
app_event_repeater_buffer_capacity_events 1000
app_event_repeater_route_events_total{sourcetopic=\"a\",sinktopic=\"/a\"} 210
app_event_repeater_route_events_total{sourcetopic=\"b\x1b]0;t\x07\",sinktopic=\"\"} 50
app_event_repeater_route_events_total{sourcetopic=\"new\",sinktopic=\"/n\"} 5
app_event_repeater_events_failed_total{reason=\"too_large\"} 0
app_event_repeater_events_failed_total{reason=\"invalid_topic\"} 4
app_event_repeater_events_dropped_total{reason=\"overflow\"} 3
";

#[test]
fn routes_busiest_first_with_their_rates() {
    let h = host(
        "e1",
        Some(&sample(BEFORE)),
        &sample(NOW),
        Duration::from_secs(2),
    );
    let routes: Vec<(&str, Option<f64>)> = h
        .route_rates
        .iter()
        .map(|r| (r.sourcetopic.as_str(), r.per_sec))
        .collect();
    // A route new since the last sample has no rate yet: last.
    assert_eq!(
        routes,
        [
            ("a", Some(100.0)),
            ("b\x1b]0;t\x07", Some(0.0)),
            ("new", None)
        ]
    );
    assert_eq!(h.status.received_per_sec, Some(100.0));
    assert_eq!(
        (h.status.buffered, h.buffer_capacity),
        (Some(50), Some(1000))
    );
}

#[test]
fn reasons_with_events_only_and_dead_letters_absent_is_unknown() {
    let h = host(
        "e1",
        Some(&sample(BEFORE)),
        &sample(NOW),
        Duration::from_secs(2),
    );
    let reasons: Vec<(&str, &str, u64, Option<f64>)> = h
        .reasons
        .iter()
        .map(|r| (r.kind, r.reason.as_str(), r.events, r.per_sec))
        .collect();
    assert_eq!(
        reasons,
        [
            ("refused", "invalid_topic", 4, None),
            ("dropped", "overflow", 3, Some(1.0))
        ]
    );
    assert_eq!((h.refused, h.status.dropped), (Some(4), Some(3)));
    assert_eq!(h.dead_lettered, None, "no such series: unknown, not 0");
    let cells = &host_cells(&[h])[0];
    assert_eq!(cells[11], "-");
    // With the family present it counts, by reason.
    let now = format!("{NOW}app_event_repeater_dead_letters_total{{reason=\"too_large\"}} 2\n");
    let h = host("e1", None, &sample(&now), Duration::from_secs(2));
    assert_eq!(h.dead_lettered, Some(2));
    assert!(h
        .reasons
        .iter()
        .any(|r| r.kind == "dead-lettered" && r.reason == "too_large" && r.events == 2));
}

#[test]
fn cells_are_escaped_and_name_the_state() {
    let h = host(
        "e1",
        Some(&sample(BEFORE)),
        &sample(NOW),
        Duration::from_secs(2),
    );
    let hosts = host_cells(std::slice::from_ref(&h));
    assert_eq!(
        hosts[0][..11],
        [
            "e1",
            "r1",
            "up",
            "100",
            "-",
            "50/1000 5%",
            "-",
            "connected",
            "problem",
            "4",
            "3"
        ]
    );
    assert_eq!(hosts[0][12], "sink: no \\x1b[31mJetStream");
    let routes = route_cells(&[h]);
    assert_eq!(routes[1], ["e1", "0", "50", "b\\x1b]0;t\\x07", "."]);
    for cell in routes.iter().flatten().chain(hosts.iter().flatten()) {
        assert!(!cell.contains('\x1b'), "{cell:?}");
    }
}

#[test]
fn a_host_that_timed_out_says_so_briefly() {
    let e = crate::error::Error::Timeout {
        target: "http://127.0.0.1:9".into(),
        seconds: 2.0,
    };
    let h = host(
        "hang",
        None,
        &crate::status::sample::failed(&e),
        Duration::ZERO,
    );
    let cells = &host_cells(&[h])[0];
    assert_eq!(cells[2], "timed out");
    assert_eq!(cells[12], "timed out after 2s");
}

#[test]
fn hosts_sort_by_rate_in_stably_with_unknown_last() {
    let mk = |name: &str, rate: Option<f64>| {
        let mut h = host(name, None, &sample(""), Duration::ZERO);
        h.status.received_per_sec = rate;
        h
    };
    let mut hosts = vec![
        mk("down", None),
        mk("a", Some(5.0)),
        mk("b", Some(9.0)),
        mk("c", Some(5.0)),
    ];
    sort(&mut hosts);
    let order: Vec<&str> = hosts.iter().map(|h| h.status.host.as_str()).collect();
    assert_eq!(order, ["b", "a", "c", "down"]);
}
