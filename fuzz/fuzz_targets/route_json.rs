//! Route JSON as the API receives it (an array of routes or one route), on
//! arbitrary bytes: parsing and checking never panic; an accepted set lists,
//! serialises and parses back to itself, and compiles into a table that
//! routes any topic without panicking, and gives an empty sink topic only
//! where `{suffix}` is all of the template and nothing is left over.
#![no_main]

use app_event_repeater::routes::{validate, Route, Routes, Table};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let specs: Vec<Route> = match serde_json::from_slice::<Vec<Route>>(input) {
        Ok(v) => v,
        Err(_) => match serde_json::from_slice::<Route>(input) {
            Ok(s) => vec![s],
            Err(_) => return,
        },
    };
    for spec in &specs {
        let _ = validate(spec);
    }
    let Ok(routes) = Routes::from_specs(specs.clone()) else {
        return;
    };
    let listed = routes.list();
    let json = serde_json::to_vec(&listed).expect("routes serialise");
    let back: Vec<Route> = serde_json::from_slice(&json).expect("listed routes parse back");
    assert_eq!(back, listed);
    assert_eq!(
        Routes::from_specs(back).map(|r| r.list()).ok(),
        Some(listed.clone())
    );

    for allowall in [false, true] {
        let table = Table::build(&routes, allowall, None);
        for spec in &listed {
            let topics = [
                spec.sourcetopic.clone(),
                format!("{}x/y", spec.sourcetopic),
                spec.sourcetopic.trim_end_matches('/').to_string(),
            ];
            for topic in topics.iter().filter(|t| !t.is_empty()) {
                if let Some(d) = table.route(topic) {
                    // A template with fields of the event (`{/pointer}`) is
                    // rendered per event: never empty, or an error that
                    // counts the event as failed.
                    match d.for_event(topic, r#"{"a":"b"}"#) {
                        Ok(Some(t)) => assert!(!t.is_empty(), "{spec:?}"),
                        Ok(None) | Err(_) => {}
                    }
                    // Without fields: empty only for `{suffix}` alone on an
                    // event whose topic is the route's prefix itself (nothing
                    // left over): the sinks refuse that topic and count the
                    // event as failed (invalid topic), never publish it.
                    if d.sink_topic.is_empty() && matches!(d.for_event(topic, "{}"), Ok(None)) {
                        let matched = d.route();
                        assert_eq!(matched, Some(topic.as_str()), "{spec:?}");
                    }
                }
            }
        }
        if allowall {
            let d = table.route("some/topic");
            assert!(d.is_some(), "--allowall relays every topic");
        }
    }
});
