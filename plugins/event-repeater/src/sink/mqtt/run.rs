//! The MQTT sink's loop: polls the rumqttc event loop, hands it buffered
//! events, follows acknowledgements, reconnects and fails over.

use app_plugin::log::{debug, info, warn};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, ConnectionError, Event, EventLoop, MqttOptions, Outgoing, Packet, QoS};

use crate::buffer::Record;
use crate::metrics::inc;
use crate::sink::mqtt::book::Book;
use crate::sink::mqtt::config::Endpoint;
use crate::sink::mqtt::link::Link;
use crate::sink::mqtt::options::{options_for, qos};
use crate::sink::mqtt::MqttSink;
use crate::sink::{until, Drain};

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

/// What the sink loop carries from turn to turn.
struct State {
    brokers: Vec<Endpoint>,
    failover: bool,
    /// The broker in use: its index in `brokers`, and its URL.
    active: usize,
    url: String,
    /// Never used to publish (see the module docs), but it must live: the
    /// event loop ends when every client is gone.
    client: AsyncClient,
    el: EventLoop,
    book: Book,
    link: Link,
    /// The drain deadline, once the stop fired.
    deadline: Option<tokio::time::Instant>,
    /// Notified by the prober when the preferred broker answers again.
    back: Arc<tokio::sync::Notify>,
    prober: Option<tokio::task::JoinHandle<()>>,
}

/// Says goodbye so the broker does not publish a will or wait for the
/// keep-alive; bounded, as the broker may be gone.
async fn goodbye(client: &AsyncClient, el: &mut EventLoop) {
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
        let Some(mut st) = self.start() else {
            drain.stop.recv().await;
            return self.buffer.stats().queued;
        };
        loop {
            drain.beat();
            let dl = drain.deadline(&mut st.deadline);
            if self.drained(&st, dl) {
                break;
            }
            let turn = self.turn(&mut st, &drain, dl).await;
            let Some((to, failed)) = self.follow(turn, &mut st, &drain).await else {
                continue;
            };
            // A full round of brokers failed: back off before the next one.
            if to == 0 && failed {
                self.pause(&mut st.link, &drain, &mut st.deadline).await;
            }
            self.switch(&mut st, to);
        }
        if let Some(p) = st.prober.take() {
            p.abort();
        }
        let undelivered = st.book.len() + self.buffer.stats().queued;
        if st.link.connected {
            goodbye(&st.client, &mut st.el).await;
        }
        self.metrics.sink_connected.store(false, Ordering::Relaxed);
        undelivered
    }

    /// The loop's state on the first broker; `None` (logged) if its
    /// options cannot be made.
    fn start(&self) -> Option<State> {
        let brokers = self.cfg.endpoints();
        let (client, el) = match self.event_loop(&brokers, 0) {
            Ok(pair) => pair,
            Err(e) => {
                app_plugin::error!("{e}");
                return None;
            }
        };
        Some(State {
            url: brokers[0].url(),
            failover: brokers.len() > 1,
            brokers,
            active: 0,
            client,
            el,
            book: Book::new(qos(self.cfg.qos), self.cfg.retain, self.cfg.inflight),
            link: Link::new(),
            deadline: None,
            back: Arc::new(tokio::sync::Notify::new()),
            prober: None,
        })
    }

    /// Whether the drain is over: all delivered, the deadline passed, or
    /// the broker down.
    fn drained(&self, st: &State, dl: Option<tokio::time::Instant>) -> bool {
        let Some(d) = dl else {
            return false;
        };
        (st.book.len() == 0 && self.buffer.is_queue_empty())
            || tokio::time::Instant::now() >= d
            // Stopping while the broker is down: nothing can drain, and
            // what is not acknowledged stays after the checkpoint.
            || (!st.link.connected && st.link.down_since.is_some())
    }

    /// One turn: hands buffered events over, writes them, and waits for
    /// whichever comes first.
    async fn turn(&self, st: &mut State, drain: &Drain, dl: Option<tokio::time::Instant>) -> Turn {
        let connected = st.link.connected;
        if connected {
            self.fill(&mut st.book, &mut st.el);
            // Write what `fill` queued ourselves: `poll()` would send the
            // pending queue one request per call, each after a zero-length
            // `sleep`, which tokio rounds up to its next 1 ms timer tick.
            if let Err(e) = write_pending(&mut st.el).await {
                st.el.clean();
                return Turn::Lost(e);
            }
        }
        // Dropping the poll future is safe only with nothing pending.
        let can_interrupt = !connected || st.el.pending.is_empty();
        let want_work = connected && st.book.has_room();
        // A broker that holds publishes unacknowledged this long is hung.
        let hang_check = st.failover && connected && st.book.used > 0;
        let hung_at = tokio::time::Instant::from_std(st.link.last_heard + self.cfg.ack_timeout);
        tokio::select! {
            biased;
            r = st.el.poll() => match r {
                Ok(event) => Turn::Event(event),
                Err(e) => Turn::Lost(e),
            },
            _ = self.buffer.ready(), if can_interrupt && want_work => Turn::Nothing,
            _ = drain.stop.recv(), if can_interrupt && dl.is_none() => Turn::Nothing,
            _ = until(dl) => Turn::Nothing,
            // Leaving this event loop for good: it may be dropped
            // mid-write, the book holds everything not acknowledged.
            _ = tokio::time::sleep_until(hung_at), if hang_check => Turn::Hung,
            _ = st.back.notified(), if st.active != 0 => Turn::PreferredBack,
            _ = drain.watchdog_due(), if can_interrupt => Turn::Nothing,
        }
    }

    /// Acts on what a turn brought; `Some((broker, failed))` to move to
    /// another broker (or the same one again).
    async fn follow(&self, turn: Turn, st: &mut State, drain: &Drain) -> Option<(usize, bool)> {
        let next = (st.active + 1) % st.brokers.len();
        match turn {
            Turn::Nothing => None,
            Turn::Event(event) => {
                self.event(event, &mut st.book, &mut st.el, &mut st.link, &st.url);
                // Every event rumqttc has queued already (one per publish
                // written): poll() would hand them out one per turn, and
                // each turn writes and flushes what arrived meanwhile, about
                // one write syscall per event under load. Taken together,
                // the next turn writes all that arrived in one flush; at a
                // low rate nothing waits.
                self.queued_events(st);
                None
            }
            Turn::Lost(e) => {
                // Events rumqttc had queued before the error are real:
                // handle them before anything is republished.
                self.queued_events(st);
                st.link.lost(&e, &mut st.book, &self.metrics, &st.url);
                if st.failover {
                    return Some((next, true));
                }
                self.pause(&mut st.link, drain, &mut st.deadline).await;
                None
            }
            Turn::Hung => {
                warn!(
                    "the broker {} left {} publishes unacknowledged for {:?} (--ack-timeout); moving to the next broker",
                    st.url, st.book.used, self.cfg.ack_timeout
                );
                self.down(&mut st.link);
                Some((next, true))
            }
            Turn::PreferredBack => {
                // Good news: info, not a warning (`-p warning` stays quiet).
                info!(
                    "the preferred broker {} answers again; moving back to it from {}",
                    st.brokers[0].url(),
                    st.url
                );
                self.down(&mut st.link);
                Some((0, false))
            }
        }
    }

    fn queued_events(&self, st: &mut State) {
        while let Some(ev) = st.el.state.events.pop_front() {
            self.event(ev, &mut st.book, &mut st.el, &mut st.link, &st.url);
        }
    }

    /// Moves to broker `to` with a new event loop, and probes the preferred
    /// broker while on another one.
    fn switch(&self, st: &mut State, to: usize) {
        let (client, el) = match self.event_loop(&st.brokers, to) {
            Ok(pair) => pair,
            Err(e) => {
                app_plugin::error!("{e}");
                return;
            }
        };
        let _ = st.client.try_disconnect();
        (st.client, st.el) = (client, el);
        if st.active != to {
            info!(
                "switching to the broker {} (was {})",
                st.brokers[to].url(),
                st.url
            );
        }
        st.active = to;
        st.url = st.brokers[to].url();
        st.link.last_heard = Instant::now();
        st.link.down_since = None;
        if to == 0 {
            if let Some(p) = st.prober.take() {
                p.abort();
            }
        } else if st.prober.is_none() {
            let probe_id = format!("{}-probe", self.cfg.client_id);
            match options_for(&self.cfg, &st.brokers[0], &probe_id) {
                Ok(o) => st.prober = Some(tokio::spawn(probe(o, st.back.clone()))),
                Err(e) => app_plugin::error!("{e}"),
            }
        }
    }

    /// Moves buffered events into the event loop while the window has room.
    /// Their topics and sizes were checked by the router (the only way into
    /// the buffer) against the same rules.
    fn fill(&self, book: &mut Book, el: &mut EventLoop) {
        if book.qos != QoS::AtMostOnce {
            // Publishes over a lowered window go first, oldest first.
            book.resend_some(el);
        }
        while book.has_room() {
            let Some(rec) = self.buffer.take_one() else {
                return;
            };
            if let Err(rec) = book.hand_over(rec, el) {
                // Cannot happen (room was checked), but never lose it.
                app_plugin::error!(
                    "internal: no room for an event after checking; it is dropped (please report)"
                );
                let why = "internal: no room after checking";
                self.buffer
                    .refuse(&rec, crate::reason::Reason::Overflow, why);
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
                let again = book.reconnected(el, ack.session_present);
                let failover = !self.cfg.failover.is_empty();
                link.connack(
                    book,
                    again,
                    ack.session_present,
                    failover,
                    &self.metrics,
                    url,
                );
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
                self.finish(book.done(ack.pkid), ack.pkid, book, link, url)
            }
            Event::Incoming(Packet::PubRec(rec)) if book.qos == QoS::ExactlyOnce => {
                book.received(rec.pkid)
            }
            Event::Incoming(Packet::PubComp(comp)) if book.qos == QoS::ExactlyOnce => {
                self.finish(book.done(comp.pkid), comp.pkid, book, link, url)
            }
            _ => {}
        }
    }

    fn finish(&self, rec: Option<Record>, pkid: u16, book: &Book, link: &mut Link, url: &str) {
        match rec {
            Some(rec) => {
                if !link.progressed {
                    link.acked(book, url);
                }
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
                _ = drain.stop.recv(), if dl.is_none() => return,
                _ = until(dl) => return,
                _ = drain.watchdog_due() => {}
            }
        }
    }
}
