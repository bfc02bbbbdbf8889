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

mod book;
pub mod config;
mod link;
mod options;
mod run;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use crate::buffer::Buffer;
use app_plugin::address::Scheme;

use crate::metrics::Metrics;
use crate::routes::MAX_TOPIC_LEN;
use crate::sink::{Drain, Refusal, Setup, Sink, SinkConfig, SinkKind, TopicRules};

pub use config::{Endpoint, MqttConfig};

/// `--sinkprotocol mqtt`.
pub struct Mqtt;

impl SinkKind for Mqtt {
    const NAME: &'static str = "mqtt";
    const ABOUT: &'static str = "Publish to an MQTT broker";
    const SCHEMES: &'static [Scheme] = config::URLS.schemes;
    type Args = config::Args;

    /// The MQTT settings from the flags, with the TLS set-up checked at
    /// start like the NATS sink's: a `--ca-file` that cannot be used would
    /// leave the sink retrying forever.
    fn configure(args: config::Args, setup: &Setup) -> Result<Box<dyn SinkConfig>, String> {
        let mqtt = config::configure(&args, setup)?;
        if mqtt.tls {
            options::check_tls(&mqtt)?;
        }
        Ok(Box::new(mqtt))
    }
}

impl SinkConfig for MqttConfig {
    fn url(&self) -> String {
        MqttConfig::url(self)
    }

    fn rules(&self) -> Arc<dyn TopicRules> {
        Arc::new(MqttRules {
            max_packet: self.max_packet_size,
        })
    }

    /// `--max-packet-size`: a publish holds the event and more.
    fn max_event(&self) -> Option<usize> {
        Some(self.max_packet_size)
    }

    /// Nothing to check before the loop runs: a broker that is down is
    /// retried with backoff, events kept in the buffer.
    fn build(
        &self,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
    ) -> BoxFuture<'_, Result<Box<dyn Sink>, String>> {
        let sink = MqttSink {
            cfg: self.clone(),
            buffer,
            metrics,
        };
        async move { Ok(Box::new(sink) as Box<dyn Sink>) }.boxed()
    }
}

/// The MQTT sink's topic rules: `--max-packet-size` bounds an event.
pub struct MqttRules {
    pub max_packet: usize,
}

impl TopicRules for MqttRules {
    fn refuse_topic(&self, topic: &str) -> Option<Refusal> {
        invalid_topic(topic)
    }

    fn refuse_size(&self, topic: &str, payload_len: usize) -> Option<Refusal> {
        too_large(topic, payload_len, self.max_packet)
    }
}

/// Why MQTT cannot take an event of `payload_len` bytes under `topic`.
pub fn refuse(topic: &str, payload_len: usize, max_packet: usize) -> Option<Refusal> {
    invalid_topic(topic).or_else(|| too_large(topic, payload_len, max_packet))
}

/// Why `topic` is not an MQTT topic name to publish to.
///
/// A topic name to publish to is not empty, holds no wildcard (`+`, `#`),
/// and none of the code points MQTT says it must not or should not:
/// U+0000, the controls U+0001–U+001F and U+007F–U+009F, and the
/// non-characters (U+FDD0–U+FDEF, U+xFFFE, U+xFFFF). mosquitto treats any of
/// them as a malformed packet and drops the connection, so publishing one
/// would make the repeater resend it on every reconnect.
pub fn invalid_topic(topic: &str) -> Option<Refusal> {
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
    None
}

/// Why a publish of `payload_len` bytes to `topic` would be over
/// `max_packet`.
pub fn too_large(topic: &str, payload_len: usize, max_packet: usize) -> Option<Refusal> {
    // Fixed header (≤ 5) + topic length (2) + topic + packet id (2) + payload.
    let size = 5 + 2 + topic.len() + 2 + payload_len;
    if size > max_packet {
        return Some(Refusal::TooLarge(format!(
            "the event is {payload_len} bytes, over the --max-packet-size of {max_packet} bytes for a publish to {topic:?}"
        )));
    }
    None
}

/// The MQTT sink: one task owns the rumqttc event loop (see [`run`]).
pub struct MqttSink {
    pub cfg: MqttConfig,
    pub buffer: Arc<Buffer>,
    pub metrics: Arc<Metrics>,
}

impl Sink for MqttSink {
    fn run(self: Box<Self>, drain: Drain) -> BoxFuture<'static, usize> {
        MqttSink::run(*self, drain).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
