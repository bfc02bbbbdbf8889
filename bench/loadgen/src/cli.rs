//! Command-line flags of the four modes.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::payload::TOPIC;

/// Load generator and counting subscriber for the relay benchmark
/// (bench/relay.sh) and the reliability tests (tests/it/reliability/).
///
/// Every mode prints one line of JSON on stdout when it ends (the subscriber
/// also on SIGTERM or SIGINT). Exit codes: 0 done, 1 runtime failure, 2 usage.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version)]
pub struct Cli {
    #[command(subcommand)]
    pub mode: Mode,
}

#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Publish numbered events straight to an MQTT broker.
    Publish(PublishArgs),
    /// Serve numbered events as an SSE source (TCP and/or unix socket).
    Sse(SseArgs),
    /// Subscribe and count: missing, duplicated, out-of-order, latency.
    Subscribe(SubscribeArgs),
    /// Turn bench/relay.sh's JSON lines into the Markdown table.
    Report(ReportArgs),
    /// Read a JetStream stream back and count it (per subject, numbered events).
    NatsRead(NatsReadArgs),
    /// Publish numbered events straight into JetStream with an in-flight window.
    NatsPublish(NatsPublishArgs),
    /// Read a RabbitMQ stream back and count it (numbered events).
    RmqRead(RmqReadArgs),
    /// Publish numbered events straight into a RabbitMQ stream with an in-flight window.
    RmqPublish(RmqPublishArgs),
    /// Read a Kafka topic back and count it (numbered events, their keys).
    KafkaRead(KafkaReadArgs),
    /// Produce numbered events straight into a Kafka topic with an in-flight window.
    KafkaPublish(KafkaPublishArgs),
    /// Print a free TCP port on 127.0.0.1.
    Port,
}

#[derive(Debug, Args)]
pub struct NatsReadArgs {
    /// NATS server URL.
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    pub server: String,
    /// The stream to read from its first message to its last.
    #[arg(long, default_value = "EVENTS")]
    pub stream: String,
    /// Count the numbered events 1..=EXPECT (missing, duplicated); 0 = only
    /// count messages per subject.
    #[arg(long, default_value_t = 0)]
    pub expect: u64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
}

#[derive(Debug, Args)]
pub struct NatsPublishArgs {
    /// NATS server URL.
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    pub server: String,
    /// Unacknowledged publishes at once (the repeater's --inflight).
    #[arg(long, default_value_t = 1000)]
    pub inflight: u16,
    /// The stream to publish into (created as the repeater would if missing).
    #[arg(long, default_value = "EVENTS")]
    pub stream: String,
    #[command(flatten)]
    pub gen: GenArgs,
}

#[derive(Debug, Args)]
pub struct RmqReadArgs {
    /// The node's stream port on 127.0.0.1.
    #[arg(long, default_value_t = 5552)]
    pub port: u16,
    /// The stream to read from its first message.
    #[arg(long, default_value = "bench/seq")]
    pub stream: String,
    /// Count the numbered events 1..=EXPECT (missing, duplicated); the read
    /// ends once all are there and nothing more came for a second, or
    /// nothing came for --idle seconds.
    #[arg(long, default_value_t = 0)]
    pub expect: u64,
    /// End the read after this many seconds with nothing new (before all
    /// EXPECT are there); more for a reader that starts before the
    /// publisher does.
    #[arg(long, default_value_t = 3.0)]
    pub idle: f64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
    /// Delete the stream once read (a benchmark's run leaves nothing
    /// behind on the node).
    #[arg(long)]
    pub delete: bool,
}

#[derive(Debug, Args)]
pub struct RmqPublishArgs {
    /// The node's stream port on 127.0.0.1.
    #[arg(long, default_value_t = 5552)]
    pub port: u16,
    /// Unconfirmed publishes at once (the repeater's --inflight).
    #[arg(long, default_value_t = 1000)]
    pub inflight: usize,
    /// The stream (created if missing); default: the topic, as the repeater names it.
    #[arg(long)]
    pub stream: Option<String>,
    #[command(flatten)]
    pub gen: GenArgs,
}

#[derive(Debug, Args)]
pub struct KafkaReadArgs {
    /// Bootstrap servers, HOST:PORT[,HOST:PORT].
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// The topic to read, every partition from its first record.
    #[arg(long, default_value = "bench.seq")]
    pub topic: String,
    /// Connect with TLS, trusting this CA certificate (PEM).
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
    /// Count the numbered events 1..=EXPECT (missing, duplicated); the read
    /// ends once all are there and nothing more came for a second, or
    /// nothing came for --idle seconds.
    #[arg(long, default_value_t = 0)]
    pub expect: u64,
    /// End the read after this many seconds with nothing new; also how
    /// long a topic not there yet is waited for.
    #[arg(long, default_value_t = 3.0)]
    pub idle: f64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub timeout: f64,
}

#[derive(Debug, Args)]
pub struct KafkaPublishArgs {
    /// Bootstrap servers, HOST:PORT[,HOST:PORT].
    #[arg(long, default_value = "127.0.0.1:9092")]
    pub brokers: String,
    /// Unacknowledged records at once (the repeater's --inflight).
    #[arg(long, default_value_t = 1000)]
    pub inflight: usize,
    /// The Kafka topic (it must exist).
    #[arg(long, default_value = "bench.seq")]
    pub kafka_topic: String,
    #[command(flatten)]
    pub gen: GenArgs,
}

/// What the two generators share.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// Events per second; 0 = as fast as the next hop takes them.
    #[arg(long, default_value_t = 0)]
    pub rate: u64,
    /// How many numbered events (1..=COUNT); 0 = no end (sse only).
    #[arg(long, default_value_t = 0)]
    pub count: u64,
    /// Payload size in bytes (padded); 0 = the smallest size that is the same
    /// for every event up to 10^7.
    #[arg(long, default_value_t = 0)]
    pub size: usize,
    /// Warm-up events (numbered 0, not counted) sent before the numbered ones,
    /// once the ready file exists.
    #[arg(long, default_value_t = 1000)]
    pub warmup: u64,
    /// Before the warm-up, send an event numbered 0 every 10 ms until this
    /// file exists (the subscriber writes it on its first message): proof that
    /// every link is connected.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// Topic of the events.
    #[arg(long, default_value = TOPIC)]
    pub topic: String,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// Broker as HOST:PORT (tcp:// or mqtt:// prefix allowed).
    #[arg(long, default_value = "127.0.0.1:1883")]
    pub broker: String,
    /// QoS of the publishes (0, 1 or 2).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub qos: u8,
    /// rumqttc's in-flight window for QoS 1/2 (the repeater's default too).
    #[arg(long, default_value_t = 1000)]
    pub inflight: u16,
    #[command(flatten)]
    pub gen: GenArgs,
}

#[derive(Debug, Args)]
pub struct SseArgs {
    /// TCP address to listen on (127.0.0.1:0 picks a free port).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// Unix socket to listen on (replaced if it exists).
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Write the TCP URL (`http://127.0.0.1:PORT`) here once listening.
    #[arg(long, value_name = "FILE")]
    pub url_file: Option<PathBuf>,
    /// Name every event (`event: TOPIC`), for a repeater that takes the
    /// topic from it (`--topic-from event --payload text`).
    #[arg(long)]
    pub event_name: bool,
    /// Keep the numbering across restarts and record what was sent: when
    /// event 1 was due, then one `FIRST LAST` line per run of numbers
    /// written to a reader. A restarted source reads it back, so a reader
    /// without `Last-Event-ID` gets the events due now, never event 1 again.
    #[arg(long, value_name = "FILE")]
    pub sent_file: Option<PathBuf>,
    #[command(flatten)]
    pub gen: GenArgs,
}

#[derive(Debug, Args)]
pub struct SubscribeArgs {
    /// Broker as HOST:PORT (tcp:// or mqtt:// prefix allowed).
    #[arg(long, default_value = "127.0.0.1:1883")]
    pub broker: String,
    /// Topic filter to subscribe to.
    #[arg(long, default_value = TOPIC)]
    pub topic: String,
    /// QoS of the subscription.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=2))]
    pub qos: u8,
    /// The numbers 1..=EXPECT are expected; stop once all arrived (then
    /// linger). 0 = unknown: stop on idle, timeout or signal.
    #[arg(long, default_value_t = 0)]
    pub expect: u64,
    /// Stop this many seconds after the last message (once one arrived).
    #[arg(long, default_value_t = 3.0)]
    pub idle: f64,
    /// Stop after this many seconds in any case.
    #[arg(long, default_value_t = 600.0)]
    pub timeout: f64,
    /// After the last expected number, keep counting duplicates this long (ms).
    #[arg(long, default_value_t = 200)]
    pub linger_ms: u64,
    /// Write this file on the first message.
    #[arg(long, value_name = "FILE")]
    pub ready_file: Option<PathBuf>,
    /// Write this file once the subscription is acknowledged (SUBACK).
    #[arg(long, value_name = "FILE")]
    pub subscribed_file: Option<PathBuf>,
    /// Count missing numbers from the lowest number received rather than
    /// from 1 (for a source that was publishing before the relay subscribed).
    #[arg(long)]
    pub from_first: bool,
    /// Persistent session with this client id (clean_session=false);
    /// otherwise a clean session with a generated id.
    #[arg(long, value_name = "CLIENT_ID")]
    pub session: Option<String>,
    /// Print a progress line of JSON on stderr this often (ms).
    #[arg(long, value_name = "MS")]
    pub progress_ms: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The JSON-lines file bench/relay.sh wrote.
    pub results: PathBuf,
}

/// `HOST:PORT`, with an optional `tcp://` or `mqtt://` prefix.
pub fn host_port(s: &str) -> Result<(String, u16), String> {
    let rest = s
        .strip_prefix("tcp://")
        .or_else(|| s.strip_prefix("mqtt://"))
        .unwrap_or(s);
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("broker '{s}' has no port; give HOST:PORT"))?;
    let port = port
        .parse()
        .map_err(|_| format!("broker '{s}' has a bad port; give HOST:PORT"))?;
    Ok((host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_addresses() {
        assert_eq!(
            host_port("127.0.0.1:1883").unwrap(),
            ("127.0.0.1".into(), 1883)
        );
        assert_eq!(
            host_port("tcp://localhost:9").unwrap(),
            ("localhost".into(), 9)
        );
        assert!(host_port("localhost").is_err());
        assert!(host_port("h:x").is_err());
    }

    #[test]
    fn clap_definition_is_valid() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
