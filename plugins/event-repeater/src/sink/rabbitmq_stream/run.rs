//! The sink's loop: publishes in batches up to the window, settles what
//! RabbitMQ confirms, and on any trouble with the connection drops it and
//! sends again, on a new one, what was not confirmed.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use app_plugin::log::{info, RateLimited, WARN};
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::metrics::{inc, set_problem};
use crate::reason::Reason;
use crate::sink::outbox::{Job, Outbox};
use crate::sink::rabbitmq_stream::client::proto::code_name;
use crate::sink::rabbitmq_stream::client::{max_body, Batch};
use crate::sink::rabbitmq_stream::link::{self, Event, Link, NotReady};
use crate::sink::rabbitmq_stream::pubid::publishing_id;
use crate::sink::rabbitmq_stream::RabbitSink;
use crate::sink::{until, Drain};

/// A publish frame holds at most this many bytes of events (one bigger
/// event goes alone, within the tuned frame max).
const BATCH_BYTES: usize = 256 * 1024;

/// The loop's maps, looked up several times per event: foldhash rather
/// than std's SipHash, which took 18.7% of the repeater's instructions per
/// event here (callgrind, docs/benchmarks.md). Their keys are producer
/// numbers and publishing ids, and `pending` holds at most `--inflight`
/// entries, so a source choosing colliding ids gains nothing.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

struct Sent {
    job: Job,
    at: Instant,
    /// The stream held this id for the producer already: a duplicate.
    dup: bool,
}

struct Loop<'a> {
    sink: &'a RabbitSink,
    link: Option<Link>,
    /// The next `--sink` node to connect to.
    next_node: usize,
    /// Awaiting confirmation, by (producer, publishing id), and the order
    /// they were sent in (for the timeout).
    pending: Map<(u8, u64), Sent>,
    sent_order: VecDeque<(Instant, (u8, u64))>,
    /// In flight per producer, and the highest id sent per named producer,
    /// on this connection.
    busy: Map<u8, usize>,
    high: Map<u8, u64>,
    /// The highest id sent per stream in this run (a source going back).
    run_high: Map<Arc<str>, u64>,
    plain_seq: u64,
    /// Not sent yet, or not confirmed on an earlier connection.
    outbox: Outbox,
    backoff: Backoff,
    paused_until: Option<Instant>,
    trouble: RateLimited,
    refused: RateLimited,
    backwards: RateLimited,
}

async fn next_event(link: &mut Option<Link>) -> Option<Event> {
    match link {
        Some(l) => l.events.recv().await,
        None => std::future::pending().await,
    }
}

/// Runs until the drain ends; returns the number of undelivered events.
pub async fn run(sink: RabbitSink, drain: Drain) -> usize {
    let mut l = Loop::new(&sink);
    let mut deadline = None;
    let undelivered = loop {
        drain.beat();
        let dl = drain.deadline(&mut deadline);
        let held = l.pending.len() + l.outbox.held();
        if dl.is_some() && held == 0 && sink.buffer.is_queue_empty() {
            break 0;
        }
        if dl.is_some_and(|d| Instant::now() >= d || l.link.is_none()) {
            break held + sink.buffer.stats().queued;
        }
        if !l.paused() {
            if l.link.is_none() {
                l.connect().await;
            }
            if l.link.is_some() {
                if let Err(e) = l.send().await {
                    l.trouble(&e).await;
                }
            }
        }
        let (paused, connected) = (l.paused(), l.link.is_some());
        let want_new = connected && !paused && l.pending.len() < sink.cfg.inflight;
        let timeout_at = l.sent_order.front().map(|(t, _)| *t + sink.cfg.ack_timeout);
        tokio::select! {
            ev = next_event(&mut l.link) => {
                l.settle(ev.unwrap_or_else(|| Event::Closed("the connection ended".into()))).await;
                while let Some(ev) = l.link.as_mut().and_then(|k| k.events.try_recv().ok()) {
                    l.settle(ev).await;
                }
            }
            _ = until(timeout_at), if timeout_at.is_some() => l.expire().await,
            _ = sink.buffer.ready(), if want_new && !l.outbox.has_retries() => {}
            _ = until(l.paused_until), if paused => { l.paused_until = None; }
            _ = drain.stop.recv(), if dl.is_none() => {}
            _ = until(dl) => {}
            _ = drain.watchdog_due() => {}
        }
    };
    if let Some(link) = l.link.take() {
        link.close().await;
    }
    sink.metrics.sink_connected.store(false, Ordering::Relaxed);
    undelivered
}

impl<'a> Loop<'a> {
    fn new(sink: &'a RabbitSink) -> Loop<'a> {
        Loop {
            sink,
            link: None,
            next_node: 0,
            pending: Map::default(),
            sent_order: VecDeque::new(),
            busy: Map::default(),
            high: Map::default(),
            run_high: Map::default(),
            plain_seq: 0,
            outbox: Outbox::default(),
            backoff: Backoff::network(),
            paused_until: None,
            trouble: RateLimited::new(Duration::from_secs(5)),
            refused: RateLimited::new(Duration::from_secs(5)),
            backwards: RateLimited::new(Duration::from_secs(60)),
        }
    }

    fn paused(&self) -> bool {
        self.paused_until.is_some_and(|t| Instant::now() < t)
    }

    fn pause(&mut self) {
        self.paused_until = Some(Instant::now() + self.backoff.next_delay());
    }

    async fn connect(&mut self) {
        let cfg = &self.sink.cfg;
        let node = &cfg.nodes[self.next_node % cfg.nodes.len()];
        self.next_node += 1;
        match link::connect(cfg, self.sink.tls.as_ref(), node).await {
            Ok(link) => {
                info!("connected to RabbitMQ at {}", link.node);
                self.sink
                    .metrics
                    .sink_connected
                    .store(true, Ordering::Relaxed);
                self.link = Some(link);
            }
            Err(e) => {
                set_problem(&self.sink.metrics.sink_last_error, &e);
                self.trouble.log(WARN, || {
                    format!("{e}; retrying with backoff, events are kept in the buffer")
                });
                self.pause();
            }
        }
    }

    /// Drops the connection: what it did not confirm is sent again on the
    /// next one.
    async fn lose(&mut self) {
        if let Some(link) = self.link.take() {
            inc(&self.sink.metrics.sink_disconnects);
            self.sink
                .metrics
                .sink_connected
                .store(false, Ordering::Relaxed);
            link.close().await;
        }
        for (_, sent) in self.pending.drain() {
            let job = Job {
                again: true,
                ..sent.job
            };
            self.outbox.retry(job);
        }
        self.sent_order.clear();
        self.busy.clear();
        self.high.clear();
    }

    /// Something went wrong with the connection: logged (rate limited),
    /// the connection dropped, and the next attempt after a backoff.
    async fn trouble(&mut self, why: &str) {
        set_problem(&self.sink.metrics.sink_last_error, why);
        self.trouble.log(WARN, || {
            format!("{why}; reconnecting, what was not confirmed is sent again")
        });
        self.lose().await;
        self.pause();
    }

    /// Sends what failed first, then new events, up to the window, in
    /// batches per producer.
    async fn send(&mut self) -> Result<(), String> {
        let sink = self.sink;
        let mut batch: Option<Batch> = None;
        while self.pending.len() < sink.cfg.inflight {
            let room = sink.cfg.inflight - self.pending.len();
            let Some(job) = self.outbox.next(&sink.buffer, room) else {
                break;
            };
            // A replayed dead letter's id is below what the stream stored
            // since: under the named producer it would be dropped as a
            // duplicate, never stored. It goes by the producer without a
            // name (at least once).
            let id = match job.rec.letter {
                Some(_) => None,
                None => publishing_id(job.rec.id.as_ref()),
            };
            let stream = job.rec.sink_topic.clone();
            let busy = &self.busy;
            let link = self.link.as_mut().ok_or("not connected")?;
            let frame_max = link.client.frame_max;
            let len = job.rec.payload.len();
            if len > max_body(frame_max) {
                // RabbitMQ agreed on smaller frames than MAX_EVENT assumes.
                let why = format!(
                    "{len} bytes: RabbitMQ at {} takes frames of {frame_max} bytes",
                    link.node
                );
                self.refused
                    .log(WARN, || format!("refused an event of {why}"));
                sink.buffer.refuse(&job.rec, Reason::TooLarge, &why);
                continue;
            }
            let producers = match link.last_ready(&stream, id.is_none()) {
                Some(p) => Ok(p),
                None => {
                    link.ready(&sink.cfg, &stream, id.is_none(), |p| {
                        busy.get(&p).is_some_and(|&n| n > 0)
                    })
                    .await
                }
            };
            let producers = match producers {
                Ok(p) => p,
                Err(NotReady::Refused(why)) => {
                    self.refused
                        .log(WARN, || format!("refused an event: {why}"));
                    sink.buffer.refuse(&job.rec, Reason::InvalidTopic, &why);
                    continue;
                }
                Err(NotReady::Later(why)) => {
                    self.outbox.retry(job);
                    self.flush(batch.take()).await?;
                    return Err(why);
                }
            };
            let (producer, pub_id, dup) = match id {
                Some(n) => {
                    let p = producers.named;
                    if self.pending.contains_key(&(p, n)) {
                        // The same id is in flight: wait for its answer.
                        self.outbox.retry(job);
                        break;
                    }
                    let high = self.high.get(&p).copied();
                    let dup = n <= producers.stored && producers.stored > 0
                        || high.is_some_and(|h| n <= h);
                    self.high.insert(p, high.map_or(n, |h| h.max(n)));
                    self.note_order(&stream, n, job.again);
                    (p, n, dup)
                }
                None => {
                    self.plain_seq += 1;
                    let p = producers.plain.ok_or("internal: no plain producer")?;
                    (p, self.plain_seq, false)
                }
            };
            let full = |b: &Batch| {
                b.publisher() != producer
                    || !b.fits(len, frame_max)
                    || b.bytes() + len > BATCH_BYTES
            };
            if batch.as_ref().is_some_and(full) {
                self.flush(batch.take()).await?;
            }
            batch
                .get_or_insert_with(|| Batch::new(producer))
                .push(pub_id, &job.rec.payload);
            if job.again {
                inc(&sink.metrics.republished);
            } else {
                inc(&sink.metrics.published);
            }
            *self.busy.entry(producer).or_default() += 1;
            let at = Instant::now();
            self.sent_order.push_back((at, (producer, pub_id)));
            self.pending
                .insert((producer, pub_id), Sent { job, at, dup });
        }
        self.flush(batch).await
    }

    /// A number lower than one this run already sent to the stream, in a
    /// new event: the source went back, and the stream will drop its events
    /// as duplicates until it passes the highest it stored.
    fn note_order(&mut self, stream: &Arc<str>, n: u64, again: bool) {
        let high = self.run_high.entry(stream.clone()).or_insert(n);
        if n < *high && !again {
            let (h, s) = (*high, stream.clone());
            self.backwards.log(WARN, || {
                format!(
                    "the source's ids went back from {h} to {n}: the stream {s:?} drops events numbered up to {h} as duplicates of the ones it holds; if the source numbered its events anew, give it a new --source-id"
                )
            });
        }
        *high = (*high).max(n);
    }

    async fn flush(&mut self, batch: Option<Batch>) -> Result<(), String> {
        let Some(batch) = batch.filter(|b| b.count() > 0) else {
            return Ok(());
        };
        let link = self.link.as_ref().ok_or("not connected")?;
        link.client
            .publish(batch)
            .await
            .map_err(|e| format!("cannot publish to RabbitMQ ({}): {e}", link.node))
    }

    async fn settle(&mut self, event: Event) {
        let sink = self.sink;
        match event {
            Event::Confirmed(producer, ids) => {
                for id in ids {
                    let Some(sent) = self.pending.remove(&(producer, id)) else {
                        continue;
                    };
                    if let Some(n) = self.busy.get_mut(&producer) {
                        *n = n.saturating_sub(1);
                    }
                    if sent.dup {
                        inc(&sink.metrics.duplicates);
                    }
                    inc(&sink.metrics.acked);
                    sink.buffer.release(&sent.job.rec);
                }
                self.backoff.reset();
                self.trim();
            }
            Event::Failed(producer, errors) => {
                let Some(&(id, code)) = errors.first() else {
                    return;
                };
                let stream = self
                    .pending
                    .get(&(producer, id))
                    .map(|s| s.job.rec.sink_topic.to_string())
                    .unwrap_or_default();
                self.trouble(&format!(
                    "RabbitMQ refused {} publishes to the stream {stream:?} ({})",
                    errors.len(),
                    code_name(code)
                ))
                .await;
            }
            Event::Closed(why) => {
                let node = self
                    .link
                    .as_ref()
                    .map(|l| l.node.clone())
                    .unwrap_or_default();
                self.trouble(&format!("lost the connection to RabbitMQ at {node}: {why}"))
                    .await;
            }
            Event::Delivered(..) => {}
        }
    }

    /// Drops the answered entries from the front of the send order.
    fn trim(&mut self) {
        // An entry is answered when its key waits no more, or waits for a
        // later publish of the same id.
        while let Some((at, key)) = self.sent_order.front() {
            if self.pending.get(key).is_some_and(|s| s.at == *at) {
                break;
            }
            self.sent_order.pop_front();
        }
    }

    /// The oldest publish waited longer than `--ack-timeout`.
    async fn expire(&mut self) {
        self.trim();
        let timeout = self.sink.cfg.ack_timeout;
        if self
            .sent_order
            .front()
            .is_some_and(|(t, _)| *t + timeout <= Instant::now())
        {
            let node = self
                .link
                .as_ref()
                .map(|l| l.node.clone())
                .unwrap_or_default();
            self.trouble(&format!(
                "RabbitMQ at {node} confirmed nothing for {timeout:?} (--ack-timeout)"
            ))
            .await;
        }
    }
}
