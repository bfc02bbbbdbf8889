//! `loadgen subscribe`: count what arrives and print one summary line.

use std::path::Path;
use std::time::Duration;

use rumqttc::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions, Packet, QoS};
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio::time::Instant;

use crate::cli::{host_port, SubscribeArgs};
use crate::payload::{now_ns, read_stamp, MAX_PACKET};
use crate::publish::qos_of;
use crate::tally::Tally;

pub async fn run(args: SubscribeArgs) -> Result<(), String> {
    let (client, mut eventloop) = connect(&args)?;
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    let mut sub = Subscriber::new(&args);
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let reason = loop {
        tokio::select! {
            event = eventloop.poll() => sub.on_event(event, &client).await?,
            _ = term.recv() => break "signal",
            _ = int.recv() => break "signal",
            _ = tick.tick() => if let Some(reason) = sub.on_tick() {
                break reason;
            },
        }
    };
    sub.print_summary(reason);
    Ok(())
}

fn connect(args: &SubscribeArgs) -> Result<(AsyncClient, EventLoop), String> {
    let (host, port) = host_port(&args.broker)?;
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
    Ok((client, eventloop))
}

/// What the subscription has seen so far, and when it should stop.
struct Subscriber<'a> {
    args: &'a SubscribeArgs,
    qos: QoS,
    tally: Tally,
    deadline: Instant,
    idle: Duration,
    last_message: Option<Instant>,
    done_at: Option<Instant>,
    ready_written: bool,
    connects: u32,
    disconnects: u32,
    error_shown: bool,
    next_progress: Option<(Instant, Duration)>,
}

impl<'a> Subscriber<'a> {
    fn new(args: &'a SubscribeArgs) -> Self {
        let mut tally = Tally::with_capacity(args.expect.max(1024));
        tally.from_first = args.from_first;
        let started = Instant::now();
        Subscriber {
            args,
            qos: qos_of(args.qos),
            tally,
            deadline: started + Duration::from_secs_f64(args.timeout.max(0.0)),
            idle: Duration::from_secs_f64(args.idle.max(0.0)),
            last_message: None,
            done_at: None,
            ready_written: false,
            connects: 0,
            disconnects: 0,
            error_shown: false,
            next_progress: args
                .progress_ms
                .map(|ms| (started, Duration::from_millis(ms.max(10)))),
        }
    }

    async fn on_event(
        &mut self,
        event: Result<Event, ConnectionError>,
        client: &AsyncClient,
    ) -> Result<(), String> {
        match event {
            Ok(Event::Incoming(Packet::Publish(p))) => self.on_message(&p.payload)?,
            Ok(Event::Incoming(Packet::SubAck(_))) => {
                if let Some(file) = &self.args.subscribed_file {
                    write_marker(file, b"subscribed\n")?;
                }
            }
            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                self.connects += 1;
                self.error_shown = false;
                if !ack.session_present || self.connects == 1 {
                    client
                        .try_subscribe(self.args.topic.clone(), self.qos)
                        .map_err(|e| format!("subscribe: {e}"))?;
                }
            }
            Ok(_) => {}
            Err(e) => {
                self.disconnects += 1;
                if !self.error_shown {
                    eprintln!("loadgen subscribe: broker connection: {e}; retrying");
                    self.error_shown = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Ok(())
    }

    fn on_message(&mut self, payload: &[u8]) -> Result<(), String> {
        let now = now_ns();
        match read_stamp(payload) {
            Some(s) => self.tally.record(s.seq, s.t_ns, payload.len(), now),
            None => self.tally.record_unreadable(),
        }
        self.last_message = Some(Instant::now());
        if !self.ready_written {
            self.ready_written = true;
            if let Some(file) = &self.args.ready_file {
                write_marker(file, b"ready\n")?;
            }
        }
        let expect = self.args.expect;
        if self.done_at.is_none() && expect > 0 && self.tally.complete(expect) {
            self.done_at = Some(Instant::now() + Duration::from_millis(self.args.linger_ms));
        }
        Ok(())
    }

    /// Prints progress when due; returns why to stop, if it is time.
    fn on_tick(&mut self) -> Option<&'static str> {
        let now = Instant::now();
        if let Some((at, every)) = self.next_progress.as_mut() {
            if now >= *at {
                *at = now + *every;
                self.print_progress();
            }
        }
        if self.done_at.is_some_and(|d| now >= d) {
            return Some("complete");
        }
        if self
            .last_message
            .is_some_and(|l| now.duration_since(l) >= self.idle)
        {
            return Some("idle");
        }
        (now >= self.deadline).then_some("timeout")
    }

    fn print_progress(&self) {
        let tally = &self.tally;
        eprintln!(
            "{}",
            json!({
                "progress": true,
                "received": tally.received,
                "distinct": tally.distinct,
                "duplicates": tally.duplicates,
                "max_seq": tally.max_seq,
                "warmup": tally.warmup,
                "connects": self.connects,
            })
        );
    }

    fn print_summary(mut self, reason: &str) {
        let mut summary = self.tally.summary(self.args.expect);
        summary["mode"] = json!("subscribe");
        summary["qos"] = json!(self.args.qos);
        summary["stopped"] = json!(reason);
        summary["connects"] = json!(self.connects);
        summary["connection_errors"] = json!(self.disconnects);
        summary["cpu_s"] = json!(crate::own_cpu_s());
        println!("{summary}");
    }
}

fn write_marker(file: &Path, text: &[u8]) -> Result<(), String> {
    std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))
}
