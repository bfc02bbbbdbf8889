//! The Kafka sink (`--sinkprotocol kafka`): every event is produced to the
//! Kafka topic its sink topic maps to ([`topics`]), through librdkafka
//! (the `rdkafka` crate, built with its own copy of the library).
//!
//! # Delivery
//! An idempotent producer with `acks=all` ([`config::KafkaConfig::client_config`]):
//! an event is done only when the partition's in-sync replicas have it, and
//! librdkafka's retries within a producer session never store a record
//! twice. Up to `--inflight` events wait for their acknowledgement at once.
//! A delivery that fails or takes longer than `--ack-timeout` is sent again
//! after a backoff, oldest first, counted as republished; the checkpoint
//! moves past an event only once it is acknowledged.
//!
//! # Deduplication
//! An event with a dedup key ([`crate::event_key`]) gets the record key
//! `SOURCE_ID:KEY`, the text NATS uses as `Nats-Msg-Id`: a copy sent again
//! after a crash, or by a second repeater of the source, lands in the same
//! partition with the same key, so a consumer (or a compacted topic) keeps
//! one. Kafka itself does not drop such copies: its idempotence spans one
//! producer session, not a restart or another producer.
//!
//! # Topics
//! A topic that does not exist is created (`--kafka-partitions`,
//! `--kafka-replicas`); one that exists is used as it is. A sink topic
//! Kafka cannot name is refused and counted, never held.

mod args;
pub mod config;
mod producer;
mod run;
pub mod topics;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use app_plugin::address::Scheme;

use crate::buffer::Buffer;
use crate::metrics::Metrics;
use crate::sink::{Drain, Refusal, Setup, Sink, SinkConfig, SinkKind, TopicRules};

pub use args::Args;
pub use config::KafkaConfig;

/// The largest event the sink produces: under the 1 MB a Kafka broker takes
/// in a record batch by default (`message.max.bytes`), with room for the
/// key and the batch's own fields.
pub const MAX_EVENT: usize = 1_000_000 - 16 * 1024;

/// `--sinkprotocol kafka`.
pub struct Kafka;

impl SinkKind for Kafka {
    const NAME: &'static str = "kafka";
    const ABOUT: &'static str =
        "Produce to Kafka with an idempotent producer, keyed by SOURCE_ID:KEY";
    const SCHEMES: &'static [Scheme] = config::URLS.schemes;
    const SOURCE_ID: bool = true;
    type Args = Args;

    fn configure(args: Args, setup: &Setup) -> Result<Box<dyn SinkConfig>, String> {
        Ok(Box::new(config::configure(&args, setup)?))
    }
}

impl SinkConfig for KafkaConfig {
    fn url(&self) -> String {
        KafkaConfig::url(self)
    }

    fn rules(&self) -> Arc<dyn TopicRules> {
        Arc::new(KafkaRules)
    }

    fn max_event(&self) -> Option<usize> {
        Some(MAX_EVENT)
    }

    /// Makes the clients (librdkafka checks its settings here), which the
    /// sink then uses; they connect, and keep trying, once the sink runs.
    fn build(
        &self,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
    ) -> BoxFuture<'_, Result<Box<dyn Sink>, String>> {
        async move {
            let clients = producer::Clients::make(self, &metrics)?;
            let sink = KafkaSink {
                cfg: self.clone(),
                clients: Some(clients),
                buffer,
                metrics,
            };
            Ok(Box::new(sink) as Box<dyn Sink>)
        }
        .boxed()
    }
}

/// Kafka topic names ([`topics`]) and [`MAX_EVENT`].
pub struct KafkaRules;

impl TopicRules for KafkaRules {
    fn refuse_topic(&self, topic: &str) -> Option<Refusal> {
        topics::kafka_topic(topic).err().map(Refusal::InvalidTopic)
    }

    fn refuse_size(&self, _topic: &str, payload_len: usize) -> Option<Refusal> {
        Refusal::over_limit(payload_len, MAX_EVENT, "a Kafka record")
    }
}

pub struct KafkaSink {
    pub cfg: KafkaConfig,
    /// The clients `build` made, taken by the run; it makes new ones when
    /// their producer's state is lost.
    clients: Option<producer::Clients>,
    pub buffer: Arc<Buffer>,
    pub metrics: Arc<Metrics>,
}

impl Sink for KafkaSink {
    fn run(self: Box<Self>, drain: Drain) -> BoxFuture<'static, usize> {
        run::run(*self, drain).boxed()
    }
}
