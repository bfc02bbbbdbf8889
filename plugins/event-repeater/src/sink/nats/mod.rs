//! The NATS sink: JetStream publishes (QoS 1 and 2) or core publishes
//! (QoS 0) through the async-nats client.
//!
//! # Delivery
//! At QoS 1 and 2 an event is done only when the stream acknowledged it. Up
//! to `--inflight` publishes wait for their acknowledgement at once; one that
//! fails (no acknowledgement within `--ack-timeout`, the connection lost, no
//! stream answering) is published again after a backoff, oldest first, and
//! counted as republished. Every publish of an event with an SSE id carries
//! `Nats-Msg-Id: SOURCE_ID:KEY` (`crate::event_key`), so the stream stores it once within its
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

pub mod acks;
pub mod config;
mod core;
mod dups;
mod jetstream;
mod options;
mod stream;
pub mod subject;
pub mod trouble;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_nats::connection::State;
use async_nats::{Client, Subject};
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::Notify;

use crate::buffer::{Buffer, Record};
use crate::flag_values::Qos;
use crate::metrics::Metrics;
use crate::sink::nats::subject::subject;
use crate::sink::{Drain, Refusal, Setup, Sink, SinkConfig, SinkKind, TopicRules};
use app_plugin::address::Scheme;
use app_plugin::log::{RateLimited, WARN};

pub use config::NatsConfig;
pub use stream::OWN_STREAM;

/// `--sinkprotocol nats`.
pub struct Nats;

impl SinkKind for Nats {
    const NAME: &'static str = "nats";
    const ABOUT: &'static str = "Publish to NATS: JetStream at QoS 1 and 2, core NATS at QoS 0";
    const SCHEMES: &'static [Scheme] = config::URLS.schemes;
    const SOURCE_ID: bool = true;
    type Args = config::Args;

    fn configure(args: config::Args, setup: &Setup) -> Result<Box<dyn SinkConfig>, String> {
        Ok(Box::new(config::configure(&args, setup)?))
    }
}

impl SinkConfig for NatsConfig {
    fn url(&self) -> String {
        NatsConfig::url(self)
    }

    fn rules(&self) -> Arc<dyn TopicRules> {
        Arc::new(NatsRules)
    }

    /// Connects, and refuses the start when the sink can never work (see
    /// [`trouble::check_at_start`]).
    fn build(
        &self,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
    ) -> BoxFuture<'_, Result<Box<dyn Sink>, String>> {
        let sink = NatsSink {
            cfg: self.clone(),
            buffer,
            metrics,
        };
        async move { Ok(Box::new(sink.start().await?) as Box<dyn Sink>) }.boxed()
    }
}

/// The NATS sink's topic rules.
pub struct NatsRules;

impl TopicRules for NatsRules {
    /// Why no NATS subject can be made of `topic` (see [`subject`]: no
    /// whitespace, control characters or wildcards, no reserved namespace,
    /// some token left); the size limit is the server's and is checked by
    /// the sink.
    fn refuse_topic(&self, topic: &str) -> Option<Refusal> {
        refuse(topic)
    }
}

/// Why no NATS subject can be made of `topic` (see [`subject`]: no
/// whitespace, control characters or wildcards, no reserved namespace, some
/// token left); the size limit is the server's and is checked by the sink.
pub fn refuse(topic: &str) -> Option<Refusal> {
    subject(topic).err().map(Refusal::InvalidTopic)
}

pub struct NatsSink {
    pub cfg: NatsConfig,
    pub buffer: Arc<Buffer>,
    pub metrics: Arc<Metrics>,
}

fn is_connected(client: &Client) -> bool {
    client.connection_state() == State::Connected
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

impl Sink for StartedNats {
    fn run(self: Box<Self>, drain: Drain) -> BoxFuture<'static, usize> {
        StartedNats::run(*self, drain).boxed()
    }
}

impl NatsSink {
    /// Sets up the client and, for JetStream, checks what can never work
    /// (see [`trouble::check_at_start`]); `Err` is a start-up failure.
    pub async fn start(self) -> Result<StartedNats, String> {
        let link = Arc::new(Notify::new());
        let options = options::options(&self.cfg, self.metrics.clone(), link.clone()).await?;
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
            trouble::check_at_start(&client, &self.cfg).await?;
        }
        Ok(StartedNats {
            sink: self,
            client,
            link,
        })
    }

    fn refuse(&self, rec: &Record, why: &str, refused: &RateLimited) {
        refused.log(WARN, || format!("refused an event: {why}"));
        self.buffer
            .refuse(rec, crate::reason::Reason::InvalidTopic, why);
    }
}
