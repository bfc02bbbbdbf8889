//! The sink's loop: hands events to the producer up to the window, settles
//! each delivery as librdkafka reports it, and sends again, after a
//! backoff, what failed.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use app_plugin::log::{info, RateLimited, WARN};
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryFuture, FutureRecord};
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::buffer::Record;
use crate::metrics::{inc, set_problem};
use crate::reason::Reason;
use crate::sink::kafka::producer::{Clients, NotReady};
use crate::sink::kafka::topics::kafka_topic;
use crate::sink::kafka::KafkaSink;
use crate::sink::outbox::{Job, Outbox};
use crate::sink::{until, Drain};

/// The most topics remembered as existing; past it the memory starts over
/// (a topic then costs one more creation request).
const MAX_KNOWN_TOPICS: usize = 10_000;

/// A delivery librdkafka will report, with its event.
struct InFlight {
    job: Option<Job>,
    /// The producer it was handed to ([`Loop::generation`]).
    generation: u64,
    delivery: DeliveryFuture,
}

/// What became of a delivery (`None` when the producer was dropped
/// first), and the producer's generation.
type Outcome = (Job, Option<Result<(), KafkaError>>, u64);

impl Future for InFlight {
    type Output = Outcome;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Outcome> {
        let result = match self.delivery.poll_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(Ok(_))) => Some(Ok(())),
            Poll::Ready(Ok(Err((e, _)))) => Some(Err(e)),
            Poll::Ready(Err(_canceled)) => None,
        };
        match self.job.take() {
            Some(job) => Poll::Ready((job, result, self.generation)),
            None => Poll::Pending,
        }
    }
}

struct Loop<'a> {
    sink: &'a KafkaSink,
    clients: Option<Clients>,
    /// Counts the producers made: an error from one that is gone says
    /// nothing about the one in use.
    generation: u64,
    inflight: FuturesUnordered<InFlight>,
    /// Not sent yet, or failed and to send again first.
    outbox: Outbox,
    /// Kafka topics known to exist.
    known: HashSet<String>,
    /// The last sink topic mapped, and its Kafka topic (one route's events
    /// share the `Arc`, so this skips the mapping for most events).
    last_topic: Option<(Arc<str>, Arc<str>)>,
    /// The last Kafka topic found ready, so that a run of events to one
    /// topic skips even the set's lookup.
    last_ready: Option<Arc<str>>,
    backoff: Backoff,
    paused_until: Option<Instant>,
    trouble: RateLimited,
    refused: RateLimited,
}

/// Runs until the drain ends; returns the number of undelivered events.
pub async fn run(mut sink: KafkaSink, drain: Drain) -> usize {
    let clients = sink.clients.take();
    let mut l = Loop::new(&sink, clients);
    let mut deadline = None;
    let undelivered = loop {
        drain.beat();
        let dl = drain.deadline(&mut deadline);
        let held = l.inflight.len() + l.outbox.held();
        if dl.is_some() && held == 0 && sink.buffer.is_queue_empty() {
            break 0;
        }
        let connected = sink.metrics.sink_connected.load(Ordering::Relaxed);
        if dl.is_some_and(|d| Instant::now() >= d || !connected) {
            break held + sink.buffer.stats().queued;
        }
        if !l.paused() {
            if l.clients.is_none() || !connected {
                l.connect().await;
            }
            if l.clients.is_some() && sink.metrics.sink_connected.load(Ordering::Relaxed) {
                l.send().await;
            }
        }
        let paused = l.paused();
        let want_new = l.clients.is_some() && !paused && l.inflight.len() < sink.cfg.inflight;
        tokio::select! {
            Some(outcome) = l.inflight.next(), if !l.inflight.is_empty() => {
                l.settle(outcome);
                while let Some(Some(outcome)) = l.inflight.next().now_or_never() {
                    l.settle(outcome);
                }
            }
            _ = sink.buffer.ready(), if want_new && !l.outbox.has_retries() => {}
            _ = until(l.paused_until), if paused => { l.paused_until = None; }
            _ = drain.stop.recv(), if dl.is_none() => {}
            _ = until(dl) => {}
            _ = drain.watchdog_due() => {}
        }
    };
    // Dropping the producer purges what it still holds: those events stay
    // in the buffer, unacknowledged, and the checkpoint stays before them.
    drop(l);
    sink.metrics.sink_connected.store(false, Ordering::Relaxed);
    undelivered
}

impl<'a> Loop<'a> {
    fn new(sink: &'a KafkaSink, clients: Option<Clients>) -> Loop<'a> {
        Loop {
            sink,
            generation: u64::from(clients.is_some()),
            clients,
            inflight: FuturesUnordered::new(),
            outbox: Outbox::default(),
            known: HashSet::new(),
            last_topic: None,
            last_ready: None,
            backoff: Backoff::network(),
            paused_until: None,
            trouble: RateLimited::new(Duration::from_secs(5)),
            refused: RateLimited::new(Duration::from_secs(5)),
        }
    }

    fn paused(&self) -> bool {
        self.paused_until.is_some_and(|t| Instant::now() < t)
    }

    /// Something went wrong: said (rate limited), and nothing new is sent
    /// before a backoff.
    fn trouble(&mut self, why: &str) {
        set_problem(&self.sink.metrics.sink_last_error, why);
        self.trouble.log(WARN, || {
            format!("{why}; retrying with backoff, events are kept in the buffer")
        });
        self.paused_until = Some(Instant::now() + self.backoff.next_delay());
    }

    /// Makes the clients if there are none, and asks a broker whether the
    /// cluster answers: the sink is connected once one does.
    async fn connect(&mut self) {
        let metrics = &self.sink.metrics;
        if self.clients.is_none() {
            match Clients::make(&self.sink.cfg, metrics) {
                Ok(c) => {
                    self.clients = Some(c);
                    self.generation += 1;
                }
                Err(e) => return self.trouble(&e),
            }
        }
        let Some(clients) = &self.clients else { return };
        match clients.probe().await {
            Ok(()) => {
                if !metrics.sink_connected.swap(true, Ordering::Relaxed) {
                    info!("connected to Kafka at {}", self.sink.cfg.url());
                    set_problem(&metrics.sink_last_error, "");
                }
            }
            Err(e) => self.trouble(&format!("{e} at {}", self.sink.cfg.url())),
        }
    }

    /// The Kafka topic of `rec` (the router refused the topics with none).
    fn topic(&mut self, rec: &Record) -> Result<Arc<str>, String> {
        if let Some((sink_topic, kafka)) = &self.last_topic {
            if Arc::ptr_eq(sink_topic, &rec.sink_topic) {
                return Ok(kafka.clone());
            }
        }
        let kafka: Arc<str> = kafka_topic(&rec.sink_topic)?.into();
        self.last_topic = Some((rec.sink_topic.clone(), kafka.clone()));
        Ok(kafka)
    }

    /// Makes sure `topic` exists, creating it when it does not.
    async fn ready(&mut self, topic: &str) -> Result<(), NotReady> {
        if self.known.contains(topic) {
            return Ok(());
        }
        let cfg = &self.sink.cfg;
        let clients = self
            .clients
            .as_ref()
            .ok_or(NotReady::Later("not connected".into()))?;
        match clients.create(cfg, topic).await {
            Ok(true) => info!(
                "created the Kafka topic {topic} ({} partitions, {} replicas)",
                cfg.partitions, cfg.replicas
            ),
            Ok(false) => {}
            // Made beforehand by someone allowed to, for a user who may
            // not create topics: used as it is.
            Err(NotReady::Later(_)) if clients.exists(topic).await => {}
            Err(e) => return Err(e),
        }
        if self.known.len() >= MAX_KNOWN_TOPICS {
            self.known.clear();
        }
        self.known.insert(topic.to_string());
        Ok(())
    }

    /// Hands what failed first, then new events, to the producer, up to
    /// the window.
    async fn send(&mut self) {
        let sink = self.sink;
        while self.inflight.len() < sink.cfg.inflight {
            let room = sink.cfg.inflight - self.inflight.len();
            let Some(job) = self.outbox.next(&sink.buffer, room) else {
                break;
            };
            let topic = match self.topic(&job.rec) {
                Ok(t) => t,
                Err(why) => {
                    self.refuse(&job.rec, Reason::InvalidTopic, &why);
                    continue;
                }
            };
            let ready = match &self.last_ready {
                Some(t) if Arc::ptr_eq(t, &topic) => Ok(()),
                _ => self.ready(&topic).await,
            };
            match ready {
                Ok(()) => self.last_ready = Some(topic.clone()),
                Err(NotReady::Refused(why)) => {
                    self.refuse(&job.rec, Reason::InvalidTopic, &why);
                    continue;
                }
                Err(NotReady::Later(why)) => {
                    self.outbox.retry(job);
                    return self.trouble(&why);
                }
            }
            let Some(clients) = &self.clients else {
                self.outbox.retry(job);
                return;
            };
            let key = job.rec.id.as_ref().map(|id| {
                let (source, id) = (&sink.cfg.source_id, id.as_str());
                let mut key = String::with_capacity(source.len() + 1 + id.len());
                key.push_str(source);
                key.push(':');
                key.push_str(id);
                key
            });
            let mut record = FutureRecord::<String, [u8]>::to(&topic).payload(&job.rec.payload);
            if let Some(key) = &key {
                record = record.key(key);
            }
            match clients.producer.send_result(record) {
                Ok(delivery) => {
                    inc(if job.again {
                        &sink.metrics.republished
                    } else {
                        &sink.metrics.published
                    });
                    self.inflight.push(InFlight {
                        job: Some(job),
                        generation: self.generation,
                        delivery,
                    });
                }
                Err((e, _)) => match e.rdkafka_error_code() {
                    Some(RDKafkaErrorCode::MessageSizeTooLarge) => {
                        let why = format!("{} bytes: {e}", job.rec.payload.len());
                        self.refuse(&job.rec, Reason::TooLarge, &why);
                    }
                    // librdkafka's own queue is full: wait for deliveries.
                    Some(RDKafkaErrorCode::QueueFull) => {
                        self.outbox.retry(job);
                        return;
                    }
                    _ => {
                        self.outbox.retry(job);
                        return self.trouble(&format!("cannot produce to Kafka: {e}"));
                    }
                },
            }
        }
    }

    fn refuse(&mut self, rec: &Record, reason: Reason, why: &str) {
        self.refused
            .log(WARN, || format!("refused an event: {why}"));
        self.sink.buffer.refuse(rec, reason, why);
    }

    fn settle(&mut self, (job, result, generation): Outcome) {
        let sink = self.sink;
        let e = match result {
            Some(Ok(())) => {
                inc(&sink.metrics.acked);
                sink.buffer.release(&job.rec);
                self.backoff.reset();
                if !sink.metrics.sink_connected.swap(true, Ordering::Relaxed) {
                    info!("connected to Kafka at {}", sink.cfg.url());
                }
                return;
            }
            Some(Err(e)) => e,
            None => {
                self.outbox.retry(Job { again: true, ..job });
                return;
            }
        };
        match e.rdkafka_error_code() {
            Some(RDKafkaErrorCode::MessageSizeTooLarge | RDKafkaErrorCode::InvalidRecord) => {
                let why = format!("{} bytes: {e}", job.rec.payload.len());
                self.refuse(&job.rec, Reason::TooLarge, &why);
            }
            Some(RDKafkaErrorCode::InvalidTopic) => {
                self.refuse(&job.rec, Reason::InvalidTopic, &e.to_string());
            }
            code => {
                if code == Some(RDKafkaErrorCode::UnknownTopicOrPartition) {
                    // Deleted since: made again before the next send.
                    if let Ok(t) = self.topic(&job.rec) {
                        self.known.remove(&*t);
                        self.last_ready = None;
                    }
                }
                let topic = job.rec.sink_topic.clone();
                self.outbox.retry(Job { again: true, ..job });
                if generation != self.generation || self.fatal() {
                    return;
                }
                let why = format!("Kafka did not take an event for {topic:?}: {e}");
                if code.is_some_and(producer_state_lost) {
                    return self.renew(&why);
                }
                self.trouble(&why);
            }
        }
    }

    /// After a fatal error librdkafka's producer takes nothing more: it is
    /// made anew.
    fn fatal(&mut self) -> bool {
        use rdkafka::producer::Producer as _;
        let Some(clients) = &self.clients else {
            return false;
        };
        let Some((code, why)) = clients.producer.client().fatal_error() else {
            return false;
        };
        self.renew(&format!("the Kafka producer failed ({code}: {why})"));
        true
    }

    /// Drops the producer (what it held comes back as not delivered, to be
    /// sent again) and makes a new one after a backoff: a new producer id,
    /// so the broker's idea of the old one's sequence no longer matters.
    fn renew(&mut self, why: &str) {
        self.clients = None;
        self.known.clear();
        self.last_ready = None;
        if self
            .sink
            .metrics
            .sink_connected
            .swap(false, Ordering::Relaxed)
        {
            inc(&self.sink.metrics.sink_disconnects);
        }
        self.trouble(&format!(
            "{why}; making a new producer, what the old one held is sent again"
        ));
    }
}

/// Broker answers that mean it no longer knows this producer's state (its
/// id, epoch or sequence), as a broker restarted without it answers; a new
/// producer starts a fresh sequence. A broker that fails for its own
/// reasons (`UNKNOWN_SERVER_ERROR`) is in the list too: the same producer
/// would be refused again and again.
fn producer_state_lost(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::Unknown
            | RDKafkaErrorCode::OutOfOrderSequenceNumber
            | RDKafkaErrorCode::DuplicateSequenceNumber
            | RDKafkaErrorCode::UnknownProducerId
            | RDKafkaErrorCode::InvalidProducerEpoch
            | RDKafkaErrorCode::InvalidProducerIdMapping
            | RDKafkaErrorCode::ProducerFenced
    )
}
