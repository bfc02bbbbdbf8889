//! Kafka modes, through the client library the repeater's Kafka sink uses
//! (librdkafka, the `rdkafka` crate): `kafka-read` reads every partition of
//! a topic from its first record and counts the numbered events (missing,
//! duplicated) and their keys, with the rate as the records' timestamps
//! (their producer's clock, the same for every publisher) give it;
//! `kafka-publish` produces numbered events straight into a topic with the
//! repeater's settings and window, the direct path of the Kafka bench.

use std::collections::HashMap;
use std::time::Duration;

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use serde_json::json;
use tokio::time::Instant;

use crate::cli::{KafkaPublishArgs, KafkaReadArgs};
use crate::payload::{event_json, min_fixed_size, now_ns, read_stamp};
use crate::publish::announce_until;
use crate::tally::Tally;

fn client(brokers: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", brokers)
        .set("socket.connection.setup.timeout.ms", "5000")
        .set("log_level", "3");
    c
}

/// The partitions of `topic`, waiting up to `wait` for it to exist.
fn partitions(consumer: &StreamConsumer, topic: &str, wait: Duration) -> Result<Vec<i32>, String> {
    let until = std::time::Instant::now() + wait;
    loop {
        let md = consumer
            .fetch_metadata(Some(topic), Duration::from_secs(5))
            .map_err(|e| format!("metadata of {topic}: {e}"));
        if let Ok(md) = &md {
            if let Some(t) = md.topics().iter().find(|t| t.name() == topic) {
                if t.error().is_none() && !t.partitions().is_empty() {
                    return Ok(t.partitions().iter().map(|p| p.id()).collect());
                }
            }
        }
        if std::time::Instant::now() >= until {
            return Err(md.err().unwrap_or_else(|| format!("no topic {topic}")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub async fn read(args: KafkaReadArgs) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs_f64(args.timeout.max(0.0));
    let mut config = client(&args.brokers);
    if let Some(ca) = &args.ca_file {
        config
            .set("security.protocol", "ssl")
            .set("ssl.ca.location", ca.display().to_string());
    }
    let consumer: StreamConsumer = config
        .set("group.id", "loadgen-kafka-read")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .map_err(|e| format!("cannot make a Kafka consumer: {e}"))?;
    let parts = partitions(
        &consumer,
        &args.topic,
        Duration::from_secs_f64(args.idle.max(0.0)),
    )?;
    let mut tpl = TopicPartitionList::new();
    for p in &parts {
        tpl.add_partition_offset(&args.topic, *p, Offset::Beginning)
            .map_err(|e| e.to_string())?;
    }
    consumer.assign(&tpl).map_err(|e| format!("assign: {e}"))?;
    let mut tally = Tally::with_capacity(args.expect.max(1024));
    // The key each number first came with: a copy with another key could
    // not be told from a new event by a consumer deduplicating by key.
    let mut keys: HashMap<u64, Vec<u8>> = HashMap::new();
    let (mut messages, mut unkeyed, mut key_mismatches) = (0u64, 0u64, 0u64);
    let mut distinct_keys = std::collections::HashSet::new();
    loop {
        let quiet = if args.expect > 0 && tally.complete(args.expect) {
            Duration::from_secs(1)
        } else {
            Duration::from_secs_f64(args.idle.max(0.1))
        };
        if Instant::now() >= deadline {
            break;
        }
        let wait = quiet.min(deadline.saturating_duration_since(Instant::now()));
        let m = match tokio::time::timeout(wait, consumer.recv()).await {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => return Err(format!("reading {}: {e}", args.topic)),
            Err(_) => break,
        };
        messages += 1;
        let stored = m
            .timestamp()
            .to_millis()
            .and_then(|t| u64::try_from(t).ok())
            .unwrap_or(0)
            * 1_000_000;
        let body = m.payload().unwrap_or_default();
        let Some(s) = read_stamp(body) else {
            tally.record_unreadable();
            continue;
        };
        tally.record(s.seq, s.t_ns, body.len(), stored);
        // Keys of the numbered events only (not the warm-up's, numbered 0).
        match (s.seq, m.key()) {
            (0, _) => {}
            (_, None) => unkeyed += 1,
            (seq, Some(k)) => {
                distinct_keys.insert(k.to_vec());
                let first = keys.entry(seq).or_insert_with(|| k.to_vec());
                if first.as_slice() != k {
                    key_mismatches += 1;
                }
            }
        }
    }
    let mut summary = tally.summary(args.expect);
    summary["mode"] = json!("kafka-read");
    summary["messages"] = json!(messages);
    summary["partitions"] = json!(parts.len());
    summary["unkeyed"] = json!(unkeyed);
    summary["distinct_keys"] = json!(distinct_keys.len());
    summary["key_mismatches"] = json!(key_mismatches);
    println!("{summary}");
    Ok(())
}

pub async fn publish(args: KafkaPublishArgs) -> Result<(), String> {
    let gen = &args.gen;
    let size = if gen.size == 0 {
        min_fixed_size(&gen.topic, 10_000_000)
    } else {
        gen.size
    };
    let topic = args.kafka_topic.clone();
    // The repeater's settings (its sink's client_config): idempotent,
    // acks=all, the same partitioner.
    let producer: FutureProducer = client(&args.brokers)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("partitioner", "murmur2_random")
        .set(
            "queue.buffering.max.messages",
            (args.inflight * 2 + 1000).to_string(),
        )
        .create()
        .map_err(|e| format!("cannot make a Kafka producer: {e}"))?;
    if let Some(file) = &gen.ready_file {
        announce_until(file, || async { Ok(()) }).await?;
    }
    let window = args.inflight.max(1);
    let mut inflight = std::collections::VecDeque::new();
    let (mut acked, mut refused) = (0u64, 0usize);
    let total = gen.warmup + gen.count;
    let mut started = Instant::now();
    for i in 0..total {
        let numbered = i.checked_sub(gen.warmup);
        if numbered == Some(0) {
            started = Instant::now();
        }
        if let Some(after) = numbered.and_then(|n| crate::payload::due_after(n, gen.rate)) {
            tokio::time::sleep_until(started + after).await;
        }
        let seq = numbered.map_or(0, |n| n + 1);
        let body = event_json(&gen.topic, seq, now_ns(), size);
        let key = format!("loadgen:{i}");
        if inflight.len() >= window {
            settle(inflight.pop_front(), &mut acked, &mut refused).await;
        }
        loop {
            match producer.send_result(FutureRecord::to(&topic).key(&key).payload(body.as_bytes()))
            {
                Ok(d) => {
                    inflight.push_back(d);
                    break;
                }
                Err((e, _)) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::QueueFull) => {
                    settle(inflight.pop_front(), &mut acked, &mut refused).await;
                }
                Err((e, _)) => return Err(format!("produce: {e}")),
            }
        }
    }
    while let Some(d) = inflight.pop_front() {
        settle(Some(d), &mut acked, &mut refused).await;
    }
    let span = started.elapsed();
    producer
        .flush(Duration::from_secs(5))
        .map_err(|e| format!("flush: {e}"))?;
    println!(
        "{}",
        json!({
            "mode": "kafka-publish",
            "count": gen.count,
            "inflight": window,
            "payload_bytes": size,
            "acked": acked,
            "refused": refused,
            "warmup": gen.warmup,
            "span_s": span.as_secs_f64(),
            "rate": (gen.count as f64 / span.as_secs_f64()).round(),
        })
    );
    if refused > 0 {
        return Err(format!("{refused} records were not acknowledged"));
    }
    Ok(())
}

async fn settle(
    d: Option<rdkafka::producer::DeliveryFuture>,
    acked: &mut u64,
    refused: &mut usize,
) {
    if let Some(d) = d {
        match d.await {
            Ok(Ok(_)) => *acked += 1,
            _ => *refused += 1,
        }
    }
}
