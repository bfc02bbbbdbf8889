//! NATS modes: `nats-read` reads a JetStream stream back and counts what it
//! holds (per subject, and the numbered events: missing, duplicated), with
//! the rate and latency as the server stored them (each message's store
//! time: measured by the server, read once at the end, the same for every
//! publisher, so the timing loads neither path);
//! `nats-publish` publishes numbered events straight into JetStream with an
//! in-flight window, the direct path of bench/relay-nats.sh.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use async_nats::jetstream::context::PublishAckFuture;
use async_nats::jetstream::{self, message::PublishMessage};
use futures_util::StreamExt;
use serde_json::json;
use tokio::time::Instant;

use crate::cli::{NatsPublishArgs, NatsReadArgs};
use crate::payload::{event_json, min_fixed_size, now_ns, read_stamp};
use crate::publish::announce_until;
use crate::tally::Tally;

async fn connect(server: &str) -> Result<async_nats::Client, String> {
    async_nats::ConnectOptions::new()
        .connection_timeout(Duration::from_secs(5))
        .connect(server)
        .await
        .map_err(|e| format!("cannot connect to {server}: {e}"))
}

pub async fn read(args: NatsReadArgs) -> Result<(), String> {
    let client = connect(&args.server).await?;
    let js = jetstream::new(client);
    let deadline = Instant::now() + Duration::from_secs_f64(args.timeout.max(0.0));
    let mut stream = js
        .get_stream(&args.stream)
        .await
        .map_err(|e| format!("stream {}: {e}", args.stream))?;
    let info = stream
        .info()
        .await
        .map_err(|e| format!("stream {}: {e}", args.stream))?;
    let (total, first, last) = (
        info.state.messages,
        info.state.first_sequence,
        info.state.last_sequence,
    );
    let replicas = info.config.num_replicas;
    let mut tally = Tally::with_capacity(args.expect.max(1024));
    let mut subjects: BTreeMap<String, u64> = BTreeMap::new();
    let mut read = 0u64;
    // Message by message (a direct read by sequence, 64 at once): no
    // consumer state, nothing left behind on the server.
    let stream = &stream;
    // A cluster still electing a leader answers 503 ("JetStream system
    // temporarily unavailable"): asked again until the deadline, never
    // skipped (a chaos run's reader once counted 29,749 stored events as
    // missing that way). Only a sequence that is not there is skipped.
    let get = |seq: u64| async move {
        loop {
            match stream.get_raw_message(seq).await {
                Err(e) if transient(&e) && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => return (seq, other),
            }
        }
    };
    let mut gets = futures_util::stream::iter(first.max(1)..=last)
        .map(get)
        .buffered(64);
    while read < total {
        let left = deadline.saturating_duration_since(Instant::now());
        let msg = match tokio::time::timeout(left, gets.next()).await {
            Ok(Some((_, Ok(m)))) => m,
            // A deleted sequence (none in these tests, but possible).
            Ok(Some((seq, Err(e)))) => {
                eprintln!("loadgen nats-read: message {seq}: {e}");
                continue;
            }
            Ok(None) => break,
            Err(_) => {
                return Err(format!(
                    "read {read} of {total} messages within the timeout"
                ))
            }
        };
        read += 1;
        *subjects.entry(msg.subject.to_string()).or_default() += 1;
        // Numbered events only when asked (other payloads may hold any "seq").
        // "Arrival" is the store time: rate is stored events/s between the
        // first and the last numbered one, latency is store time minus the
        // send time the generator wrote into the event.
        if args.expect > 0 {
            let stored = u64::try_from(msg.time.unix_timestamp_nanos()).unwrap_or(0);
            match read_stamp(&msg.payload) {
                Some(s) => tally.record(s.seq, s.t_ns, msg.payload.len(), stored),
                None => tally.record_unreadable(),
            }
        }
    }
    let mut summary = tally.summary(args.expect);
    summary["mode"] = json!("nats-read");
    summary["messages"] = json!(read);
    summary["stream_messages"] = json!(total);
    summary["replicas"] = json!(replicas);
    summary["subjects"] = json!(subjects);
    println!("{summary}");
    Ok(())
}

/// Whether a direct get failed for a reason that passes (no leader, a
/// timeout), not because the message is not there.
fn transient(e: &async_nats::jetstream::stream::LastRawMessageError) -> bool {
    use async_nats::jetstream::stream::LastRawMessageErrorKind as Kind;
    !matches!(e.kind(), Kind::NoMessageFound | Kind::InvalidSubject)
}

pub async fn publish(args: NatsPublishArgs) -> Result<(), String> {
    let client = connect(&args.server).await?;
    let gen = &args.gen;
    let size = if gen.size == 0 {
        min_fixed_size(&gen.topic, 10_000_000)
    } else {
        gen.size
    };
    let window = usize::from(args.inflight.max(1));
    let js = jetstream::ContextBuilder::new()
        .timeout(Duration::from_secs(10))
        .max_ack_inflight(window)
        .backpressure_on_inflight(true)
        .build(client);
    let subject = gen.topic.replace('/', ".");
    // The stream the repeater would create, if it is not there yet.
    let token = subject.split('.').next().unwrap_or("bench").to_string();
    js.get_or_create_stream(jetstream::stream::Config {
        name: args.stream.clone(),
        subjects: vec![token.clone(), format!("{token}.>")],
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    })
    .await
    .map_err(|e| format!("stream {}: {e}", args.stream))?;
    // The same window as the repeater: at most `window` unacknowledged.
    let mut pending: VecDeque<PublishAckFuture> = VecDeque::with_capacity(window);
    let mut acked = 0u64;
    let send = |seq: u64| {
        let js = js.clone();
        let subject = subject.clone();
        let topic = gen.topic.clone();
        async move {
            let msg = PublishMessage::build()
                .payload(event_json(&topic, seq, now_ns(), size).into())
                .message_id(format!("loadgen:{seq}"));
            js.send_publish(subject, msg)
                .await
                .map_err(|e| format!("publish: {e}"))
        }
    };
    if let Some(file) = &gen.ready_file {
        announce_until(file, || async {
            send(0).await?.await.map(|_| ()).map_err(|e| e.to_string())
        })
        .await?;
    }
    // Warm-up events (numbered 0, one message id: stored once) go through
    // the same window first, as the repeater's path gets its warm-up; the
    // span and the pacing start at the first numbered event.
    let mut started = Instant::now();
    let mut err = None;
    for i in 0..gen.warmup + gen.count {
        let numbered = i.checked_sub(gen.warmup);
        if numbered == Some(0) {
            started = Instant::now();
        }
        if let Some(after) = numbered.and_then(|n| crate::payload::due_after(n, gen.rate)) {
            let due = started + after;
            if due > Instant::now() {
                tokio::time::sleep_until(due).await;
            }
        }
        if pending.len() >= window {
            if let Some(ack) = pending.pop_front() {
                match ack.await {
                    Ok(_) => acked += 1,
                    Err(e) => err = Some(e.to_string()),
                }
            }
        }
        pending.push_back(send(numbered.map_or(0, |n| n + 1)).await?);
    }
    while let Some(ack) = pending.pop_front() {
        match ack.await {
            Ok(_) => acked += 1,
            Err(e) => err = Some(e.to_string()),
        }
    }
    let span = started.elapsed();
    println!(
        "{}",
        json!({
            "mode": "nats-publish",
            "count": gen.count,
            "inflight": window,
            "payload_bytes": size,
            "acked": acked,
            "warmup": gen.warmup,
            "span_s": span.as_secs_f64(),
            "rate": (gen.count as f64 / span.as_secs_f64()).round(),
        })
    );
    match err {
        Some(e) => Err(format!("not every publish was acknowledged: {e}")),
        None => Ok(()),
    }
}
