//! The sink flags of `run`: those every sink reads ([`Common`], under
//! "Sink" in `run --help`), then each registered sink's own, under its own
//! heading, kept as clap matched them until the chosen sink reads its
//! own ([`crate::sink::configure`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::builder::PossibleValue;

use crate::flag_values::{parse_duration, Qos};
use crate::sink::KINDS;

/// The flags every sink reads.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Sink")]
pub struct Common {
    /// The broker: for MQTT tcp://, mqtt:// or mqtts:// (TLS) HOST:PORT
    /// (default tcp://localhost:1883), repeatable for failover: the first
    /// that answers is used, the next when it hangs or dies, and the first
    /// again once it is back; for NATS nats:// or tls:// HOST:PORT (default
    /// nats://localhost:4222), repeatable: the cluster's seed servers; for
    /// RabbitMQ Streams rabbitmq-stream:// or rabbitmq-stream+tls://
    /// HOST:PORT (default rabbitmq-stream://localhost:5552), repeatable: the
    /// cluster's nodes, tried in turn; for Kafka kafka:// or kafka+tls://
    /// HOST:PORT (default kafka://localhost:9092), repeatable: bootstrap
    /// servers.
    #[arg(long, value_name = "URL")]
    pub sink: Vec<String>,

    /// Where events go [default: the one the --sink URL's scheme names
    /// (nats:// or tls:// is nats, kafka:// or kafka+tls:// is kafka,
    /// rabbitmq-stream:// or rabbitmq-stream+tls:// is rabbitmq-stream),
    /// else mqtt].
    #[arg(
        long,
        visible_alias = "sink-protocol",
        value_name = "PROTOCOL",
        value_parser = protocols()
    )]
    pub sinkprotocol: Option<String>,

    /// QoS of the publishes: MQTT's QoS; for NATS 0 is core NATS, 1 and 2 are JetStream publishes that wait for the stream's acknowledgement; Kafka and RabbitMQ Streams always wait for theirs.
    #[arg(long, value_enum, default_value = "1")]
    pub qos: Qos,

    /// User name for the broker (MQTT, NATS, Kafka's SASL or RabbitMQ); the password comes from APP_MQTT_PASSWORD or --password-file.
    #[arg(long)]
    pub username: Option<String>,

    /// File holding the broker's password, MQTT, NATS, Kafka or RabbitMQ (first line).
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,

    /// CA certificates (PEM) to trust for an mqtts://, tls:// (NATS), kafka+tls:// or rabbitmq-stream+tls:// sink instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// Unacknowledged publishes allowed on the wire at once (QoS 1 and 2; MQTT, NATS, Kafka and RabbitMQ Streams): 1000 by default, 20 for MQTT at QoS 2 (mosquitto's max_inflight_messages; a broker silently drops QoS 2 publishes over its limit)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub inflight: Option<u16>,

    /// How long a publish may wait for its acknowledgement before it is sent again.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub ack_timeout: Duration,

    /// The identity deduplication is keyed by, shared by the repeaters of one source: NATS's Nats-Msg-Id and Kafka's record key (SOURCE_ID:KEY), RabbitMQ Streams' producer name; default: the --source address.
    #[arg(long, value_name = "ID")]
    pub source_id: Option<String>,
}

/// `--sinkprotocol`'s values: the registered sinks, each with its line.
fn protocols() -> clap::builder::PossibleValuesParser {
    KINDS
        .iter()
        .map(|k| PossibleValue::new(k.name).help(k.about))
        .collect::<Vec<_>>()
        .into()
}

impl Common {
    /// The broker password: `--password-file`, else `env` (APP_MQTT_PASSWORD);
    /// one without `--username` is a usage error.
    pub fn password(&self, env: Option<String>) -> Result<Option<String>, String> {
        let password = match (&self.password_file, env) {
            (Some(file), _) => Some(read_password(file)?),
            (None, Some(p)) if !p.is_empty() => Some(p),
            _ => None,
        };
        if password.is_some() && self.username.is_none() {
            return Err(
                "a password was given (APP_MQTT_PASSWORD or --password-file) but no --username"
                    .into(),
            );
        }
        Ok(password)
    }

    /// `--source-id`, else `source` (the source's address as shown); an
    /// empty one or one with a control character is a usage error. Only
    /// the sinks that declare [`crate::sink::SinkKind::SOURCE_ID`] ask.
    pub fn source_id(&self, source: &str) -> Result<String, String> {
        match &self.source_id {
            Some(id) if id.is_empty() || id.chars().any(char::is_control) => {
                Err("--source-id must be non-empty printable text".into())
            }
            Some(id) => Ok(id.clone()),
            None => Ok(source.to_string()),
        }
    }
}

fn read_password(path: &Path) -> Result<String, String> {
    let bytes = crate::files::read_secret_file(path, "--password-file", 64 * 1024)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--password-file {} is not UTF-8 text", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

/// A sink without flags of its own.
pub use crate::kind_flags::NoFlags;

/// The sink flags: [`Common`], and every sink's own as clap matched them.
pub type SinkArgs = crate::kind_flags::KindArgs<Common, Registered>;

/// [`KINDS`], for [`SinkArgs`].
#[derive(Debug, Clone)]
pub struct Registered;

impl crate::kind_flags::Registry for Registered {
    fn add_flags(cmd: clap::Command) -> clap::Command {
        KINDS.iter().fold(cmd, |cmd, kind| (kind.flags)(cmd))
    }
}
