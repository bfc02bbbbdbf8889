//! The RabbitMQ Streams sink (`--sinkprotocol rabbitmq-stream`): every
//! event is published to the stream named by its sink topic (see
//! [`names`]), through the sink's own stream protocol [`client`] (which
//! RabbitMQ 3.9 and 3.10 take; `rabbitmq-stream-client` needs 3.11).
//!
//! # Delivery
//! An event is done only when RabbitMQ confirmed it. Up to `--inflight`
//! publishes wait for their confirmation at once, on one connection; when
//! the connection ends, a publish is refused, or a confirmation takes
//! longer than `--ack-timeout`, the connection is dropped and what was not
//! confirmed is sent again on a new one (after a backoff, oldest first,
//! counted as republished), to the next `--sink` node in turn.
//!
//! # Deduplication
//! Events with a decimal SSE id are published by a producer named after
//! `--source-id` ([`pubid::producer_name`]) with that number as the
//! publishing id ([`pubid`]): RabbitMQ stores each once however often it is
//! sent, by however many repeaters of the source. Other events are
//! published by a producer without a name: at least once.
//!
//! # Streams
//! A stream that does not exist is created (`--rabbitmq-replicas` as its
//! initial cluster size, 24 h max age); one that exists is used as it is.

mod args;
pub mod client;
pub mod config;
mod link;
pub mod names;
pub mod pubid;
mod run;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use app_plugin::address::Scheme;

use crate::buffer::Buffer;
use crate::metrics::Metrics;
use crate::sink::{Drain, Refusal, Setup, Sink, SinkConfig, SinkKind, TopicRules};

pub use args::Args;
pub use config::RabbitConfig;

/// The largest event the sink publishes: one message must fit in a
/// frame of the stream protocol (1 MiB, [`client::FRAME_MAX`], unless
/// RabbitMQ asks for less: then a larger event is refused when sent), with
/// room for the frame's own fields.
pub const MAX_EVENT: usize = 1_000_000;

/// `--sinkprotocol rabbitmq-stream`.
pub struct RabbitmqStream;

impl SinkKind for RabbitmqStream {
    const NAME: &'static str = "rabbitmq-stream";
    const ABOUT: &'static str =
        "Publish to RabbitMQ Streams, deduplicated by producer name and publishing id";
    const SCHEMES: &'static [Scheme] = config::URLS.schemes;
    const SOURCE_ID: bool = true;
    type Args = Args;

    fn configure(args: Args, setup: &Setup) -> Result<Box<dyn SinkConfig>, String> {
        Ok(Box::new(config::configure(&args, setup)?))
    }
}

impl SinkConfig for RabbitConfig {
    fn url(&self) -> String {
        RabbitConfig::url(self)
    }

    fn rules(&self) -> Arc<dyn TopicRules> {
        Arc::new(RabbitRules)
    }

    /// [`MAX_EVENT`]: the buffer must hold one, and the source's
    /// `--max-event-size` follows it by default.
    fn max_event(&self) -> Option<usize> {
        Some(MAX_EVENT)
    }

    /// The TLS configuration; nothing else is checked before the first
    /// connection: the sink connects (and keeps trying) once it runs.
    fn build(
        &self,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
    ) -> BoxFuture<'_, Result<Box<dyn Sink>, String>> {
        async move {
            let tls = match self.tls {
                true => Some(config::tls_config(self)?),
                false => None,
            };
            let sink = RabbitSink {
                cfg: self.clone(),
                tls,
                buffer,
                metrics,
            };
            Ok(Box::new(sink) as Box<dyn Sink>)
        }
        .boxed()
    }
}

/// Stream names ([`names`]) and [`MAX_EVENT`].
pub struct RabbitRules;

impl TopicRules for RabbitRules {
    fn refuse_topic(&self, topic: &str) -> Option<Refusal> {
        names::refuse(topic).map(Refusal::InvalidTopic)
    }

    fn refuse_size(&self, _topic: &str, payload_len: usize) -> Option<Refusal> {
        Refusal::over_limit(payload_len, MAX_EVENT, "a RabbitMQ stream message")
    }
}

pub struct RabbitSink {
    pub cfg: RabbitConfig,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub buffer: Arc<Buffer>,
    pub metrics: Arc<Metrics>,
}

impl Sink for RabbitSink {
    fn run(self: Box<Self>, drain: Drain) -> BoxFuture<'static, usize> {
        run::run(*self, drain).boxed()
    }
}
