//! RabbitMQ Streams modes, through the `rabbitmq-stream-client` crate the
//! repeater uses: `rmq-read` reads a stream from its first message and
//! counts the numbered events (missing, duplicated); `rmq-publish`
//! publishes numbered events straight into a stream with the repeater's
//! window (one connection, a named producer, batches of up to 256 KiB),
//! the direct path of bench/relay-rmq.sh.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use rabbitmq_stream_client::types::{Message, OffsetSpecification, ResponseKind};
use rabbitmq_stream_client::{Client, ClientOptions, Environment};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::cli::{RmqPublishArgs, RmqReadArgs};
use crate::payload::{event_json, min_fixed_size, now_ns, read_stamp};
use crate::publish::announce_until;
use crate::tally::Tally;

pub async fn read(args: RmqReadArgs) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs_f64(args.timeout.max(0.0));
    let env = tokio::time::timeout(
        Duration::from_secs(10),
        Environment::builder()
            .host("127.0.0.1")
            .port(args.port)
            .build(),
    )
    .await
    .map_err(|_| "no answer from RabbitMQ within 10 s".to_string())?
    .map_err(|e| format!("cannot connect to RabbitMQ on {}: {e}", args.port))?;
    let mut consumer = env
        .consumer()
        .offset(OffsetSpecification::First)
        .build(&args.stream)
        .await
        .map_err(|e| format!("stream {}: {e}", args.stream))?;
    let mut tally = Tally::with_capacity(args.expect.max(1024));
    let mut messages = 0u64;
    loop {
        let quiet = if args.expect > 0 && tally.complete(args.expect) {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(3)
        };
        if Instant::now() >= deadline {
            break;
        }
        let wait = quiet.min(deadline.saturating_duration_since(Instant::now()));
        match tokio::time::timeout(wait, consumer.next()).await {
            Ok(Some(Ok(d))) => {
                messages += 1;
                let data = d.message().data().unwrap_or_default();
                match read_stamp(data) {
                    Some(s) => tally.record(s.seq, s.t_ns, data.len(), now_ns()),
                    None => tally.record_unreadable(),
                }
            }
            Ok(Some(Err(e))) => return Err(format!("reading {}: {e}", args.stream)),
            Ok(None) | Err(_) => break,
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), consumer.handle().close()).await;
    let mut summary = tally.summary(args.expect);
    summary["mode"] = json!("rmq-read");
    summary["messages"] = json!(messages);
    println!("{summary}");
    Ok(())
}

/// Confirmations as they arrive: `(confirmed ids, refused ids)`.
type Answers = mpsc::UnboundedReceiver<(Vec<u64>, usize)>;

async fn connect(port: u16) -> Result<(Client, Answers), String> {
    let opts = ClientOptions::builder()
        .host("127.0.0.1")
        .port(port)
        .build();
    let client = tokio::time::timeout(Duration::from_secs(10), Client::connect(opts))
        .await
        .map_err(|_| "no answer from RabbitMQ within 10 s".to_string())?
        .map_err(|e| format!("cannot connect to RabbitMQ on {port}: {e}"))?;
    let (tx, rx) = mpsc::unbounded_channel();
    client
        .set_handler(move |item: rabbitmq_stream_client::types::MessageResult| {
            let tx = tx.clone();
            async move {
                if let Some(Ok(r)) = item {
                    match r.kind() {
                        ResponseKind::PublishConfirm(c) => {
                            let _ = tx.send((c.publishing_ids.clone(), 0));
                        }
                        ResponseKind::PublishError(e) => {
                            let _ = tx.send((Vec::new(), e.publishing_errors.len()));
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
        })
        .await;
    Ok((client, rx))
}

pub async fn publish(args: RmqPublishArgs) -> Result<(), String> {
    let gen = &args.gen;
    let size = if gen.size == 0 {
        min_fixed_size(&gen.topic, 10_000_000)
    } else {
        gen.size
    };
    let stream = args.stream.clone().unwrap_or_else(|| gen.topic.clone());
    let (client, mut answers) = connect(args.port).await?;
    let created = client
        .create_stream(&stream, HashMap::new())
        .await
        .map_err(|e| format!("create {stream}: {e}"))?;
    use rabbitmq_stream_client::types::ResponseCode;
    if !matches!(created.code(), ResponseCode::Ok | ResponseCode::StreamAlreadyExists) {
        return Err(format!("create {stream}: {:?}", created.code()));
    }

    let declared = client
        .declare_publisher(1, Some("loadgen".into()), &stream)
        .await
        .map_err(|e| format!("declare a producer on {stream}: {e}"))?;
    if !declared.is_ok() {
        return Err(format!(
            "declare a producer on {stream}: {:?}",
            declared.code()
        ));
    }
    let mut next_id = client
        .query_publisher_sequence("loadgen", &stream)
        .await
        .map_err(|e| e.to_string())?
        + 1;
    let window = args.inflight.max(1);
    let (mut inflight, mut acked, mut refused) = (0usize, 0u64, 0usize);
    let topic = gen.topic.clone();
    let wait =
        |inflight: &mut usize, acked: &mut u64, refused: &mut usize, answers: &mut Answers| {
            let got = answers.try_recv();
            if let Ok((ok, bad)) = got {
                *inflight -= ok.len() + bad;
                *acked += ok.len() as u64;
                *refused += bad;
                true
            } else {
                false
            }
        };
    let send = |client: &Client, batch: Vec<Message>| {
        let client = client.clone();
        async move {
            client
                .publish(1, batch, 1)
                .await
                .map(|_| ())
                .map_err(|e| format!("publish: {e}"))
        }
    };
    if let Some(file) = &gen.ready_file {
        announce_until(file, || async { Ok(()) }).await?;
    }
    let total = gen.warmup + gen.count;
    let mut started = Instant::now();
    let mut i = 0u64;
    while i < total || inflight > 0 {
        while wait(&mut inflight, &mut acked, &mut refused, &mut answers) {}
        if i < total && inflight < window {
            let mut batch = Vec::new();
            let mut bytes = 0;
            while i < total && inflight < window && bytes < 256 * 1024 {
                let numbered = i.checked_sub(gen.warmup);
                if numbered == Some(0) {
                    started = Instant::now();
                }
                if let Some(ns) =
                    numbered.and_then(|n| n.saturating_mul(1_000_000_000).checked_div(gen.rate))
                {
                    let due = started + Duration::from_nanos(ns);
                    if due > Instant::now() {
                        break;
                    }
                }
                let body = event_json(&topic, numbered.map_or(0, |n| n + 1), now_ns(), size);
                bytes += body.len();
                batch.push(Message::builder().publishing_id(next_id).body(body).build());
                next_id += 1;
                inflight += 1;
                i += 1;
            }
            if !batch.is_empty() {
                send(&client, batch).await?;
                continue;
            }
        }
        match tokio::time::timeout(Duration::from_millis(1), answers.recv()).await {
            Ok(Some((ok, bad))) => {
                inflight -= ok.len() + bad;
                acked += ok.len() as u64;
                refused += bad;
            }
            Ok(None) => return Err("the connection to RabbitMQ ended".into()),
            Err(_) => {}
        }
    }
    let span = started.elapsed();
    let _ = tokio::time::timeout(Duration::from_secs(2), client.close()).await;
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
