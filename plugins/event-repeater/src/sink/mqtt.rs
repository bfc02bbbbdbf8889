//! The MQTT sink: one task that owns and polls the rumqttc event loop.
//!
//! # Delivery
//! rumqttc keeps unacknowledged publishes only while the broker keeps the
//! session; after a reconnect into a new session it drops them silently. So
//! this task keeps its own book of every publish not yet acknowledged, keyed
//! by a packet id it assigns itself from a window of `--inflight` ids, and
//! when the broker comes back without our session it publishes every one of
//! them again, oldest first (duplicates are possible, loss is not). A QoS 1
//! publish is done on PUBACK, a QoS 2 one on PUBCOMP, a QoS 0 one once
//! written.
//!
//! Publishes are handed to the event loop through its `pending` queue, with
//! our packet ids (rumqttc keeps a non-zero id it is given). To pick up new
//! events while `poll()` waits on the network, the poll future is dropped and
//! polled again; that is only done while `pending` is empty, because then no
//! publish can be half-way through rumqttc's write path (which is where
//! dropping the future could lose one).
//!
//! # Sessions
//! The first connection of a process starts a clean session (nothing from an
//! earlier process can be resumed, and a stale QoS 2 state at the broker could
//! swallow a reused packet id); every reconnect after that asks for the
//! persistent session (`clean_session=false`, stable client id), so that the
//! broker, when it kept the session, holds what it already acknowledged.
//! `--clean-session` asks for a clean session on every connection.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::{
    AsyncClient, ConnectionError, Event, EventLoop, MqttOptions, Outgoing, Packet, Publish, QoS,
    Request, TlsConfiguration, Transport,
};

use crate::backoff::Backoff;
use crate::buffer::{Buffer, Record};
use crate::cli::Qos;
use crate::config::{Endpoint, MqttConfig};
use crate::metrics::{inc, Metrics};
use crate::routes::MAX_TOPIC_LEN;
use crate::sink::{until, Drain, Refusal};
use app_plugin::log::{RateLimited, WARN};

fn qos(q: Qos) -> QoS {
    match q {
        Qos::AtMostOnce => QoS::AtMostOnce,
        Qos::AtLeastOnce => QoS::AtLeastOnce,
        Qos::ExactlyOnce => QoS::ExactlyOnce,
    }
}

/// Builds the rumqttc options for the preferred broker; an error is a TLS
/// set-up problem.
pub fn options(cfg: &MqttConfig) -> Result<MqttOptions, String> {
    options_for(cfg, &cfg.endpoints()[0], &cfg.client_id)
}

/// The rumqttc options for `broker`, as `client_id`.
fn options_for(
    cfg: &MqttConfig,
    broker: &Endpoint,
    client_id: &str,
) -> Result<MqttOptions, String> {
    let mut o = MqttOptions::new(client_id, broker.host.clone(), broker.port);
    // With brokers to fail over to, a broker that stops answering pings is
    // noticed within about two --ack-timeouts even when nothing is published.
    let keep_alive = if cfg.failover.is_empty() {
        Duration::from_secs(10)
    } else {
        cfg.ack_timeout.max(Duration::from_secs(1))
    };
    o.set_keep_alive(keep_alive);
    o.set_max_packet_size(cfg.max_packet_size, cfg.max_packet_size);
    o.set_inflight(cfg.inflight);
    o.set_clean_session(true);
    if let Some(user) = &cfg.username {
        o.set_credentials(user.clone(), cfg.password.clone().unwrap_or_default());
    }
    if broker.tls {
        o.set_transport(Transport::tls_with_config(tls_config(cfg)?));
    }
    Ok(o)
}

/// Whether the TLS set-up for `cfg` works: `--ca-file` a regular file of
/// at most 1 MiB holding at least one certificate, or the system's CA
/// certificates; checked at start, read again at each connection.
pub fn check_tls(cfg: &MqttConfig) -> Result<(), String> {
    tls_config(cfg).map(|_| ())
}

fn tls_config(cfg: &MqttConfig) -> Result<TlsConfiguration, String> {
    let mut roots = rustls::RootCertStore::empty();
    match &cfg.ca_file {
        Some(path) => {
            let pem = crate::files::read_file(path, "--ca-file", 1 << 20)?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| format!("--ca-file {}: {e}", path.display()))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("--ca-file {}: {e}", path.display()))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    if roots.is_empty() {
        return Err(match &cfg.ca_file {
            Some(path) => format!(
                "--ca-file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----); pass the CA that signed the broker's certificate",
                path.display()
            ),
            None => "no CA certificates to verify the broker with; pass --ca-file".into(),
        });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS set-up failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConfiguration::Rustls(Arc::new(config)))
}

/// Why MQTT cannot take an event of `payload_len` bytes under `topic` (the
/// router asks before buffering, the sink again for the record it takes).
///
/// A topic name to publish to is not empty, holds no wildcard (`+`, `#`),
/// and none of the code points MQTT says it must not or should not:
/// U+0000, the controls U+0001–U+001F and U+007F–U+009F, and the
/// non-characters (U+FDD0–U+FDEF, U+xFFFE, U+xFFFF). mosquitto treats any of
/// them as a malformed packet and drops the connection, so publishing one
/// would make the repeater resend it on every reconnect.
pub fn refuse(topic: &str, payload_len: usize, max_packet: usize) -> Option<Refusal> {
    let bad_char = |c: char| {
        let c = u32::from(c);
        c <= 0x1F
            || (0x7F..=0x9F).contains(&c)
            || (0xFDD0..=0xFDEF).contains(&c)
            || c & 0xFFFE == 0xFFFE
    };
    if topic.is_empty() || topic.len() > MAX_TOPIC_LEN || topic.contains(['+', '#']) {
        return Some(Refusal::InvalidTopic(format!(
            "{topic:?} is not a valid MQTT topic to publish to (empty, over {MAX_TOPIC_LEN} bytes, or with a wildcard '+' or '#')"
        )));
    }
    if topic.chars().any(bad_char) {
        return Some(Refusal::InvalidTopic(format!(
            "{topic:?} holds a control character or a Unicode non-character, which MQTT brokers refuse"
        )));
    }
    // Fixed header (≤ 5) + topic length (2) + topic + packet id (2) + payload.
    let size = 5 + 2 + topic.len() + 2 + payload_len;
    if size > max_packet {
        return Some(Refusal::TooLarge(format!(
            "the event is {payload_len} bytes, over the --max-packet-size of {max_packet} bytes for a publish to {topic:?}"
        )));
    }
    None
}

struct Slot {
    rec: Record,
    /// Written at least once (so a later write is a republish).
    sent: bool,
}

/// Our own record of every publish handed to rumqttc and not yet done.
struct Book {
    qos: QoS,
    retain: bool,
    /// Indexed by packet id (1..=window); QoS 1 and 2.
    slots: Vec<Option<Slot>>,
    free: VecDeque<u16>,
    used: usize,
    /// QoS 0 publishes handed over and not yet written, in order.
    qos0: VecDeque<Record>,
    window: usize,
}

impl Book {
    fn new(qos: QoS, retain: bool, window: u16) -> Book {
        Book {
            qos,
            retain,
            slots: (0..=window).map(|_| None).collect(),
            free: (1..=window).collect(),
            used: 0,
            qos0: VecDeque::new(),
            window: window as usize,
        }
    }

    fn len(&self) -> usize {
        self.used + self.qos0.len()
    }

    fn has_room(&self) -> bool {
        match self.qos {
            QoS::AtMostOnce => self.qos0.len() < self.window,
            _ => !self.free.is_empty(),
        }
    }

    fn publish(&self, rec: &Record, pkid: u16, dup: bool) -> Request {
        let mut p = Publish::from_bytes(rec.sink_topic.clone(), self.qos, rec.payload.clone());
        p.retain = self.retain;
        p.pkid = pkid;
        p.dup = dup;
        Request::Publish(p)
    }

    /// Hands `rec` to the event loop; `false` if there was no room.
    fn hand_over(&mut self, rec: Record, el: &mut EventLoop) -> Result<(), Record> {
        if self.qos == QoS::AtMostOnce {
            if self.qos0.len() >= self.window {
                return Err(rec);
            }
            el.pending.push_back(self.publish(&rec, 0, false));
            self.qos0.push_back(rec);
            return Ok(());
        }
        let Some(pkid) = self.free.pop_front() else {
            return Err(rec);
        };
        el.pending.push_back(self.publish(&rec, pkid, false));
        self.slots[pkid as usize] = Some(Slot { rec, sent: false });
        self.used += 1;
        Ok(())
    }

    /// The broker did not keep our session: everything not done goes again.
    fn republish_all(&mut self, el: &mut EventLoop) -> usize {
        el.pending.clear();
        el.state.collision = None;
        let mut held: Vec<(u64, u16)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(pkid, s)| s.as_ref().map(|s| (s.rec.seq, pkid as u16)))
            .collect();
        held.sort_unstable();
        for (_, pkid) in &held {
            if let Some(slot) = &self.slots[*pkid as usize] {
                el.pending
                    .push_back(self.publish(&slot.rec, *pkid, slot.sent));
            }
        }
        for rec in &self.qos0 {
            el.pending.push_back(self.publish(rec, 0, false));
        }
        held.len() + self.qos0.len()
    }

    /// A publish was written; returns whether it was a republish.
    fn written(&mut self, pkid: u16) -> Option<(Option<Record>, bool)> {
        if pkid == 0 {
            return Some((self.qos0.pop_front(), false));
        }
        let slot = self.slots.get_mut(pkid as usize)?.as_mut()?;
        let again = slot.sent;
        slot.sent = true;
        Some((None, again))
    }

    /// The broker acknowledged `pkid` (PUBACK for QoS 1, PUBCOMP for QoS 2).
    fn done(&mut self, pkid: u16) -> Option<Record> {
        let slot = self.slots.get_mut(pkid as usize)?.take()?;
        self.used -= 1;
        self.free.push_back(pkid);
        Some(slot.rec)
    }
}

/// Sends the event loop's pending requests (the publishes [`Book::hand_over`]
/// queued, or rumqttc's resends after a resumed session) the way `poll()`
/// does (state bookkeeping, encoding, one flush bounded by the connection
/// timeout), but all at once and without `poll()`'s per-request
/// `sleep(pending_throttle)`: even a zero sleep waits for tokio's next 1 ms
/// timer tick, which capped the sink near 1,000 publishes/s. The
/// `Outgoing::Publish` events this records come out of the next `poll()`
/// calls, as before. On an error the caller cleans the event loop up, as
/// `poll()` would.
async fn write_pending(el: &mut EventLoop) -> Result<(), ConnectionError> {
    if el.state.collision.is_some() {
        // Let rumqttc sort the collision out in poll().
        return Ok(());
    }
    let timeout = Duration::from_secs(el.network_options.connection_timeout());
    let Some(network) = el.network.as_mut() else {
        return Ok(());
    };
    let mut wrote = false;
    while let Some(request) = el.pending.pop_front() {
        if let Some(packet) = el.state.handle_outgoing_packet(request)? {
            network.write(packet).await?;
            wrote = true;
        }
    }
    if wrote {
        tokio::time::timeout(timeout, network.flush())
            .await
            .map_err(|_| ConnectionError::FlushTimeout)??;
    }
    Ok(())
}

pub struct MqttSink {
    pub cfg: MqttConfig,
    pub buffer: Arc<Buffer>,
    pub metrics: Arc<Metrics>,
}

struct Link {
    connected: bool,
    ever_connected: bool,
    down_since: Option<Instant>,
    backoff: Backoff,
    /// When the broker last sent anything (for the hang check).
    last_heard: Instant,
}

/// What one turn of the loop brought.
enum Turn {
    Nothing,
    Event(Event),
    Lost(ConnectionError),
    /// Publishes or a ping unanswered for --ack-timeout (with failover).
    Hung,
    /// The preferred broker answers again (with failover, on another one).
    PreferredBack,
}

/// Tries, every 5 s, an MQTT connection to the preferred broker; notifies
/// `back` once one is acknowledged (CONNACK) and ends.
async fn probe(options: MqttOptions, back: Arc<tokio::sync::Notify>) {
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let (client, mut el) = AsyncClient::new(options.clone(), 4);
        let answered = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match el.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => return true,
                    Ok(_) => {}
                    Err(_) => return false,
                }
            }
        })
        .await
        .unwrap_or(false);
        if answered {
            let _ = client.try_disconnect();
            let _ = tokio::time::timeout(Duration::from_millis(200), el.poll()).await;
            back.notify_one();
            return;
        }
    }
}

impl MqttSink {
    /// A new client and event loop for broker `i` (a clean session: whatever
    /// the broker kept of an earlier session is not ours to resume).
    fn event_loop(
        &self,
        brokers: &[Endpoint],
        i: usize,
    ) -> Result<(AsyncClient, EventLoop), String> {
        let options = options_for(&self.cfg, &brokers[i], &self.cfg.client_id)?;
        let (client, mut el) = AsyncClient::new(options, 16);
        // Small publishes go out at once: with Nagle's algorithm, a QoS 0
        // stream (no acknowledgements to carry the TCP ACKs back) waits for
        // the broker's delayed ACK, up to 40 ms on Linux.
        el.network_options.set_tcp_nodelay(true);
        Ok((client, el))
    }

    /// Runs until the drain ends; returns the number of undelivered events.
    pub async fn run(self, drain: Drain) -> usize {
        let brokers = self.cfg.endpoints();
        let failover = brokers.len() > 1;
        let mut active = 0;
        // The client is never used to publish (see the module docs), but it
        // must live: the event loop ends when every client is gone.
        let (mut client, mut el) = match self.event_loop(&brokers, active) {
            Ok(pair) => pair,
            Err(e) => {
                app_plugin::error!("{e}");
                drain.stop.cancelled().await;
                return self.buffer.stats().queued;
            }
        };
        let mut book = Book::new(qos(self.cfg.qos), self.cfg.retain, self.cfg.inflight);
        let mut link = Link {
            connected: false,
            ever_connected: false,
            down_since: None,
            backoff: Backoff::network(),
            last_heard: Instant::now(),
        };
        let refused = RateLimited::new(Duration::from_secs(5));
        let mut url = brokers[active].url();
        let back = Arc::new(tokio::sync::Notify::new());
        let mut prober: Option<tokio::task::JoinHandle<()>> = None;
        let mut deadline = None;
        loop {
            drain.beat();
            let dl = drain.deadline(&mut deadline);
            if dl.is_some() && book.len() == 0 && self.buffer.is_queue_empty() {
                break;
            }
            if dl.is_some_and(|d| tokio::time::Instant::now() >= d) {
                break;
            }
            // Stopping while the broker is down: nothing can drain, and
            // what is not acknowledged stays after the checkpoint.
            if dl.is_some() && !link.connected && link.down_since.is_some() {
                break;
            }
            if link.connected {
                self.fill(&mut book, &mut el, &refused);
            }
            // Write what `fill` queued ourselves: `poll()` would send the
            // pending queue one request per call, each after a zero-length
            // `sleep`, which tokio rounds up to its next 1 ms timer tick.
            let written = if link.connected {
                write_pending(&mut el).await
            } else {
                Ok(())
            };
            // Dropping the poll future is safe only with nothing pending.
            let can_interrupt = !link.connected || el.pending.is_empty();
            let want_work = link.connected && book.has_room();
            // A broker that holds publishes unacknowledged this long is hung.
            let hang_check = failover && link.connected && book.used > 0;
            let hung_at = tokio::time::Instant::from_std(link.last_heard + self.cfg.ack_timeout);
            let turn = match written {
                Err(e) => {
                    el.clean();
                    Turn::Lost(e)
                }
                Ok(()) => tokio::select! {
                    biased;
                    r = el.poll() => match r {
                        Ok(event) => Turn::Event(event),
                        Err(e) => Turn::Lost(e),
                    },
                    _ = self.buffer.ready(), if can_interrupt && want_work => Turn::Nothing,
                    _ = drain.stop.cancelled(), if can_interrupt && dl.is_none() => Turn::Nothing,
                    _ = until(dl) => Turn::Nothing,
                    // Leaving this event loop for good: it may be dropped
                    // mid-write, the book holds everything not acknowledged.
                    _ = tokio::time::sleep_until(hung_at), if hang_check => Turn::Hung,
                    _ = back.notified(), if active != 0 => Turn::PreferredBack,
                    _ = drain.watchdog_due(), if can_interrupt => Turn::Nothing,
                },
            };
            let next = match turn {
                Turn::Nothing => None,
                Turn::Event(event) => {
                    self.event(event, &mut book, &mut el, &mut link, &url);
                    // Every event rumqttc has queued already (one per
                    // publish written): poll() would hand them out one per
                    // turn, and each turn writes and flushes what arrived
                    // meanwhile, about one write syscall per event under
                    // load. Taken together, the next turn writes all that
                    // arrived in one flush; at a low rate nothing waits.
                    while let Some(ev) = el.state.events.pop_front() {
                        self.event(ev, &mut book, &mut el, &mut link, &url);
                    }
                    None
                }
                Turn::Lost(e) => {
                    // Events rumqttc had queued before the error are real:
                    // handle them before anything is republished.
                    while let Some(ev) = el.state.events.pop_front() {
                        self.event(ev, &mut book, &mut el, &mut link, &url);
                    }
                    self.lost(&e, &mut link, &url);
                    if failover {
                        Some(((active + 1) % brokers.len(), true))
                    } else {
                        self.pause(&mut link, &drain, &mut deadline).await;
                        None
                    }
                }
                Turn::Hung => {
                    warn!(
                        "the broker {url} left {} publishes unacknowledged for {:?} (--ack-timeout); moving to the next broker",
                        book.used, self.cfg.ack_timeout
                    );
                    self.down(&mut link);
                    Some(((active + 1) % brokers.len(), true))
                }
                Turn::PreferredBack => {
                    warn!(
                        "the preferred broker {} answers again; moving back to it from {url}",
                        brokers[0].url()
                    );
                    self.down(&mut link);
                    Some((0, false))
                }
            };
            let Some((to, failed)) = next else {
                continue;
            };
            // A full round of brokers failed: back off before the next one.
            if to == 0 && failed {
                self.pause(&mut link, &drain, &mut deadline).await;
            }
            let (c, e) = match self.event_loop(&brokers, to) {
                Ok(pair) => pair,
                Err(e) => {
                    app_plugin::error!("{e}");
                    continue;
                }
            };
            let _ = client.try_disconnect();
            (client, el) = (c, e);
            if active != to {
                info!("switching to the broker {} (was {url})", brokers[to].url());
            }
            active = to;
            url = brokers[active].url();
            link.last_heard = Instant::now();
            link.down_since = None;
            if active == 0 {
                if let Some(p) = prober.take() {
                    p.abort();
                }
            } else if prober.is_none() {
                match options_for(
                    &self.cfg,
                    &brokers[0],
                    &format!("{}-probe", self.cfg.client_id),
                ) {
                    Ok(o) => prober = Some(tokio::spawn(probe(o, back.clone()))),
                    Err(e) => app_plugin::error!("{e}"),
                }
            }
        }
        if let Some(p) = prober.take() {
            p.abort();
        }
        let undelivered = book.len() + self.buffer.stats().queued;
        if link.connected {
            // Say goodbye so the broker does not publish a will or wait for
            // the keep-alive; bounded, as the broker may be gone.
            let _ = client.try_disconnect();
            let _ = tokio::time::timeout(Duration::from_millis(500), async {
                loop {
                    match el.poll().await {
                        Ok(Event::Outgoing(Outgoing::Disconnect)) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
            })
            .await;
        }
        self.metrics.sink_connected.store(false, Ordering::Relaxed);
        undelivered
    }

    /// Moves buffered events into the event loop while the window has room.
    fn fill(&self, book: &mut Book, el: &mut EventLoop, refused: &RateLimited) {
        while book.has_room() {
            let Some(rec) = self.buffer.take(1).pop() else {
                return;
            };
            if let Some(refusal) =
                refuse(&rec.sink_topic, rec.payload.len(), self.cfg.max_packet_size)
            {
                match refusal {
                    Refusal::TooLarge(_) => inc(&self.metrics.failed_too_large),
                    Refusal::InvalidTopic(_) => inc(&self.metrics.failed_invalid_topic),
                }
                refused.log(WARN, || format!("refused an event: {}", refusal.message()));
                self.buffer.release(&rec);
                continue;
            }
            if let Err(rec) = book.hand_over(rec, el) {
                // Cannot happen (room was checked), but never lose it.
                app_plugin::error!(
                    "internal: no room for an event after checking; it is dropped (please report)"
                );
                inc(&self.metrics.dropped_overflow);
                self.buffer.release(&rec);
                return;
            }
        }
    }

    fn event(&self, event: Event, book: &mut Book, el: &mut EventLoop, link: &mut Link, url: &str) {
        if matches!(event, Event::Incoming(_)) {
            link.last_heard = Instant::now();
        }
        match event {
            Event::Incoming(Packet::ConnAck(ack)) => {
                link.connected = true;
                self.metrics.sink_connected.store(true, Ordering::Relaxed);
                self.metrics.set_broker(url);
                link.backoff.reset();
                let again = if ack.session_present {
                    0
                } else {
                    book.republish_all(el)
                };
                let session = if ack.session_present {
                    "session resumed"
                } else {
                    "new session"
                };
                match link.down_since.take() {
                    Some(t) => warn!(
                        "connected to the broker {url} again after {:.1}s ({session}; {again} unacknowledged publishes sent again)",
                        t.elapsed().as_secs_f64()
                    ),
                    None if !link.ever_connected || !self.cfg.failover.is_empty() => {
                        info!("connected to the broker {url} ({again} unacknowledged publishes sent again)")
                    }
                    None => {}
                }
                link.ever_connected = true;
                if !self.cfg.clean_session {
                    el.mqtt_options.set_clean_session(false);
                }
            }
            Event::Outgoing(Outgoing::Publish(pkid)) => match book.written(pkid) {
                Some((Some(rec), _)) => {
                    // QoS 0: done once written.
                    inc(&self.metrics.published);
                    inc(&self.metrics.acked);
                    self.buffer.release(&rec);
                }
                Some((None, true)) => inc(&self.metrics.republished),
                Some((None, false)) => inc(&self.metrics.published),
                None => debug!("rumqttc wrote publish {pkid}, which is not in our book"),
            },
            Event::Incoming(Packet::PubAck(ack)) if book.qos == QoS::AtLeastOnce => {
                self.finish(book.done(ack.pkid), ack.pkid)
            }
            Event::Incoming(Packet::PubComp(comp)) if book.qos == QoS::ExactlyOnce => {
                self.finish(book.done(comp.pkid), comp.pkid)
            }
            _ => {}
        }
    }

    fn finish(&self, rec: Option<Record>, pkid: u16) {
        match rec {
            Some(rec) => {
                inc(&self.metrics.acked);
                self.buffer.release(&rec);
            }
            None => debug!("acknowledgement for packet id {pkid}, which is not in our book"),
        }
    }

    /// The connection is given up on purpose (failover).
    fn down(&self, link: &mut Link) {
        if link.connected {
            link.connected = false;
            self.metrics.sink_connected.store(false, Ordering::Relaxed);
            inc(&self.metrics.sink_disconnects);
        }
    }

    /// Waits one backoff step (or until the drain deadline).
    async fn pause(
        &self,
        link: &mut Link,
        drain: &Drain,
        deadline: &mut Option<tokio::time::Instant>,
    ) {
        let delay = link.backoff.next_delay();
        let dl = drain.deadline(deadline);
        let end = tokio::time::Instant::now() + delay;
        // Still turning while the broker is away: the watchdog keeps quiet.
        loop {
            drain.beat();
            tokio::select! {
                _ = tokio::time::sleep_until(end) => return,
                _ = drain.stop.cancelled(), if dl.is_none() => return,
                _ = until(dl) => return,
                _ = drain.watchdog_due() => {}
            }
        }
    }

    fn lost(&self, e: &ConnectionError, link: &mut Link, url: &str) {
        if link.connected {
            link.connected = false;
            self.metrics.sink_connected.store(false, Ordering::Relaxed);
            inc(&self.metrics.sink_disconnects);
            if link.down_since.is_none() {
                warn!("lost the connection to the broker {url}: {e}; reconnecting with backoff, events are kept in the buffer");
                link.down_since = Some(Instant::now());
            }
        } else if link.down_since.is_none() {
            let hint = match e {
                ConnectionError::ConnectionRefused(_) => {
                    "; check --username, the password and --client-id"
                }
                _ => "; is the broker running? (see --sink)",
            };
            warn!("cannot connect to the broker {url}: {e}{hint}; retrying with backoff, events are kept in the buffer");
            link.down_since = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn rec(seq: u64) -> Record {
        Record {
            seq,
            source_topic: "s".into(),
            sink_topic: "t".into(),
            payload: Bytes::from(seq.to_string()),
            id: None,
        }
    }

    fn pkids(el: &EventLoop) -> Vec<(u16, String)> {
        el.pending
            .iter()
            .map(|r| match r {
                Request::Publish(p) => (p.pkid, String::from_utf8(p.payload.to_vec()).unwrap()),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn refusals() {
        let invalid = |t: &str| matches!(refuse(t, 10, 1000), Some(Refusal::InvalidTopic(_)));
        assert!(refuse("a/b", 10, 1000).is_none());
        for t in [
            "a/+",
            "",
            "a/#",
            "a\0",
            "a/\u{1b}[31m",
            "\u{1f}",
            "\u{7f}",
            "\u{85}",
            "\u{9f}",
        ] {
            assert!(invalid(t), "{t:?}");
        }
        for t in [
            "\u{fdd0}",
            "\u{fdef}",
            "\u{fffe}",
            "\u{ffff}",
            "\u{1fffe}",
            "\u{10ffff}",
        ] {
            assert!(invalid(t), "{t:?}");
        }
        // The neighbours of the refused ranges are fine.
        for t in [
            "a/ ",
            "\u{a0}",
            "\u{7e}",
            "\u{fdcf}",
            "\u{fdf0}",
            "\u{fffd}",
            "\u{10000}",
            "é/ü",
        ] {
            assert!(refuse(t, 10, 1000).is_none(), "{t:?}");
        }
        assert!(matches!(refuse("a", 991, 1000), Some(Refusal::TooLarge(_))));
        assert!(refuse("a", 990, 1000).is_none());
    }

    #[test]
    fn the_book_assigns_ids_from_its_window_and_republishes_in_order() {
        let (_c, mut el) = AsyncClient::new(MqttOptions::new("t", "localhost", 1), 4);
        let mut book = Book::new(QoS::AtLeastOnce, false, 3);
        for s in 1..=3 {
            book.hand_over(rec(s), &mut el).unwrap();
        }
        assert!(!book.has_room());
        assert!(book.hand_over(rec(4), &mut el).is_err());
        assert_eq!(
            pkids(&el),
            vec![(1, "1".into()), (2, "2".into()), (3, "3".into())]
        );
        for p in 1..=3 {
            assert!(!book.written(p).unwrap().1);
        }
        // Packet 2 is acknowledged; its id goes to the back of the free list.
        assert_eq!(book.done(2).unwrap().seq, 2);
        assert!(book.done(2).is_none());
        book.hand_over(rec(5), &mut el).unwrap();
        assert_eq!(book.len(), 3);
        // A new session: everything not done is sent again, oldest first.
        assert_eq!(book.republish_all(&mut el), 3);
        assert_eq!(
            pkids(&el),
            vec![(1, "1".into()), (3, "3".into()), (2, "5".into())]
        );
        assert!(book.written(1).unwrap().1);
        assert!(!book.written(2).unwrap().1);
    }

    #[test]
    fn qos0_records_complete_in_order_when_written() {
        let (_c, mut el) = AsyncClient::new(MqttOptions::new("t", "localhost", 1), 4);
        let mut book = Book::new(QoS::AtMostOnce, false, 2);
        book.hand_over(rec(1), &mut el).unwrap();
        book.hand_over(rec(2), &mut el).unwrap();
        assert!(book.hand_over(rec(3), &mut el).is_err());
        assert_eq!(book.written(0).unwrap().0.unwrap().seq, 1);
        assert_eq!(book.len(), 1);
    }
}
