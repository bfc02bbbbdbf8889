//! The librdkafka clients the sink uses, made from its settings: a
//! producer for the events and an admin client for the topics it creates.
//! Their logs and errors come through [`Context`]: into the repeater's log
//! (librdkafka's connection chatter at debug level), and into the metrics
//! (all brokers down: the sink is not connected).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use app_plugin::log::{debug, RateLimited, WARN};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::FutureProducer;
use rdkafka::util::Timeout;

use crate::metrics::{set_problem, Metrics};
use crate::sink::kafka::KafkaConfig;

/// How long a topic's creation, or a look at the cluster, may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// librdkafka's callbacks.
pub struct Context {
    metrics: Arc<Metrics>,
    trouble: RateLimited,
}

impl ClientContext for Context {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        // Connection attempts and failures repeat every backoff; the sink
        // reports what matters (error below, and its own lines).
        if matches!(
            level,
            RDKafkaLogLevel::Emerg
                | RDKafkaLogLevel::Alert
                | RDKafkaLogLevel::Critical
                | RDKafkaLogLevel::Error
        ) {
            self.trouble
                .log(WARN, || format!("librdkafka: {fac}: {message}"));
        } else {
            debug!("librdkafka: {fac}: {message}");
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let all_down = error.rdkafka_error_code() == Some(RDKafkaErrorCode::AllBrokersDown);
        let why = format!("Kafka: {reason}");
        set_problem(&self.metrics.sink_last_error, &why);
        if all_down && self.metrics.sink_connected.swap(false, Ordering::Relaxed) {
            crate::metrics::inc(&self.metrics.sink_disconnects);
        }
        self.trouble.log(WARN, || {
            format!("{why}; retrying, events are kept in the buffer")
        });
    }
}

pub type Producer = FutureProducer<Context>;

/// A producer and an admin client, on connections of their own.
pub struct Clients {
    pub producer: Producer,
    pub admin: AdminClient<Context>,
}

impl Clients {
    /// Both clients; `Err` is a setting librdkafka refuses (a CA file it
    /// cannot load, say).
    pub fn make(cfg: &KafkaConfig, metrics: &Arc<Metrics>) -> Result<Clients, String> {
        let rd = cfg.client_config();
        let context = || Context {
            metrics: metrics.clone(),
            trouble: RateLimited::new(Duration::from_secs(5)),
        };
        let made = |e: KafkaError| format!("cannot set up the Kafka producer: {e}");
        Ok(Clients {
            producer: rd.create_with_context(context()).map_err(made)?,
            admin: rd.create_with_context(context()).map_err(made)?,
        })
    }

    /// Whether a broker answers a metadata request, within [`REQUEST_TIMEOUT`].
    pub async fn probe(&self) -> Result<(), String> {
        let producer = self.producer.clone();
        tokio::task::spawn_blocking(move || {
            use rdkafka::producer::Producer as _;
            producer
                .client()
                .fetch_metadata(None, REQUEST_TIMEOUT)
                .map(|_| ())
                .map_err(|e| format!("no Kafka broker answers: {e}"))
        })
        .await
        .map_err(|e| format!("internal: {e}"))?
    }

    /// Whether `topic` exists with partitions (a look that creates nothing).
    pub async fn exists(&self, topic: &str) -> bool {
        let producer = self.producer.clone();
        let topic = topic.to_string();
        tokio::task::spawn_blocking(move || {
            use rdkafka::producer::Producer as _;
            producer
                .client()
                .fetch_metadata(Some(&topic), REQUEST_TIMEOUT)
                .is_ok_and(|m| {
                    m.topics().iter().any(|t| {
                        t.name() == topic && t.error().is_none() && !t.partitions().is_empty()
                    })
                })
        })
        .await
        .unwrap_or(false)
    }

    /// Creates `topic` unless it exists. `Ok(true)`: created.
    pub async fn create(&self, cfg: &KafkaConfig, topic: &str) -> Result<bool, NotReady> {
        let new = NewTopic::new(
            topic,
            i32::from(cfg.partitions),
            TopicReplication::Fixed(i32::from(cfg.replicas)),
        );
        let opts = AdminOptions::new()
            .request_timeout(Some(Timeout::After(REQUEST_TIMEOUT)))
            .operation_timeout(Some(Timeout::After(REQUEST_TIMEOUT)));
        let results =
            self.admin.create_topics([&new], &opts).await.map_err(|e| {
                NotReady::Later(format!("cannot create the Kafka topic {topic}: {e}"))
            })?;
        match results.into_iter().next() {
            Some(Ok(_)) => Ok(true),
            Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => Ok(false),
            Some(Err((_, RDKafkaErrorCode::InvalidTopic))) => Err(NotReady::Refused(format!(
                "Kafka refuses a topic named {topic:?}"
            ))),
            Some(Err((_, code))) => Err(NotReady::Later(format!(
                "cannot create the Kafka topic {topic}: {code}{}",
                match code {
                    RDKafkaErrorCode::InvalidReplicationFactor =>
                        " (is --kafka-replicas more than the brokers?)",
                    RDKafkaErrorCode::TopicAuthorizationFailed
                    | RDKafkaErrorCode::ClusterAuthorizationFailed =>
                        " (the user may not create it: create it beforehand)",
                    _ => "",
                }
            ))),
            None => Err(NotReady::Later(format!(
                "cannot create the Kafka topic {topic}: no answer"
            ))),
        }
    }
}

/// Why a topic cannot be written to.
pub enum NotReady {
    /// Kafka refuses the name itself: the event is refused and counted.
    Refused(String),
    /// Not now (the connection, rights, too few brokers).
    Later(String),
}
