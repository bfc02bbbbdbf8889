//! The Kafka sink's own flags, shown in `run --help` under their own
//! heading. The shared ones it reads: `--sink`, `--username`,
//! `--password-file`, `--ca-file`, `--source-id`, `--inflight`,
//! `--ack-timeout`.

/// `--sinkprotocol kafka` flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Kafka sink (--sinkprotocol kafka)")]
// No group: its flags are told apart by `sink::configure`, not by clap.
#[group(skip)]
pub struct Args {
    /// Partitions of a topic the repeater creates (1 keeps the source's
    /// order in the topic; with more, events are spread by their key and
    /// order holds within a partition). An existing topic is used as it is.
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u16).range(1..=10_000))]
    pub kafka_partitions: u16,

    /// Replication factor of a topic the repeater creates (up to the
    /// cluster's brokers).
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u8).range(1..=9))]
    pub kafka_replicas: u8,

    /// SASL mechanism for --username and --password-file: plain,
    /// scram-sha-256 or scram-sha-512 [default: plain when --username is given].
    #[arg(long, value_name = "MECHANISM", value_parser = ["plain", "scram-sha-256", "scram-sha-512"])]
    pub kafka_sasl_mechanism: Option<String>,
}
