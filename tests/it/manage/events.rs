//! Routes set by the manager steer the events of a real event-time, to the
//! stderr sink and to mosquitto.

use crate::common;

use std::time::Duration;

use common::broker::{Broker, Subscriber};
use common::event_time::EventTime;
use common::{wait_for, Sandbox};
use serde_json::Value;

use super::{manage, repeater, write};

#[test]
fn routes_set_by_the_manager_steer_the_events() {
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &[]);
    let rep = repeater(&sb, "flow").source("event-time").start();
    // timer/msec/100 routed to `sinktopic` by the manager.
    let route_to = |sinktopic: &str| {
        let value = format!(r#"{{"sourcetopic":"timer/msec/100","sinktopic":"{sinktopic}"}}"#);
        manage(&sb, &["post", "--name", "flow", "--value", &value]).ok();
    };
    let seen = |topic: &str| {
        let topic = topic.to_string();
        wait_for(Duration::from_secs(15), || {
            rep.sink_topics().contains(&topic).then_some(())
        })
        .is_some()
    };

    route_to("/fast");
    assert!(seen("/fast"), "no event under /fast: {}", rep.log());

    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"timer/msec/100","sinktopic":"/faster"}]"#,
    );
    let applied = manage(
        &sb,
        &["apply", "--name", "flow", "-f", &file.to_string_lossy()],
    )
    .ok();
    assert_eq!(
        applied.stdout,
        "~ timer/msec/100 -> /fast => /faster\napplied: 0 added, 1 changed, 0 removed\n"
    );
    assert!(seen("/faster"), "no event under /faster: {}", rep.log());

    manage(
        &sb,
        &[
            "delete",
            "--name",
            "flow",
            "--path",
            "/events/timer/msec/100",
        ],
    )
    .ok();
    // Let events already on their way through drain, then expect silence.
    std::thread::sleep(Duration::from_millis(500));
    let before = rep.sink_topics().len();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        rep.sink_topics().len(),
        before,
        "events still flow after delete: {}",
        rep.log()
    );
    // The same events, routed again, are seen: the silence was the delete's.
    route_to("/again");
    assert!(seen("/again"), "no event under /again: {}", rep.log());
}

#[test]
fn routes_set_by_the_manager_reach_mosquitto() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "site/#", None) else {
        return;
    };
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &[]);
    let url = broker.url();
    let _rep = repeater(&sb, "mq")
        .source("event-time")
        .sinkprotocol("mqtt")
        .sink(&url)
        .start();
    manage(
        &sb,
        &[
            "post",
            "--name",
            "mq",
            "--value",
            r#"[{"sourcetopic":"timer/msec/100","sinktopic":"site/fast"}]"#,
        ],
    )
    .ok();
    let got = sub.wait(Duration::from_secs(15), |m| {
        m.iter().any(|(t, _)| t == "site/fast")
    });
    let (_, payload) = got
        .iter()
        .find(|(t, _)| t == "site/fast")
        .unwrap_or_else(|| panic!("nothing on site/fast: {got:?}"));
    let event: Value = serde_json::from_str(payload).expect("payload is the event's JSON");
    assert_eq!(event["topic"], "timer/msec/100");

    // A prefix route with {suffix}, declared in a file.
    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"timer/msec/","sinktopic":"site/ms/{suffix}"}]"#,
    );
    let applied = manage(
        &sb,
        &["apply", "--name", "mq", "-f", &file.to_string_lossy()],
    )
    .ok();
    assert_eq!(
        applied.stdout,
        "+ timer/msec/ -> site/ms/{suffix}\n- timer/msec/100 -> site/fast\napplied: 1 added, 0 changed, 1 removed\n"
    );
    let got = sub.wait(Duration::from_secs(15), |m| {
        m.iter().any(|(t, _)| t == "site/ms/100") && m.iter().any(|(t, _)| t == "site/ms/500")
    });
    assert!(
        got.iter().any(|(t, _)| t == "site/ms/500"),
        "prefix route did not deliver: {got:?}"
    );
}
