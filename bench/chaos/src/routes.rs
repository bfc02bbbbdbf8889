//! Route changes through the repeater's REST API while events flow and
//! faults hit: the table always maps the source's topic somewhere under
//! `chaos/`, so no event may go unrouted. After each change, `GET /events`
//! must list exactly what the change promised; a change refused because the
//! disk is full (500) must have changed nothing.
//!
//! With RabbitMQ every change keeps the sink topic `chaos/a`: a topic is a
//! stream there, and a stream deduplicates only what reaches it, so two
//! repeaters (or one restarted from its checkpoint) routing an event to two
//! streams would store it twice by design, not by fault. Kafka likewise
//! (the Kafka topic `chaos.a`): a consumer deduplicates by record key
//! within what it reads, and the checker reads one topic.

use app_event_repeater_api::path;
use serde_json::{json, Value};

use crate::api;
use crate::brokers::Sink;
use crate::record::Record;
use crate::world::{World, ONE_TOPIC, SOURCE_TOPIC};

type Table = Vec<(String, String)>;

/// One change: method, path, body, and the table it should leave.
fn pick_change(table: &Table, pick: u32, one_stream: bool) -> (&'static str, String, Value, Table) {
    let sink = |t: &'static str| if one_stream { ONE_TOPIC } else { t };
    let route = |s: &str, t: &str| (s.to_string(), t.to_string());
    let upsert = |mut t: Table, r: (String, String)| {
        t.retain(|(s, _)| *s != r.0);
        t.push(r);
        t.sort();
        t
    };
    let covered_elsewhere = table.iter().any(|(s, _)| s == "." || s == "bench/");
    match pick % 5 {
        0 => (
            "PUT",
            path::events_replace(),
            json!([{"sourcetopic": SOURCE_TOPIC, "sinktopic": "chaos/a"}]),
            vec![route(SOURCE_TOPIC, "chaos/a")],
        ),
        1 => (
            "PUT",
            path::events_replace(),
            json!([{"sourcetopic": "bench/", "sinktopic": sink("chaos/b/{suffix}")}]),
            vec![route("bench/", sink("chaos/b/{suffix}"))],
        ),
        3 => (
            "PUT",
            path::EVENTS.into(),
            json!([{"sourcetopic": ".", "sinktopic": sink("chaos/dot/{topic}")}]),
            upsert(table.clone(), route(".", sink("chaos/dot/{topic}"))),
        ),
        4 if covered_elsewhere && table.iter().any(|(s, _)| s == SOURCE_TOPIC) => {
            let mut after = table.clone();
            after.retain(|(s, _)| s != SOURCE_TOPIC);
            ("DELETE", path::event(SOURCE_TOPIC), Value::Null, after)
        }
        _ => (
            "PUT",
            path::event(SOURCE_TOPIC),
            json!({"sinktopic": sink("chaos/c/{topic}")}),
            upsert(table.clone(), route(SOURCE_TOPIC, sink("chaos/c/{topic}"))),
        ),
    }
}

/// The table as `GET /events` lists it.
fn read_table(socket: &std::path::Path) -> Result<Table, String> {
    let (status, body) = api::request(socket, "GET", path::EVENTS, None)?;
    if status != 200 {
        return Err(format!("GET /events: {status} {body}"));
    }
    let v: Value = serde_json::from_str(&body).map_err(|e| format!("GET /events: {e}"))?;
    let mut t: Table = v
        .as_array()
        .ok_or("GET /events: not an array")?
        .iter()
        .map(|r| {
            let s = r["sourcetopic"].as_str().unwrap_or_default().to_string();
            let k = r["sinktopic"].as_str().unwrap_or_default().to_string();
            (s, k)
        })
        .collect();
    t.sort();
    Ok(t)
}

/// Applies change `pick` to repeater `i`, when its API can answer.
pub fn change(world: &mut World, i: usize, pick: u32, t: f64, rec: &mut Record) {
    let full = world.disk.is_full();
    let one_stream = matches!(world.brokers.sink, Sink::RabbitmqStream | Sink::Kafka);
    let r = &mut world.repeaters[i];
    if !r.answering() {
        return;
    }
    let (method, path, body, after) = pick_change(&r.routes, pick, one_stream);
    let body = (!body.is_null()).then(|| body.to_string());
    let answer = api::request(&r.socket, method, &path, body.as_deref());
    let table = match read_table(&r.socket) {
        Ok(t) => t,
        Err(e) => {
            rec.failures.push(format!("t={t:.1}s: repeater {i}: {e}"));
            return;
        }
    };
    rec.route_changes += 1;
    let verdict = match &answer {
        Ok((200 | 201, _)) if table == after => Ok("applied"),
        Ok((500, _)) if full && table == r.routes => Ok("refused (disk full), unchanged"),
        // No answer in time (a loaded machine): either outcome is fine, as
        // long as it is one of the two.
        Err(_) if table == after || table == r.routes => Ok("in doubt, then read back"),
        _ => Err(format!(
            "{method} {path}: {answer:?}; the table is {table:?}, expected {after:?} (or unchanged {:?} on a 500 with the disk full)",
            r.routes
        )),
    };
    match verdict {
        Ok(how) => println!("chaos: t={t:6.1}s routes of repeater {i}: {method} {path} {how}"),
        Err(e) => {
            println!("chaos: t={t:6.1}s routes of repeater {i}: WRONG: {e}");
            rec.failures.push(format!("t={t:.1}s: repeater {i}: {e}"));
        }
    }
    r.routes = table;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(t: &Table) -> Vec<&str> {
        t.iter().map(|(s, _)| s.as_str()).collect()
    }

    #[test]
    fn every_change_leaves_the_topic_routed() {
        let mut table: Table = vec![(SOURCE_TOPIC.into(), "chaos/a".into())];
        for pick in [3, 4, 4, 1, 2, 4, 0, 4, 3, 2, 4, 1, 4] {
            let (method, _, _, after) = pick_change(&table, pick, false);
            assert!(
                after
                    .iter()
                    .any(|(s, k)| (s == SOURCE_TOPIC || s == "bench/" || s == ".")
                        && k.starts_with("chaos/")),
                "{pick}: {after:?}"
            );
            if pick == 4 && method == "DELETE" {
                assert!(!routes(&after).contains(&SOURCE_TOPIC));
            }
            table = after;
        }
        // A delete is only chosen when another route covers the topic.
        let only: Table = vec![(SOURCE_TOPIC.into(), "chaos/a".into())];
        assert_eq!(pick_change(&only, 4, false).0, "PUT");
        // RabbitMQ and Kafka: every change leaves one stream (topic).
        for pick in 0..5 {
            let (_, _, _, after) = pick_change(&only, pick, true);
            assert!(after.iter().all(|(_, k)| k == ONE_TOPIC), "{after:?}");
        }
    }
}
