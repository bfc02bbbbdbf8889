//! RabbitMQ Streams modes, through the repeater's own stream protocol
//! client (`app_event_repeater::sink::rabbitmq_stream::client`, the code
//! the sink publishes with): `rmq-read` reads a stream from its first
//! message and counts the numbered events (missing, duplicated), with the
//! rate and latency as the node stored them (each chunk's timestamp, the
//! writer's clock in ms: read once at the end, the same for every
//! publisher, so the timing loads neither path);
//! `rmq-publish` publishes numbered events straight into a stream with the
//! repeater's window (one connection, a named producer, batches of up to
//! 256 KiB), the direct path of the RabbitMQ bench.

use std::time::Duration;

use app_event_repeater::sink::rabbitmq_stream::client::proto::{amqp_body, code, code_name};
use app_event_repeater::sink::rabbitmq_stream::client::{self, Batch, Client, Event, Options};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cli::{RmqPublishArgs, RmqReadArgs};
use crate::payload::{event_json, min_fixed_size, now_ns, read_stamp};
use crate::publish::announce_until;
use crate::tally::Tally;

/// Chunks RabbitMQ may send ahead of the reader.
const CREDIT: u16 = 10;

/// RabbitMQ's response code for a stream that is not there.
const STREAM_DOES_NOT_EXIST: u16 = 2;

async fn connect(port: u16, name: &str) -> Result<(Client, mpsc::Receiver<Event>), String> {
    let mut o = Options::new("127.0.0.1", port);
    o.connection_name = name;
    o.timeout = Duration::from_secs(10);
    // RabbitMQ delivers chunks over the tuned frame size (1 MiB and more
    // with 16 KiB events); only this process's memory is at stake.
    o.read_max = 64 << 20;
    client::connect(&o)
        .await
        .map_err(|e| format!("cannot connect to RabbitMQ on {port}: {e}"))
}

pub async fn read(args: RmqReadArgs) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs_f64(args.timeout.max(0.0));
    let (client, mut events) = connect(args.port, "loadgen rmq-read").await?;
    // A stream not there yet is waited for, --idle seconds at most: a
    // reader started before its publisher (bench/instructions.sh) cannot
    // create the stream itself, as RabbitMQ then refuses the publisher's
    // create with other arguments (max-age) as a precondition failure.
    let wait_until = Instant::now()
        + Duration::from_secs_f64(args.idle.max(0.0))
            .min(deadline.saturating_duration_since(Instant::now()));
    loop {
        match client.subscribe(1, &args.stream, CREDIT).await? {
            code::OK => break,
            STREAM_DOES_NOT_EXIST if Instant::now() < wait_until => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            c => return Err(format!("stream {}: {}", args.stream, code_name(c))),
        }
    }
    let mut tally = Tally::with_capacity(args.expect.max(1024));
    let mut messages = 0u64;
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
        match tokio::time::timeout(wait, events.recv()).await {
            Ok(Some(Event::Delivered(_, chunk))) => {
                // Store time, ns: the chunk's (ms) timestamp.
                let stored = u64::try_from(chunk.timestamp_ms).unwrap_or(0) * 1_000_000;
                for m in &chunk.records {
                    messages += 1;
                    let body = amqp_body(m);
                    match body.and_then(read_stamp) {
                        Some(s) => tally.record(s.seq, s.t_ns, body.map_or(0, <[u8]>::len), stored),
                        None => tally.record_unreadable(),
                    }
                }
                client.credit(1, 1).await?;
            }
            Ok(Some(Event::Closed(why))) => return Err(format!("reading {}: {why}", args.stream)),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => break,
        }
    }
    client.close(Duration::from_secs(2)).await;
    let mut summary = tally.summary(args.expect);
    summary["mode"] = json!("rmq-read");
    summary["messages"] = json!(messages);
    if args.delete {
        // On a connection of its own: the reading one would get the
        // stream's metadata update and end before the answer.
        let (client, _events) = connect(args.port, "loadgen rmq-read delete").await?;
        let deleted = client.delete_stream(&args.stream).await?;
        client.close(Duration::from_secs(2)).await;
        if deleted != code::OK {
            return Err(format!("delete {}: {}", args.stream, code_name(deleted)));
        }
        summary["deleted"] = json!(true);
    }
    println!("{summary}");
    Ok(())
}

pub async fn publish(args: RmqPublishArgs) -> Result<(), String> {
    let gen = &args.gen;
    let size = if gen.size == 0 {
        min_fixed_size(&gen.topic, 10_000_000)
    } else {
        gen.size
    };
    let stream = args.stream.clone().unwrap_or_else(|| gen.topic.clone());
    let (client, mut events) = connect(args.port, "loadgen rmq-publish").await?;
    let created = client.create_stream(&stream, &[]).await?;
    if !matches!(created, code::OK | code::STREAM_ALREADY_EXISTS) {
        return Err(format!("create {stream}: {}", code_name(created)));
    }
    let declared = client
        .declare_publisher(1, Some("loadgen"), &stream)
        .await?;
    if declared != code::OK {
        return Err(format!(
            "declare a producer on {stream}: {}",
            code_name(declared)
        ));
    }
    let mut next_id = client.query_publisher_sequence("loadgen", &stream).await? + 1;
    let window = args.inflight.max(1);
    let (mut inflight, mut acked, mut refused) = (0usize, 0u64, 0usize);
    let topic = gen.topic.clone();
    let mut settle = |ev: Event, inflight: &mut usize| -> Result<(), String> {
        match ev {
            Event::Confirmed(_, ids) => {
                *inflight = inflight.saturating_sub(ids.len());
                acked += ids.len() as u64;
            }
            Event::Failed(_, errs) => {
                *inflight = inflight.saturating_sub(errs.len());
                refused += errs.len();
            }
            Event::Closed(why) => return Err(format!("the connection to RabbitMQ ended: {why}")),
            Event::Delivered(..) => {}
        }
        Ok(())
    };
    if let Some(file) = &gen.ready_file {
        announce_until(file, || async { Ok(()) }).await?;
    }
    let total = gen.warmup + gen.count;
    let mut started = Instant::now();
    let mut i = 0u64;
    while i < total || inflight > 0 {
        while let Ok(ev) = events.try_recv() {
            settle(ev, &mut inflight)?;
        }
        if i < total && inflight < window {
            let mut batch = Batch::new(1);
            while i < total && inflight < window && batch.bytes() < 256 * 1024 {
                let numbered = i.checked_sub(gen.warmup);
                if numbered == Some(0) {
                    started = Instant::now();
                }
                if let Some(after) = numbered.and_then(|n| crate::payload::due_after(n, gen.rate)) {
                    let due = started + after;
                    if due > Instant::now() {
                        break;
                    }
                }
                let body = event_json(&topic, numbered.map_or(0, |n| n + 1), now_ns(), size);
                batch.push(next_id, body.as_bytes());
                next_id += 1;
                inflight += 1;
                i += 1;
            }
            if batch.count() > 0 {
                client.publish(batch).await?;
                continue;
            }
        }
        match tokio::time::timeout(Duration::from_millis(1), events.recv()).await {
            Ok(Some(ev)) => settle(ev, &mut inflight)?,
            Ok(None) => return Err("the connection to RabbitMQ ended".into()),
            Err(_) => {}
        }
    }
    let span = started.elapsed();
    client.close(Duration::from_secs(2)).await;
    println!(
        "{}",
        json!({
            "mode": "rmq-publish",
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
        return Err(format!("{refused} publishes were refused"));
    }
    Ok(())
}
