//! QoS 1 and 2: JetStream publishes, done when the stream acknowledged
//! them; failed ones are sent again after a backoff, oldest first.

use app_plugin::log::warn;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use async_nats::jetstream;
use async_nats::{Client, HeaderMap, Subject};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::backoff::Backoff;
use crate::buffer::Record;
use crate::metrics::{inc, set_problem};
use crate::reason::Reason;
use crate::sink::nats::acks::{self, Acks, Outcome, Stored};
use crate::sink::nats::dups::Dups;
use crate::sink::nats::stream::{Ready, StreamBook};
use crate::sink::nats::subject::first_token;
use crate::sink::nats::trouble::{self, Condition};
use crate::sink::nats::{is_connected, LastSubject, NatsSink};
use crate::sink::{until, Drain};
use app_plugin::log::{RateLimited, WARN};

/// The next message on the acknowledgement inbox (`None`: it ended); never
/// returns once it has ended.
async fn next_message(inbox: &mut Option<async_nats::Subscriber>) -> Option<async_nats::Message> {
    match inbox {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// An event on its way: the record and its subject.
struct Job {
    rec: Record,
    subject: Subject,
    sent_before: bool,
}

/// The JetStream loop's state between turns.
struct Publisher<'a> {
    sink: &'a NatsSink,
    client: &'a Client,
    js: jetstream::Context,
    /// `--inflight`: publishes awaiting their acknowledgement at once.
    window: usize,
    refused: RateLimited,
    trouble: RateLimited,
    book: StreamBook,
    subjects: LastSubject,
    /// The server's limit, read once per connection (server_info() clones
    /// the whole INFO).
    max_payload: Option<usize>,
    /// Acknowledgements awaited in this task, all on one inbox
    /// subscription (sink::nats::acks).
    acks: Acks<Job>,
    /// Failed publishes, by acceptance order, to send again first.
    retry: BTreeMap<u64, Job>,
    backoff: Backoff,
    paused_until: Option<Instant>,
    warned_missing: HashSet<String>,
    /// No JetStream, replicas it cannot place, a full stream: said once.
    condition: Condition,
    dups: Dups,
}

impl NatsSink {
    /// QoS 1 and 2: JetStream publishes, done when acknowledged.
    pub(super) async fn run_jetstream(
        &self,
        client: &Client,
        link: &Notify,
        drain: Drain,
    ) -> usize {
        let mut p = Publisher::new(self, client);
        let mut inbox = match client.subscribe(p.acks.filter()).await {
            Ok(s) => Some(s),
            Err(e) => {
                app_plugin::error!(
                    "cannot subscribe to an inbox for JetStream acknowledgements: {e}"
                );
                drain.stop.recv().await;
                return self.buffer.stats().queued;
            }
        };
        let mut outcomes: Vec<Outcome<Job>> = Vec::new();
        let mut deadline = None;
        loop {
            drain.beat();
            let dl = drain.deadline(&mut deadline);
            let held = p.acks.len() + p.retry.len();
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
                p.max_payload = None;
            }
            if connected && !p.paused() {
                p.send().await;
            }
            let paused = p.paused();
            let want_new = connected && !paused && p.acks.has_room(p.window);
            tokio::select! {
                msg = next_message(&mut inbox) => match msg {
                    Some(msg) => {
                        outcomes.extend(p.acks.arrived(&msg));
                        // And whatever else arrived already: one turn for all.
                        while let Some(Some(msg)) = inbox.as_mut().and_then(|s| s.next().now_or_never()) {
                            outcomes.extend(p.acks.arrived(&msg));
                        }
                    }
                    // The client is closed; what waits times out.
                    None => inbox = None,
                },
                _ = until(p.acks.deadline()), if !p.acks.is_empty() => {
                    let timed_out = p.acks.expired(Instant::now());
                    outcomes.extend(timed_out.into_iter().map(|job| (job, Err(acks::TIMED_OUT.to_string()))));
                }
                _ = self.buffer.ready(), if want_new && p.retry.is_empty() => {}
                _ = until(p.paused_until), if paused => { p.paused_until = None; }
                _ = link.notified() => { p.max_payload = None; }
                // The state may change just after the event that announced it.
                _ = tokio::time::sleep(Duration::from_millis(250)), if !connected => {}
                _ = drain.stop.recv(), if dl.is_none() => {}
                _ = until(dl) => {}
                _ = drain.watchdog_due() => {}
            }
            for (job, result) in outcomes.drain(..) {
                p.settle(job, result, paused);
            }
        }
    }

    /// The subject, payload and headers of `job`'s publish: every event with
    /// a key carries `Nats-Msg-Id: SOURCE_ID:KEY` (see [`crate::event_key`]).
    fn message(&self, job: &Job) -> (Subject, Bytes, Option<HeaderMap>) {
        let headers = job.rec.id.as_ref().map(|id| {
            let id = id.as_str();
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
}

impl<'a> Publisher<'a> {
    fn new(sink: &'a NatsSink, client: &'a Client) -> Publisher<'a> {
        let cfg = &sink.cfg;
        Publisher {
            sink,
            client,
            js: jetstream::ContextBuilder::new()
                .timeout(cfg.ack_timeout)
                .ack_timeout(cfg.ack_timeout)
                .max_ack_inflight(usize::from(cfg.inflight))
                .backpressure_on_inflight(true)
                .build(client.clone()),
            window: usize::from(cfg.inflight),
            refused: RateLimited::new(Duration::from_secs(5)),
            trouble: RateLimited::new(Duration::from_secs(5)),
            book: StreamBook {
                subjects: Vec::new(),
                last_captured: String::new(),
                own: false,
                known: false,
            },
            subjects: LastSubject::default(),
            max_payload: None,
            acks: Acks::new(&client.new_inbox(), cfg.ack_timeout),
            retry: BTreeMap::new(),
            backoff: Backoff::network(),
            paused_until: None,
            warned_missing: HashSet::new(),
            condition: Condition::new(sink.metrics.clone(), cfg),
            dups: Dups::new(sink.metrics.clone(), &cfg.source_id),
        }
    }

    /// Whether publishing waits for a backoff.
    fn paused(&self) -> bool {
        self.paused_until.is_some_and(|t| Instant::now() < t)
    }

    /// Sends what failed first, then new events, up to the window.
    async fn send(&mut self) {
        let sink = self.sink;
        let client = self.client;
        let limit = *self
            .max_payload
            .get_or_insert_with(|| client.server_info().max_payload);
        while self.acks.has_room(self.window) {
            let Some(job) = self.next_job() else { break };
            if job.rec.payload.len() > limit {
                let s = job.subject.clone();
                let why = format!("over the server's max_payload ({limit} bytes)");
                self.refused
                    .log(WARN, || format!("refused an event for {s}: {why}"));
                sink.buffer.refuse(&job.rec, Reason::TooLarge, &why);
                continue;
            }
            match sink.ready(&self.js, &mut self.book, &job.subject).await {
                Ready::Go => {}
                Ready::Refuse(why) => {
                    sink.buffer.refuse(&job.rec, Reason::SinkError, &why);
                    if self
                        .warned_missing
                        .insert(first_token(&job.subject).to_string())
                    {
                        warn!("{why}; such events are counted as failed (sink_error)");
                    }

                    continue;
                }
                Ready::Later(why) => {
                    set_problem(&sink.metrics.sink_last_error, &why);
                    let delay = self.backoff.next_delay();
                    if !self.condition.failed(&why) {
                        self.trouble
                            .log(WARN, || format!("{why}; retrying with backoff"));
                    }
                    // Each retry, at debug: a known condition is warned about once.
                    app_plugin::log::debug!(
                        "JetStream still refuses, trying again in {}ms: {why}",
                        delay.as_millis()
                    );
                    self.retry.insert(job.rec.seq, job);
                    self.paused_until = Some(Instant::now() + delay);
                    break;
                }
            }
            if !self.publish(job).await {
                break;
            }
        }
    }

    /// The next publish: one to send again, else a new event (an event no
    /// subject can be made of is refused on the way).
    fn next_job(&mut self) -> Option<Job> {
        if let Some((_, job)) = self.retry.pop_first() {
            return Some(job);
        }
        loop {
            let rec = self.sink.buffer.take_one()?;
            match self.subjects.of(&rec.sink_topic) {
                Ok(subject) => {
                    return Some(Job {
                        rec,
                        subject,
                        sent_before: false,
                    })
                }
                Err(why) => self.sink.refuse(&rec, &why, &self.refused),
            }
        }
    }

    /// Publishes `job` with its reply subject; `false` when the client
    /// could not take it (it is kept to send again after a backoff).
    async fn publish(&mut self, job: Job) -> bool {
        let metrics = &self.sink.metrics;
        let (subject, payload, headers) = self.sink.message(&job);
        let again = job.sent_before;
        let reply = self.acks.add(job, Instant::now());
        let sent = match headers {
            Some(h) => {
                self.client
                    .publish_with_reply_and_headers(subject, reply, h, payload)
                    .await
            }
            None => {
                self.client
                    .publish_with_reply(subject, reply, payload)
                    .await
            }
        };
        match sent {
            Ok(()) => {
                if again {
                    inc(&metrics.republished);
                } else {
                    inc(&metrics.published);
                }
                true
            }
            Err(e) => {
                let Some(job) = self.acks.unsend() else {
                    return false;
                };
                let e = e.to_string();
                set_problem(&metrics.sink_last_error, &e);
                if !self.condition.failed(&e) {
                    self.trouble.log(WARN, || {
                        format!("cannot publish to JetStream: {e}; retrying with backoff")
                    });
                }
                self.retry.insert(
                    job.rec.seq,
                    Job {
                        sent_before: true,
                        ..job
                    },
                );
                self.paused_until = Some(Instant::now() + self.backoff.next_delay());
                false
            }
        }
    }

    /// What became of a publish: done when stored, else sent again after a
    /// backoff (unless it can never be stored). `paused`: a backoff was
    /// already under way when it came.
    fn settle(&mut self, job: Job, result: Result<Stored, String>, paused: bool) {
        let sink = self.sink;
        let e = match result {
            Ok(stored) => {
                if let Some(original) = stored {
                    let (s, p) = (&job.subject, &job.rec.payload);
                    self.dups.seen(&self.js, original, s, p, job.sent_before);
                }
                self.backoff.reset();
                self.condition.stored();
                inc(&sink.metrics.acked);
                sink.buffer.release(&job.rec);
                return;
            }
            Err(e) => e,
        };
        set_problem(&sink.metrics.sink_last_error, &e);
        if e.contains("no stream found") || e.contains("does not exist") {
            // The stream went away or lost the subject: look again.
            self.book.known = false;
        }
        if trouble::over_stream_max_msg_size(&e) {
            // Never storable: sending it again would only hold up the
            // events behind it.
            let s = job.subject.clone();
            let why = format!("over the stream's max_msg_size ({e})");
            self.refused
                .log(WARN, || format!("refused an event for {s}: {why}"));
            sink.buffer.refuse(&job.rec, Reason::TooLarge, &why);
            return;
        }
        if !self.condition.failed(&e) {
            self.trouble.log(WARN, || {
                format!(
                    "a JetStream publish was not acknowledged: {e}; it is sent again after a backoff"
                )
            });
        }
        self.retry.insert(
            job.rec.seq,
            Job {
                sent_before: true,
                ..job
            },
        );
        if !paused {
            self.paused_until = Some(Instant::now() + self.backoff.next_delay());
        }
    }
}
