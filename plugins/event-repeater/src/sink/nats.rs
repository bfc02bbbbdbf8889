//! The NATS sink: JetStream publishes (QoS 1 and 2) or core publishes
//! (QoS 0) through the async-nats client.
//!
//! # Delivery
//! At QoS 1 and 2 an event is done only when the stream acknowledged it. Up
//! to `--inflight` publishes wait for their acknowledgement at once; one that
//! fails (no acknowledgement within `--ack-timeout`, the connection lost, no
//! stream answering) is published again after a backoff, oldest first, and
//! counted as republished. Every publish of an event with an SSE id carries
//! `Nats-Msg-Id: SOURCE_ID:SSE_ID`, so the stream stores it once within its
//! duplicate window however often it was sent, and by however many
//! repeaters on the same source. At QoS 0 an event is done once the client
//! took it (core NATS: at most once).
//!
//! New events are only taken from the buffer while the client is connected,
//! so an outage is absorbed by the buffer and its overflow policy, as with
//! MQTT. The client reconnects by itself, to any server of `--sink` or those
//! the cluster announced.
//!
//! # The stream
//! If `--nats-stream` does not exist, the repeater creates it (file storage,
//! limits retention, 24 h max age, 2 minute duplicate window,
//! `--nats-replicas` replicas) capturing the
//! first token of the subjects it publishes (`T` and `T.>`), and adds the
//! first token of every new subject as it goes: JetStream refuses a stream on
//! `>`, so the subjects a route table can produce are captured that way. A
//! stream that exists is used as it is: an event whose subject it does not
//! capture is counted as `failed{reason="sink_error"}` with a warning.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::jetstream::{self, stream};
use async_nats::{Client, ConnectOptions, Event, HeaderMap, Subject};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::buffer::{Buffer, Record};
use crate::cli::Qos;
use crate::config::NatsConfig;
use crate::metrics::{inc, Metrics};
use crate::sink::nats_acks::{self, Acks, Outcome};
use crate::sink::nats_trouble::{self, Condition};
use crate::sink::subject::{first_token, matches, subject};
use crate::sink::{until, Drain, Refusal};
use app_plugin::log::{RateLimited, WARN};

/// The description of a stream the repeater created (and may extend).
pub const OWN_STREAM: &str = "created by app event-repeater";

pub struct NatsSink {
    pub cfg: NatsConfig,
    pub buffer: Arc<Buffer>,
    pub metrics: Arc<Metrics>,
}

/// Why no NATS subject can be made of `topic` (see [`subject`]: no
/// whitespace, control characters or wildcards, no reserved namespace, some
/// token left); the size limit is the server's and is checked by the sink.
pub fn refuse(topic: &str) -> Option<Refusal> {
    subject(topic).err().map(Refusal::InvalidTopic)
}

fn is_connected(client: &Client) -> bool {
    client.connection_state() == State::Connected
}

/// The next message on the acknowledgement inbox (`None`: it ended); never
/// returns once it has ended.
async fn next_message(inbox: &mut Option<async_nats::Subscriber>) -> Option<async_nats::Message> {
    match inbox {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// Builds the client options from the configuration.
async fn options(
    cfg: &NatsConfig,
    metrics: Arc<Metrics>,
    link: Arc<Notify>,
) -> Result<ConnectOptions, String> {
    let mut o = match &cfg.creds {
        Some(path) => ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|e| format!("cannot use --creds {}: {e}", path.display()))?,
        None => ConnectOptions::new(),
    };
    if let Some(user) = &cfg.username {
        o = o.user_and_password(user.clone(), cfg.password.clone().unwrap_or_default());
    }
    if let Some(token) = &cfg.token {
        o = o.token(token.clone());
    }
    if let Some(ca) = &cfg.ca_file {
        o = o.add_root_certificates(ca.clone());
    }
    if cfg.tls {
        o = o.require_tls(true);
    }
    let servers = cfg.servers.join(", ");
    let o = o
        .name(cfg.client_name.clone())
        .connection_timeout(Duration::from_secs(5))
        // A hung server is noticed after two unanswered pings.
        .ping_interval(cfg.ack_timeout.max(Duration::from_secs(1)))
        .retry_on_initial_connect()
        .max_reconnects(None)
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis((100u64 << attempts.min(6)).min(5000))
        })
        .event_callback(move |event| {
            let metrics = metrics.clone();
            let servers = servers.clone();
            let link = link.clone();
            async move {
                // Wake the sink: it takes new events only while connected.
                link.notify_one();
                match event {
                    Event::Connected => {
                        metrics.sink_connected.store(true, Ordering::Relaxed);
                        info!("connected to NATS ({servers})");
                    }
                    Event::Disconnected => {
                        if metrics.sink_connected.swap(false, Ordering::Relaxed) {
                            inc(&metrics.sink_disconnects);
                        }
                        warn!("lost the connection to NATS ({servers}); reconnecting, events are kept in the buffer");
                    }
                    Event::ClientError(e) => {
                        let e = e.to_string();
                        warn!("NATS client: {e}; {}", client_error_hint(&e))
                    }
                    Event::ServerError(e) => warn!("NATS server: {e}"),
                    other => debug!("NATS: {other}"),
                }
            }
        });
    Ok(o)
}

/// What to check for a client error: the credentials when the server
/// refused them, else whether it runs at all.
fn client_error_hint(error: &str) -> &'static str {
    let e = error.to_ascii_lowercase();
    if e.contains("authorization") || e.contains("authentication") {
        "the server refused the credentials: check --creds, --username/--password or APP_NATS_TOKEN"
    } else {
        "is the server running? (see --sink)"
    }
}

/// What the repeater knows of its stream.
struct StreamBook {
    /// The stream's subjects (as last read or set).
    subjects: Vec<String>,
    /// The last subject found captured by them (events of one subject come
    /// in runs; matching every pattern again cost more per event than the
    /// rest of the sink's own work).
    last_captured: String,
    /// Created by a repeater: first tokens may be added.
    own: bool,
    /// Whether the stream has been looked up at all.
    known: bool,
}

impl StreamBook {
    fn captures(&mut self, subject: &str) -> bool {
        if !subject.is_empty() && self.last_captured == subject {
            return true;
        }
        let yes = self.subjects.iter().any(|p| matches(p, subject));
        if yes {
            self.last_captured.clear();
            self.last_captured.push_str(subject);
        }
        yes
    }

    fn set_subjects(&mut self, subjects: Vec<String>) {
        self.subjects = subjects;
        self.last_captured.clear();
    }
}

/// The subject of the last topic mapped, for the next event of that topic
/// (a cheap clone instead of splitting and checking the topic again).
#[derive(Default)]
struct LastSubject {
    topic: String,
    subject: Option<Subject>,
}

impl LastSubject {
    fn of(&mut self, topic: &str) -> Result<Subject, String> {
        if let Some(s) = &self.subject {
            if self.topic == topic {
                return Ok(s.clone());
            }
        }
        let s = Subject::from(subject(topic)?);
        self.topic.clear();
        self.topic.push_str(topic);
        self.subject = Some(s.clone());
        Ok(s)
    }
}

enum Ready {
    Go,
    /// Not captured by a stream the repeater may not change.
    Refuse(String),
    /// The stream could not be read or changed now.
    Later(String),
}

/// An event on its way: the record and its subject.
struct Job {
    rec: Record,
    subject: Subject,
    sent_before: bool,
}

/// The sink with its client, checked at start: [`StartedNats::run`] runs it.
pub struct StartedNats {
    sink: NatsSink,
    client: Client,
    link: Arc<Notify>,
}

impl StartedNats {
    /// Runs until the drain ends; returns the number of undelivered events.
    pub async fn run(self, drain: Drain) -> usize {
        let StartedNats { sink, client, link } = self;
        let undelivered = if sink.cfg.qos == Qos::AtMostOnce {
            sink.run_core(&client, &link, drain).await
        } else {
            sink.run_jetstream(&client, &link, drain).await
        };
        let _ = tokio::time::timeout(Duration::from_millis(500), client.flush()).await;
        sink.metrics.sink_connected.store(false, Ordering::Relaxed);
        undelivered
    }
}

impl NatsSink {
    /// Sets up the client and, for JetStream, checks what can never work
    /// (see [`nats_trouble::check_at_start`]); `Err` is a start-up failure.
    pub async fn start(self) -> Result<StartedNats, String> {
        let link = Arc::new(Notify::new());
        let options = options(&self.cfg, self.metrics.clone(), link.clone()).await?;
        let client = options
            .connect(self.cfg.servers.clone())
            .await
            .map_err(|e| {
                format!(
                    "cannot set up the NATS client for {}: {e}",
                    self.cfg.servers.join(", ")
                )
            })?;
        if self.cfg.qos != Qos::AtMostOnce {
            nats_trouble::check_at_start(&client, &self.cfg).await?;
        }
        Ok(StartedNats {
            sink: self,
            client,
            link,
        })
    }

    fn refuse(&self, rec: &Record, why: &str, refused: &RateLimited) {
        inc(&self.metrics.failed_invalid_topic);
        refused.log(WARN, || format!("refused an event: {why}"));
        self.buffer.release(rec);
    }

    /// QoS 0: core publishes while connected.
    async fn run_core(&self, client: &Client, link: &Notify, drain: Drain) -> usize {
        let refused = RateLimited::new(Duration::from_secs(5));
        let mut deadline = None;
        let mut subjects = LastSubject::default();
        // The server's limit, read once per connection (server_info()
        // clones the whole INFO).
        let mut max_payload = None;
        loop {
            drain.beat();
            let dl = drain.deadline(&mut deadline);
            if dl.is_some() && self.buffer.is_queue_empty() {
                return 0;
            }
            let connected = is_connected(client);
            // Stopping while the server is down: nothing can drain.
            if dl.is_some_and(|d| Instant::now() >= d || !connected) {
                return self.buffer.stats().queued;
            }
            if !connected {
                max_payload = None;
            }
            if connected {
                let limit = *max_payload.get_or_insert_with(|| client.server_info().max_payload);
                let batch = self.buffer.take(256);
                for rec in batch {
                    match subjects.of(&rec.sink_topic) {
                        Err(why) => self.refuse(&rec, &why, &refused),
                        Ok(s) if rec.payload.len() > limit => {
                            inc(&self.metrics.failed_too_large);
                            refused.log(WARN, || {
                                format!("refused an event for {s}: over the server's max_payload")
                            });
                            self.buffer.release(&rec);
                        }
                        Ok(s) => {
                            if client.publish(s, rec.payload.clone()).await.is_ok() {
                                inc(&self.metrics.published);
                                inc(&self.metrics.acked);
                            } else {
                                inc(&self.metrics.failed_sink);
                            }
                            self.buffer.release(&rec);
                        }
                    }
                }
            }
            tokio::select! {
                _ = self.buffer.ready(), if connected => {}
                _ = link.notified() => { max_payload = None; }
                // The state may change just after the event that announced it.
                _ = tokio::time::sleep(Duration::from_millis(250)), if !connected => {}
                _ = drain.stop.cancelled(), if dl.is_none() => {}
                _ = until(dl) => {}
                _ = drain.watchdog_due() => {}
            }
        }
    }

    /// QoS 1 and 2: JetStream publishes, done when acknowledged.
    async fn run_jetstream(&self, client: &Client, link: &Notify, drain: Drain) -> usize {
        let js = jetstream::ContextBuilder::new()
            .timeout(self.cfg.ack_timeout)
            .ack_timeout(self.cfg.ack_timeout)
            .max_ack_inflight(usize::from(self.cfg.inflight))
            .backpressure_on_inflight(true)
            .build(client.clone());
        let window = usize::from(self.cfg.inflight);
        let refused = RateLimited::new(Duration::from_secs(5));
        let trouble = RateLimited::new(Duration::from_secs(5));
        let mut book = StreamBook {
            subjects: Vec::new(),
            last_captured: String::new(),
            own: false,
            known: false,
        };
        let mut subjects = LastSubject::default();
        // The server's limit, read once per connection (server_info()
        // clones the whole INFO).
        let mut max_payload = None;
        // Acknowledgements awaited in this task, all on one inbox
        // subscription (sink::nats_acks).
        let mut acks: Acks<Job> = Acks::new(&client.new_inbox(), self.cfg.ack_timeout);
        let mut inbox = match client.subscribe(acks.filter()).await {
            Ok(s) => Some(s),
            Err(e) => {
                app_plugin::error!(
                    "cannot subscribe to an inbox for JetStream acknowledgements: {e}"
                );
                drain.stop.cancelled().await;
                return self.buffer.stats().queued;
            }
        };
        let mut outcomes: Vec<Outcome<Job>> = Vec::new();
        // Failed publishes, by acceptance order, to send again first.
        let mut retry: BTreeMap<u64, Job> = BTreeMap::new();
        let mut backoff = Backoff::network();
        let mut paused_until: Option<Instant> = None;
        let mut warned_missing: HashSet<String> = HashSet::new();
        // No JetStream, replicas it cannot place, a full stream: said once.
        let mut condition = Condition::new(self.metrics.clone(), &self.cfg);
        let mut deadline = None;
        loop {
            drain.beat();
            let dl = drain.deadline(&mut deadline);
            let held = acks.len() + retry.len();
            if dl.is_some() && held == 0 && self.buffer.is_queue_empty() {
                return 0;
            }
            let connected = is_connected(client);
            // Stopping while the server is down: nothing can drain, and
            // what is not acknowledged stays after the checkpoint.
            if dl.is_some_and(|d| Instant::now() >= d || !connected) {
                return held + self.buffer.stats().queued;
            }
            if !connected {
                max_payload = None;
            }
            let paused = paused_until.is_some_and(|t| Instant::now() < t);
            if connected && !paused {
                let limit = *max_payload.get_or_insert_with(|| client.server_info().max_payload);
                // Send what failed first, then new events, up to the window.
                while acks.has_room(window) {
                    let job = match retry.pop_first() {
                        Some((_, job)) => job,
                        None => match self.buffer.take(1).pop() {
                            Some(rec) => match subjects.of(&rec.sink_topic) {
                                Ok(subject) => Job {
                                    rec,
                                    subject,
                                    sent_before: false,
                                },
                                Err(why) => {
                                    self.refuse(&rec, &why, &refused);
                                    continue;
                                }
                            },
                            None => break,
                        },
                    };
                    if job.rec.payload.len() > limit {
                        inc(&self.metrics.failed_too_large);
                        let s = job.subject.clone();
                        refused.log(WARN, || {
                            format!("refused an event for {s}: over the server's max_payload")
                        });
                        self.buffer.release(&job.rec);
                        continue;
                    }
                    match self.ready(&js, &mut book, &job.subject).await {
                        Ready::Go => {}
                        Ready::Refuse(why) => {
                            inc(&self.metrics.failed_sink);
                            if warned_missing.insert(first_token(&job.subject).to_string()) {
                                warn!("{why}; such events are counted as failed (sink_error)");
                            }
                            self.buffer.release(&job.rec);
                            continue;
                        }
                        Ready::Later(why) => {
                            if !condition.failed(&why) {
                                trouble.log(WARN, || format!("{why}; retrying with backoff"));
                            }
                            retry.insert(job.rec.seq, job);
                            paused_until = Some(Instant::now() + backoff.next_delay());
                            break;
                        }
                    }
                    let (subject, payload, headers) = self.message(&job);
                    let again = job.sent_before;
                    let reply = acks.add(job, Instant::now());
                    let sent = match headers {
                        Some(h) => {
                            client
                                .publish_with_reply_and_headers(subject, reply, h, payload)
                                .await
                        }
                        None => client.publish_with_reply(subject, reply, payload).await,
                    };
                    match sent {
                        Ok(()) => {
                            if again {
                                inc(&self.metrics.republished);
                            } else {
                                inc(&self.metrics.published);
                            }
                        }
                        Err(e) => {
                            let Some(job) = acks.unsend() else { break };
                            let e = e.to_string();
                            if !condition.failed(&e) {
                                trouble.log(WARN, || {
                                    format!(
                                        "cannot publish to JetStream: {e}; retrying with backoff"
                                    )
                                });
                            }
                            retry.insert(
                                job.rec.seq,
                                Job {
                                    sent_before: true,
                                    ..job
                                },
                            );
                            paused_until = Some(Instant::now() + backoff.next_delay());
                            break;
                        }
                    }
                }
            }
            let paused = paused_until.is_some_and(|t| Instant::now() < t);
            let want_new = connected && !paused && acks.has_room(window);
            tokio::select! {
                msg = next_message(&mut inbox) => match msg {
                    Some(msg) => {
                        outcomes.extend(acks.arrived(&msg));
                        // And whatever else arrived already: one turn for all.
                        while let Some(Some(msg)) = inbox.as_mut().and_then(|s| s.next().now_or_never()) {
                            outcomes.extend(acks.arrived(&msg));
                        }
                    }
                    // The client is closed; what waits times out.
                    None => inbox = None,
                },
                _ = until(acks.deadline()), if !acks.is_empty() => {
                    let timed_out = acks.expired(Instant::now());
                    outcomes.extend(timed_out.into_iter().map(|job| (job, Err(nats_acks::TIMED_OUT.to_string()))));
                }
                _ = self.buffer.ready(), if want_new && retry.is_empty() => {}
                _ = until(paused_until), if paused => { paused_until = None; }
                _ = link.notified() => { max_payload = None; }
                // The state may change just after the event that announced it.
                _ = tokio::time::sleep(Duration::from_millis(250)), if !connected => {}
                _ = drain.stop.cancelled(), if dl.is_none() => {}
                _ = until(dl) => {}
                _ = drain.watchdog_due() => {}
            }
            for (job, result) in outcomes.drain(..) {
                match result {
                    Ok(()) => {
                        backoff.reset();
                        condition.stored();
                        inc(&self.metrics.acked);
                        self.buffer.release(&job.rec);
                    }
                    Err(e) => {
                        if e.contains("no stream found") || e.contains("does not exist") {
                            // The stream went away or lost the subject: look again.
                            book.known = false;
                        }
                        if nats_trouble::over_stream_max_msg_size(&e) {
                            // Never storable: sending it again would only
                            // hold up the events behind it.
                            inc(&self.metrics.failed_too_large);
                            let s = job.subject.clone();
                            refused.log(WARN, || {
                                format!("refused an event for {s}: over the stream's max_msg_size ({e})")
                            });
                            self.buffer.release(&job.rec);
                            continue;
                        }
                        if !condition.failed(&e) {
                            trouble.log(WARN, || format!(
                                "a JetStream publish was not acknowledged: {e}; it is sent again after a backoff"
                            ));
                        }
                        retry.insert(
                            job.rec.seq,
                            Job {
                                sent_before: true,
                                ..job
                            },
                        );
                        if !paused {
                            paused_until = Some(Instant::now() + backoff.next_delay());
                        }
                    }
                }
            }
        }
    }

    /// The subject, payload and headers of `job`'s publish: every event with
    /// an SSE id carries `Nats-Msg-Id: SOURCE_ID:SSE_ID`.
    fn message(&self, job: &Job) -> (Subject, Bytes, Option<HeaderMap>) {
        let headers = job.rec.id.as_ref().map(|id| {
            // Without format!'s machinery per event.
            let source = &self.cfg.source_id;
            let mut msg_id = String::with_capacity(source.len() + 1 + id.len());
            msg_id.push_str(source);
            msg_id.push(':');
            msg_id.push_str(id);
            let mut h = HeaderMap::new();
            h.insert(async_nats::header::NATS_MESSAGE_ID, msg_id.as_str());
            h
        });
        (job.subject.clone(), job.rec.payload.clone(), headers)
    }

    /// Makes sure the stream captures `subject` (creating or extending the
    /// repeater's own stream).
    async fn ready(&self, js: &jetstream::Context, book: &mut StreamBook, subject: &str) -> Ready {
        if book.known && book.captures(subject) {
            return Ready::Go;
        }
        let name = &self.cfg.stream;
        let token = first_token(subject);
        let wanted = [token.to_string(), format!("{token}.>")];
        match js.get_stream(name).await {
            Ok(mut s) => {
                let info = s.cached_info().clone();
                book.set_subjects(info.config.subjects.clone());
                book.own = info.config.description.as_deref() == Some(OWN_STREAM);
                book.known = true;
                if book.captures(subject) {
                    return Ready::Go;
                }
                if !book.own {
                    return Ready::Refuse(format!(
                        "the stream {name} (not created by the repeater, used as it is) does not capture the subject {subject} (its subjects: {})",
                        book.subjects.join(" ")
                    ));
                }
                let mut config = info.config;
                for w in wanted {
                    if !config.subjects.contains(&w) {
                        config.subjects.push(w);
                    }
                }
                match js.update_stream(&config).await {
                    Ok(info) => {
                        info!(
                            "stream {name} now captures {}",
                            info.config.subjects.join(" ")
                        );
                        book.set_subjects(info.config.subjects);
                        let _ = s.info().await;
                        Ready::Go
                    }
                    Err(e) => {
                        book.known = false;
                        Ready::Later(format!("cannot add {token} to the stream {name}: {e}"))
                    }
                }
            }
            Err(e) if is_not_found(&e) => {
                let config = stream::Config {
                    name: name.clone(),
                    description: Some(OWN_STREAM.to_string()),
                    subjects: wanted.to_vec(),
                    retention: stream::RetentionPolicy::Limits,
                    storage: stream::StorageType::File,
                    max_age: self.cfg.stream_max_age,
                    duplicate_window: Duration::from_secs(120),
                    num_replicas: self.cfg.stream_replicas,
                    ..Default::default()
                };
                match js.create_stream(config).await {
                    Ok(s) => {
                        let info = s.cached_info();
                        info!(
                            "created the stream {name} capturing {}",
                            info.config.subjects.join(" ")
                        );
                        book.set_subjects(info.config.subjects.clone());
                        book.own = true;
                        book.known = true;
                        Ready::Go
                    }
                    // Another repeater may have created it just now.
                    Err(e) => Ready::Later(format!("cannot create the stream {name}: {e}")),
                }
            }
            Err(e) => Ready::Later(format!("cannot look up the stream {name}: {e}")),
        }
    }
}

fn is_not_found(e: &async_nats::jetstream::context::GetStreamError) -> bool {
    use async_nats::jetstream::context::GetStreamErrorKind;
    use async_nats::jetstream::ErrorCode;
    matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
}
