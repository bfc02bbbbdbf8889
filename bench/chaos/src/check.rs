//! After the faults: let every event through, then count. The checker is
//! the persistent MQTT subscriber that ran all along, or a read of the
//! JetStream stream, the RabbitMQ stream or the Kafka topic from its first
//! message to its last (Kafka: with every copy's record key). Then the
//! repeaters' documented metric identities (docs/rest-api.md), their RSS,
//! and the duplicate bound (docs/reliability.md).

use std::time::{Duration, Instant};

use app_event_repeater_api::metric::{self, Metric};
use serde_json::Value;

use crate::api;
use crate::brokers::{Sink, SUB_WINDOW};
use crate::config::Config;
use crate::proc::{tail, Proc, Spec};
use crate::record::Record;
use crate::world::{self, World};

pub struct Outcome {
    /// Distinct numbers in 1..=N the source really wrote to a reader.
    pub sent: u64,
    pub missing: u64,
    pub duplicates: u64,
    pub bound: u64,
    pub failures: Vec<String>,
}

/// Waits until every repeater's checkpoint is at the last event and nothing
/// is buffered or in flight; true when it happened. Gives up when the
/// checkpoints stand still for CHAOS_SETTLE s, and in any case after
/// CHAOS_SETTLE + CHAOS_SECONDS (a source restarted during the faults sends
/// its remaining events later by its downtime).
fn settle(world: &mut World, cfg: &Config, failures: &mut Vec<String>) -> bool {
    for r in &mut world.repeaters {
        if !r.proc.running() {
            // A restart failed during the faults (already a failure): once more.
            if let Err(e) = r.proc.spawn().and_then(|()| r.wait_api()) {
                failures.push(format!(
                    "{} cannot be started after the faults: {e}",
                    r.name
                ));
            }
        }
    }
    let n = cfg.count();
    let still = Duration::from_secs(cfg.settle);
    let deadline = Instant::now() + still + Duration::from_secs(cfg.seconds);
    let (mut report, mut moved) = (Instant::now(), Instant::now());
    let mut last: Vec<u64> = Vec::new();
    loop {
        let ids: Vec<u64> = world.repeaters.iter().map(|r| r.checkpoint_id()).collect();
        let idle = world.repeaters.iter().all(|r| {
            api::metrics(&r.socket).is_ok_and(|m| {
                api::sum(&m, metric::EVENTS_BUFFERED) == 0.0
                    && api::sum(&m, metric::EVENTS_INFLIGHT) == 0.0
            })
        });
        if idle && ids.iter().all(|&id| id >= n) {
            return true;
        }
        if ids != last {
            (last, moved) = (ids.clone(), Instant::now());
        }
        if moved.elapsed() > still || Instant::now() > deadline {
            failures.push(format!(
                "not settled: checkpoints at {ids:?} of {n} (still for {:.0} s), idle: {idle}",
                moved.elapsed().as_secs_f64()
            ));
            return false;
        }
        if report.elapsed() >= Duration::from_secs(10) {
            println!("chaos: settling: checkpoints at {ids:?} of {n}");
            report = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The checker's summary (loadgen's JSON line).
fn count(world: &mut World, cfg: &Config) -> Result<Value, String> {
    let n = cfg.count();
    match world.brokers.sink {
        Sink::Mqtt => {
            let sub = world.subscriber.as_mut().ok_or("no subscriber")?;
            // Its progress lines say when all N arrived (30 s at most more).
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && progress_distinct(sub) < n {
                std::thread::sleep(Duration::from_millis(200));
            }
            // Then a little longer for late duplicates; SIGTERM ends it with
            // its summary.
            std::thread::sleep(Duration::from_secs(3));
            sub.stop(Duration::from_secs(10));
            last_json(&world.work.join("checker.json"))
        }
        Sink::Nats => {
            let server = format!("nats://{}:{}", world.brokers.host, world.brokers.ports[0]);
            read_stream(
                world,
                cfg,
                "nats-read",
                &["--server", &server, "--stream", "EVENTS"],
            )
        }
        Sink::RabbitmqStream => {
            let port = world.brokers.ports[0].to_string();
            let stream = world::ONE_TOPIC;
            read_stream(
                world,
                cfg,
                "rmq-read",
                &["--port", &port, "--stream", stream],
            )
        }
        Sink::Kafka => {
            let brokers = format!("{}:{}", world.brokers.host, world.brokers.ports[0]);
            // --idle: a pause of the broker's this long ends the read.
            let topic = world::KAFKA_TOPIC;
            read_stream(
                world,
                cfg,
                "kafka-read",
                &["--brokers", &brokers, "--topic", topic, "--idle", "10"],
            )
        }
    }
}

/// Kafka stores a copy per producer session (each repeater's, and each
/// resend after a crash or a timeout): what makes them one event to a
/// consumer deduplicating by key is that every copy carries the key its
/// first copy had, that no record lacks one, and that no two events share
/// one (a consumer would drop the second).
fn kafka_keys(v: &Value, failures: &mut Vec<String>) {
    let field = |k: &str| v[k].as_u64();
    let shown = |k: &str| field(k).map_or("?".to_string(), |n| n.to_string());
    println!(
        "chaos: Kafka: {} records of {} events under {} keys; {} copies under another key than their first, {} without a key",
        shown("messages"),
        shown("distinct"),
        shown("distinct_keys"),
        shown("key_mismatches"),
        shown("unkeyed")
    );
    if field("key_mismatches") != Some(0) {
        failures.push(format!(
            "Kafka: {:?} copies carry another key than their event's first copy",
            field("key_mismatches")
        ));
    }
    if field("unkeyed") != Some(0) {
        failures.push(format!("Kafka: {:?} records have no key", field("unkeyed")));
    }
    // Numbered events only (no event 0 here), so one key per number.
    if field("warmup") == Some(0) && field("distinct_keys") != field("distinct") {
        failures.push(format!(
            "Kafka: {:?} distinct keys for {:?} distinct events",
            field("distinct_keys"),
            field("distinct")
        ));
    }
}

/// `loadgen MODE ARGS --expect N`: the whole stream read from its first
/// message, its summary.
fn read_stream(world: &World, cfg: &Config, mode: &str, args: &[&str]) -> Result<Value, String> {
    let n = cfg.count();
    let out = world.work.join(format!("{mode}.json"));
    // 2 minutes, or more for a long run's stream (read at about 10,000
    // messages/s here, slower on a loaded machine).
    let read_s = (n / 2_000).max(120);
    let (expect, timeout) = (n.to_string(), read_s.to_string());
    let mut all = vec![mode];
    all.extend(args);
    all.extend(["--expect", &expect, "--timeout", &timeout]);
    let mut reader = Proc::start(
        Spec {
            name: mode.into(),
            program: cfg.bin.join("loadgen"),
            args: all.into_iter().map(String::from).collect(),
            env: Vec::new(),
            stdout: Some(out.clone()),
        },
        &world.work.join("logs"),
    )?;
    let deadline = Instant::now() + Duration::from_secs(read_s + 30);
    while reader.exited().is_none() {
        if Instant::now() > deadline {
            return Err(format!(
                "the stream could not be read within {} s",
                read_s + 30
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    last_json(&out).map_err(|e| format!("{e}; {}", tail(&reader.log_path())))
}

fn progress_distinct(sub: &Proc) -> u64 {
    let text = std::fs::read_to_string(sub.log_path()).unwrap_or_default();
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok()?["distinct"].as_u64())
        .unwrap_or(0)
}

fn last_json(path: &std::path::Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| format!("{}: no summary line", path.display()))
}

/// The identities of docs/rest-api.md, on an idle repeater; and what this
/// run must not see at all: nothing invalid, unrouted, failed, dropped or
/// missed (valid events, a route always, `--overflow block`, a source that
/// holds every event).
fn identities(world: &World, failures: &mut Vec<String>) {
    for r in &world.repeaters {
        let m = match api::metrics(&r.socket) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{}: {e}", r.name));
                continue;
            }
        };
        let v = |family: Metric| api::sum(&m, family) as u64;
        let (received, accepted, acked) = (
            v(metric::EVENTS_RECEIVED),
            v(metric::EVENTS_ACCEPTED),
            v(metric::EVENTS_ACKED),
        );
        let (invalid, unrouted, failed, dropped) = (
            v(metric::EVENTS_INVALID),
            v(metric::EVENTS_UNROUTED),
            v(metric::EVENTS_FAILED),
            v(metric::EVENTS_DROPPED),
        );
        let (buffered, inflight, missed) = (
            v(metric::EVENTS_BUFFERED),
            v(metric::EVENTS_INFLIGHT),
            v(metric::EVENTS_MISSED),
        );
        println!(
            "chaos: {} (its last life): received {received} = invalid {invalid} + unrouted {unrouted} + accepted {accepted} (+ failed {failed}); accepted = acked {acked} + dropped {dropped} + buffered {buffered} + inflight {inflight}",
            r.name
        );
        if received != invalid + unrouted + accepted + failed {
            failures.push(format!(
                "{}: received {received} != invalid + unrouted + accepted + failed = {}",
                r.name,
                invalid + unrouted + accepted + failed
            ));
        }
        if accepted != acked + failed + dropped + buffered + inflight {
            failures.push(format!(
                "{}: accepted {accepted} != acked + failed + dropped + buffered + inflight = {}",
                r.name,
                acked + failed + dropped + buffered + inflight
            ));
        }
        for (what, n) in [
            ("invalid", invalid),
            ("unrouted", unrouted),
            ("failed", failed),
            ("dropped", dropped),
            ("missed", missed),
        ] {
            if n != 0 {
                failures.push(format!("{}: {n} events {what}", r.name));
            }
        }
    }
}

/// The documented duplicate bound. MQTT: per repeater crash, `--buffer` plus
/// what was acknowledged since the last checkpoint write (100 ms of traffic
/// at the highest rate seen, and everything acknowledged while the disk was
/// full before the crash); per reconnect, the in-flight window sent again
/// (`--inflight`, at most `--buffer`); per broker restart or pause, the
/// broker's window to the checker. NATS: 0, the stream drops every resend
/// within its 2-minute duplicate window, and no fault here lasts that long.
/// RabbitMQ: 0, the stream drops every publishing id not above the highest
/// it stored for the producer name, for as long as it keeps them. Kafka:
/// its idempotence spans one producer session, so each repeater's copy of
/// every event (N per repeater after the first), plus MQTT's terms for the
/// repeater kills and for the faults that make a repeater send its window
/// again, a broker fault counting for every repeater; no subscriber window.
fn bound(cfg: &Config, rec: &Record) -> u64 {
    if matches!(cfg.sink, Sink::Nats | Sink::RabbitmqStream) {
        return 0;
    }
    let per_kill = cfg.buffer + (rec.peak_ack_rate * 0.1).ceil() as u64;
    let window = cfg.buffer.min(1000);
    let resends = rec.repeater_kills * per_kill + rec.stale_checkpoint_events;
    if cfg.sink == Sink::Kafka {
        let others = cfg.repeaters as u64 - 1;
        return others * cfg.count()
            + resends
            + (rec.reconnects + others * rec.broker_faults) * window;
    }
    resends + rec.reconnects * window + rec.broker_faults * SUB_WINDOW
}

pub fn run(world: &mut World, cfg: &Config, rec: &Record) -> Outcome {
    let mut failures = rec.failures.clone();
    // A broker node restarted by the plan has finished booting (RabbitMQ's
    // restarts are not waited for during the faults).
    if let Err(e) = world.brokers.wait_all_up() {
        failures.push(format!("a broker node is not up after the faults: {e}"));
    }
    if cfg.sink == Sink::Kafka {
        if let Some(p) = crate::tansu::panicked(&world.work.join("logs")) {
            failures.push(format!(
                "the broker panicked, and answers nothing since (tansu's bug, not the repeater's): {p}"
            ));
        }
    }
    let settled = settle(world, cfg, &mut failures);
    if settled {
        identities(world, &mut failures);
    }
    let limit = cfg.rss_mib * 1024;
    println!(
        "chaos: peak RSS of a repeater {:.1} MiB (limit {} MiB); peak {:.0} acknowledgements/s",
        rec.peak_rss_kib as f64 / 1024.0,
        cfg.rss_mib,
        rec.peak_ack_rate
    );
    if rec.peak_rss_kib > limit {
        failures.push(format!(
            "a repeater's RSS reached {} KiB (limit {limit} KiB)",
            rec.peak_rss_kib
        ));
    }
    let n = cfg.count();
    let (missing, duplicates) = match count(world, cfg) {
        Ok(v) => {
            println!("chaos: checker: {v}");
            if v["unreadable"].as_u64() != Some(0) || v["max_seq"].as_u64().is_some_and(|m| m > n) {
                failures.push(format!("the checker saw events it cannot account for: {v}"));
            }
            if cfg.sink == Sink::Kafka {
                kafka_keys(&v, &mut failures);
            }
            (
                v["missing"].as_u64().unwrap_or(n),
                v["duplicates"].as_u64().unwrap_or(0),
            )
        }
        Err(e) => {
            failures.push(format!("cannot count: {e}"));
            (n, 0)
        }
    };
    // Counted against what the source really sent: a number it never sent
    // (no reader asked for it) is a loss the checker's count alone would
    // pin on the wrong side.
    let sent = match app_bench_loadgen::sent::Sent::read(&world::sent_file(&world.work)) {
        Ok(s) => s.distinct_up_to(n),
        Err(e) => {
            failures.push(format!("cannot read what the source sent: {e}"));
            0
        }
    };
    println!("chaos: the source sent {sent} distinct events of {n}");
    if sent < n {
        failures.push(format!(
            "the source never sent {} of the {n} events: no reader asked for them (a repeater that reconnected without Last-Event-ID?)",
            n - sent
        ));
    }
    Outcome {
        sent,
        missing,
        duplicates,
        bound: bound(cfg, rec),
        failures,
    }
}
