//! `loadgen subscribe`: count what arrives and print one summary line.

use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet};
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::cli::{host_port, SubscribeArgs};
use crate::payload::{now_ns, read_stamp, MAX_PACKET};
use crate::publish::qos_of;
use crate::tally::Tally;

pub async fn run(args: SubscribeArgs) -> Result<(), String> {
    let (host, port) = host_port(&args.broker)?;
    let qos = qos_of(args.qos);
    let client_id = args
        .session
        .clone()
        .unwrap_or_else(|| format!("loadgen-sub-{}", std::process::id()));
    let mut opts = MqttOptions::new(client_id, host, port);
    opts.set_keep_alive(Duration::from_secs(30))
        .set_max_packet_size(MAX_PACKET, MAX_PACKET)
        .set_clean_session(args.session.is_none());
    let (client, mut eventloop) = AsyncClient::new(opts, 64);
    // The instrument should not add Nagle delays of its own.
    let mut net = rumqttc::NetworkOptions::new();
    net.set_tcp_nodelay(true);
    eventloop.set_network_options(net);
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;

    let mut tally = Tally::with_capacity(args.expect.max(1024));
    tally.from_first = args.from_first;
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.timeout.max(0.0));
    let idle = Duration::from_secs_f64(args.idle.max(0.0));
    let mut last_message: Option<Instant> = None;
    let mut done_at: Option<Instant> = None;
    let mut ready_written = false;
    let mut connects = 0u32;
    let mut disconnects = 0u32;
    let mut error_shown = false;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let mut next_progress = args
        .progress_ms
        .map(|ms| (started, Duration::from_millis(ms.max(10))));
    let reason = loop {
        tokio::select! {
            event = eventloop.poll() => match event {
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let now = now_ns();
                    match read_stamp(&p.payload) {
                        Some(s) => tally.record(s.seq, s.t_ns, p.payload.len(), now),
                        None => tally.record_unreadable(),
                    }
                    last_message = Some(Instant::now());
                    if !ready_written {
                        ready_written = true;
                        if let Some(file) = &args.ready_file {
                            std::fs::write(file, b"ready\n")
                                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
                        }
                    }
                    if done_at.is_none() && args.expect > 0 && tally.complete(args.expect) {
                        done_at = Some(Instant::now() + Duration::from_millis(args.linger_ms));
                    }
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(file) = &args.subscribed_file {
                        std::fs::write(file, b"subscribed\n")
                            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
                    }
                }
                Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                    connects += 1;
                    error_shown = false;
                    if !ack.session_present || connects == 1 {
                        client
                            .try_subscribe(args.topic.clone(), qos)
                            .map_err(|e| format!("subscribe: {e}"))?;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    disconnects += 1;
                    if !error_shown {
                        eprintln!("loadgen subscribe: broker connection: {e}; retrying");
                        error_shown = true;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            _ = term.recv() => break "signal",
            _ = int.recv() => break "signal",
            _ = tick.tick() => {
                let now = Instant::now();
                if let Some((at, every)) = next_progress.as_mut() {
                    if now >= *at {
                        *at = now + *every;
                        eprintln!("{}", json!({
                            "progress": true,
                            "received": tally.received,
                            "distinct": tally.distinct,
                            "duplicates": tally.duplicates,
                            "max_seq": tally.max_seq,
                            "warmup": tally.warmup,
                            "connects": connects,
                        }));
                    }
                }
                if done_at.is_some_and(|d| now >= d) {
                    break "complete";
                }
                if last_message.is_some_and(|l| now.duration_since(l) >= idle) {
                    break "idle";
                }
                if now >= deadline {
                    break "timeout";
                }
            }
        }
    };
    let mut summary = tally.summary(args.expect);
    summary["mode"] = json!("subscribe");
    summary["qos"] = json!(args.qos);
    summary["stopped"] = json!(reason);
    summary["connects"] = json!(connects);
    summary["connection_errors"] = json!(disconnects);
    println!("{summary}");
    Ok(())
}
