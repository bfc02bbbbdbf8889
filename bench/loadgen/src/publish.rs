//! `loadgen publish`: numbered events straight to the broker (QoS 1 and 2
//! through [`crate::pipelined`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Outgoing, Packet, QoS};
use serde_json::json;
use tokio::time::Instant;

use crate::cli::{host_port, GenArgs, PublishArgs};
use crate::payload::{event_json, min_fixed_size, now_ns, MAX_PACKET};

/// What the event loop task has seen.
#[derive(Default)]
struct Progress {
    connected: AtomicBool,
    /// Set before the disconnect, which ends the connection on purpose.
    closing: AtomicBool,
    /// Publish packets written to the network.
    written: AtomicU64,
    /// PUBACKs (QoS 1) or PUBCOMPs (QoS 2) received.
    acked: AtomicU64,
}

pub fn qos_of(q: u8) -> QoS {
    match q {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

pub async fn run(args: PublishArgs) -> Result<(), String> {
    let (host, port) = host_port(&args.broker)?;
    let gen = &args.gen;
    let size = payload_size(gen);
    let qos = qos_of(args.qos);
    if qos != QoS::AtMostOnce {
        return crate::pipelined::run(
            host,
            port,
            args.qos,
            qos,
            args.inflight,
            &gen.topic,
            size,
            gen.rate,
            gen.warmup,
            gen.count,
            gen.ready_file.as_deref(),
        )
        .await;
    }
    let (client, progress) = connect(host, port, args.inflight).await?;

    let send = |seq: u64| {
        let client = client.clone();
        let topic = gen.topic.clone();
        async move {
            client
                .publish(
                    topic,
                    qos,
                    false,
                    event_json(&gen.topic, seq, now_ns(), size),
                )
                .await
                .map_err(|e| format!("publish: {e}"))
        }
    };
    let mut total = 0u64;
    if let Some(file) = &gen.ready_file {
        total += announce_until(file, || send(0)).await?;
    }
    paced(gen.warmup, gen.rate, |_| send(0)).await?;
    total += gen.warmup;
    let started = Instant::now();
    paced(gen.count, gen.rate, |i| send(i + 1)).await?;
    total += gen.count;
    let queued = started.elapsed();

    let done = |p: &Progress| match qos {
        QoS::AtMostOnce => p.written.load(Ordering::Relaxed) >= total,
        _ => p.acked.load(Ordering::Relaxed) >= total,
    };
    let finished = wait_until(Duration::from_secs(120), || done(&progress)).await;
    let span = started.elapsed();
    progress.closing.store(true, Ordering::Release);
    let _ = client.disconnect().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    print_summary(&args, size, &progress, queued, span);
    finished
        .map(|_| ())
        .ok_or_else(|| "not every publish was written/acknowledged within 120 s".to_string())
}

/// The payload size asked for, or the smallest that fits every sequence number.
fn payload_size(gen: &GenArgs) -> usize {
    if gen.size == 0 {
        min_fixed_size(&gen.topic, 10_000_000)
    } else {
        gen.size
    }
}

/// Connects, with a task counting what the event loop writes and receives;
/// returns once connected.
async fn connect(
    host: String,
    port: u16,
    inflight: u16,
) -> Result<(AsyncClient, Arc<Progress>), String> {
    let mut opts = MqttOptions::new(format!("loadgen-pub-{}", std::process::id()), host, port);
    opts.set_keep_alive(Duration::from_secs(30))
        .set_max_packet_size(MAX_PACKET, MAX_PACKET)
        .set_inflight(inflight.max(1));
    let (client, mut eventloop) = AsyncClient::new(opts, 1024);
    // The instrument should not add Nagle delays of its own.
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    eventloop.set_network_options(net);
    let progress = Arc::new(Progress::default());
    tokio::spawn(watch(eventloop, Arc::clone(&progress)));
    wait_until(Duration::from_secs(30), || {
        progress.connected.load(Ordering::Acquire)
    })
    .await
    .ok_or("cannot connect to the broker within 30 s; is it running?")?;
    Ok((client, progress))
}

/// Drives the event loop, noting connection, writes and acknowledgements.
async fn watch(mut eventloop: EventLoop, seen: Arc<Progress>) {
    loop {
        match eventloop.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(_))) => {
                seen.connected.store(true, Ordering::Release)
            }
            Ok(Event::Outgoing(Outgoing::Publish(_))) => {
                seen.written.fetch_add(1, Ordering::Relaxed);
            }
            Ok(Event::Incoming(Packet::PubAck(_) | Packet::PubComp(_))) => {
                seen.acked.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
            Err(_) if seen.closing.load(Ordering::Acquire) => return,
            Err(e) => {
                seen.connected.store(false, Ordering::Release);
                eprintln!("loadgen publish: broker connection: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

fn print_summary(
    args: &PublishArgs,
    size: usize,
    progress: &Progress,
    queued: Duration,
    span: Duration,
) {
    let count = args.gen.count;
    println!(
        "{}",
        json!({
            "mode": "publish",
            "qos": args.qos,
            "count": count,
            "payload_bytes": size,
            "written": progress.written.load(Ordering::Relaxed),
            "acked": progress.acked.load(Ordering::Relaxed),
            "queued_s": queued.as_secs_f64(),
            "span_s": span.as_secs_f64(),
            "rate": (count as f64 / span.as_secs_f64()).round(),
            "cpu_s": crate::own_cpu_s(),
        })
    );
}

/// Sends `send(i)` for `i` in `0..count`, `rate` per second (0 = unpaced).
pub async fn paced<F, Fut>(count: u64, rate: u64, mut send: F) -> Result<(), String>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let start = Instant::now();
    for i in 0..count {
        if let Some(after) = crate::payload::due_after(i, rate) {
            let due = start + after;
            if due > Instant::now() {
                tokio::time::sleep_until(due).await;
            }
        }
        send(i).await?;
    }
    Ok(())
}

/// Sends a warm-up event every 10 ms until `file` exists (60 s at most);
/// returns how many were sent.
pub async fn announce_until<F, Fut>(file: &Path, mut send: F) -> Result<u64, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut sent = 0;
    while !file.exists() {
        if Instant::now() > deadline {
            return Err(format!(
                "no subscriber reported ready ({} missing after 60 s); is every link up?",
                file.display()
            ));
        }
        send().await?;
        sent += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(sent)
}

/// Polls `check` every 2 ms until it holds or `timeout` passes.
pub async fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> Option<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return Some(());
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}
