//! `loadgen publish` at QoS 1 and 2: the MQTT direct path, pipelined the way
//! the repeater's sink is (plugins/event-repeater/src/sink/mqtt/): up to
//! `--inflight` publishes unacknowledged, packet ids from that window,
//! handed to rumqttc's event loop and written all at once rather than one
//! per `poll()` (whose per-request throttle waits for tokio's next 1 ms
//! tick). So "direct" is the broker's limit with the repeater's window, not
//! the generator's.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use rumqttc::{
    AsyncClient, ConnectionError, Event, EventLoop, MqttOptions, Packet, Publish, QoS, Request,
};
use serde_json::json;
use tokio::time::Instant;

use crate::payload::{event_json, now_ns, MAX_PACKET};

/// The publisher: an event loop and the free packet ids of its window.
struct Pipe {
    el: EventLoop,
    free: VecDeque<u16>,
    window: usize,
    qos: QoS,
    topic: String,
    size: usize,
    acked: u64,
}

impl Pipe {
    fn in_flight(&self) -> usize {
        self.window - self.free.len()
    }

    /// Queues one publish of event `seq`; `false` when the window is full.
    fn queue(&mut self, seq: u64) -> bool {
        let Some(pkid) = self.free.pop_front() else {
            return false;
        };
        let mut p = Publish::new(
            self.topic.clone(),
            self.qos,
            event_json(&self.topic, seq, now_ns(), self.size),
        );
        p.pkid = pkid;
        self.el.pending.push_back(Request::Publish(p));
        true
    }

    /// Writes every queued publish and flushes once (as the repeater does).
    async fn write(&mut self) -> Result<(), ConnectionError> {
        let Some(network) = self.el.network.as_mut() else {
            return Ok(());
        };
        let mut wrote = false;
        while let Some(request) = self.el.pending.pop_front() {
            if let Some(packet) = self.el.state.handle_outgoing_packet(request)? {
                network.write(packet).await?;
                wrote = true;
            }
        }
        if wrote {
            tokio::time::timeout(Duration::from_secs(10), network.flush())
                .await
                .map_err(|_| ConnectionError::FlushTimeout)??;
        }
        Ok(())
    }

    /// Handles one event from the broker.
    async fn poll(&mut self) -> Result<(), String> {
        match self.el.poll().await {
            Ok(Event::Incoming(Packet::PubAck(a))) => self.done(a.pkid),
            Ok(Event::Incoming(Packet::PubComp(c))) => self.done(c.pkid),
            Ok(_) => {}
            Err(e) => return Err(format!("broker connection: {e}")),
        }
        Ok(())
    }

    fn done(&mut self, pkid: u16) {
        self.free.push_back(pkid);
        self.acked += 1;
    }

    /// Sends `seqs`, `rate` per second (0 = as fast as the window allows).
    async fn send(&mut self, seqs: impl Iterator<Item = u64>, rate: u64) -> Result<(), String> {
        let start = Instant::now();
        let mut seqs = seqs.enumerate().peekable();
        while seqs.peek().is_some() {
            let mut due = None;
            while let Some(&(i, seq)) = seqs.peek() {
                if let Some(after) = crate::payload::due_after(i as u64, rate) {
                    let at = start + after;
                    if at > Instant::now() {
                        due = Some(at);
                        break;
                    }
                }
                if !self.queue(seq) {
                    break;
                }
                seqs.next();
            }
            self.write().await.map_err(|e| format!("publish: {e}"))?;
            match due {
                Some(at) if !self.free.is_empty() => tokio::select! {
                    r = self.poll() => r?,
                    _ = tokio::time::sleep_until(at) => {}
                },
                _ => self.poll().await?,
            }
        }
        Ok(())
    }

    /// Waits until every publish is acknowledged (`timeout` at most).
    async fn drain(&mut self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while self.in_flight() > 0 {
            match tokio::time::timeout_at(end, self.poll()).await {
                Ok(Ok(())) => {}
                _ => return false,
            }
        }
        true
    }
}

/// The pipelined QoS 1/2 publisher; prints the same summary as `publish`.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    host: String,
    port: u16,
    qos_level: u8,
    qos: QoS,
    window: u16,
    topic: &str,
    size: usize,
    rate: u64,
    warmup: u64,
    count: u64,
    ready_file: Option<&Path>,
) -> Result<(), String> {
    let window = window.max(1);
    let mut opts = MqttOptions::new(format!("loadgen-pub-{}", std::process::id()), host, port);
    opts.set_keep_alive(Duration::from_secs(30))
        .set_max_packet_size(MAX_PACKET, MAX_PACKET)
        .set_inflight(window);
    let (client, mut el) = AsyncClient::new(opts, 16);
    el.network_options.set_tcp_nodelay(true);
    let connected = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match el.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(format!("cannot connect to the broker: {e}")),
            }
        }
    })
    .await
    .map_err(|_| "cannot connect to the broker within 30 s; is it running?".to_string())?;
    connected?;
    let mut pipe = Pipe {
        el,
        free: (1..=window).collect(),
        window: usize::from(window),
        qos,
        topic: topic.to_string(),
        size,
        acked: 0,
    };
    if let Some(file) = ready_file {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !file.exists() {
            if Instant::now() > deadline {
                return Err(format!(
                    "no subscriber reported ready ({} missing after 60 s); is every link up?",
                    file.display()
                ));
            }
            pipe.send(std::iter::once(0), 0).await?;
            pipe.drain(Duration::from_secs(10)).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    pipe.send((0..warmup).map(|_| 0), rate).await?;
    let started = Instant::now();
    pipe.send(1..=count, rate).await?;
    let queued = started.elapsed();
    let finished = pipe.drain(Duration::from_secs(120)).await;
    let span = started.elapsed();
    let _ = client.try_disconnect();
    let _ = tokio::time::timeout(Duration::from_millis(200), pipe.el.poll()).await;
    println!(
        "{}",
        json!({
            "mode": "publish",
            "qos": qos_level,
            "pipelined": true,
            "inflight": window,
            "count": count,
            "payload_bytes": size,
            "written": count,
            "acked": pipe.acked,
            "queued_s": queued.as_secs_f64(),
            "span_s": span.as_secs_f64(),
            "rate": (count as f64 / span.as_secs_f64()).round(),
        })
    );
    if finished {
        Ok(())
    } else {
        Err("not every publish was acknowledged within 120 s".into())
    }
}
