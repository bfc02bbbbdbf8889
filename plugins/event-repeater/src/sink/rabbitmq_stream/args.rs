//! The RabbitMQ Streams sink's own flags, shown in `run --help` under
//! their own heading. The shared ones it reads: `--sink`, `--username`,
//! `--password-file`, `--ca-file`, `--source-id`, `--inflight`,
//! `--ack-timeout`.

/// `--sinkprotocol rabbitmq-stream` flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "RabbitMQ Streams sink (--sinkprotocol rabbitmq-stream)")]
// No group: its flags are told apart by `sink::configure`, not by clap.
#[group(skip)]
pub struct Args {
    /// Replicas of a stream the repeater creates (its initial cluster size:
    /// 1 on one node, up to the cluster's nodes; an existing stream is used as it is).
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u8).range(1..=9))]
    pub rabbitmq_replicas: u8,

    /// Virtual host to open.
    #[arg(long, value_name = "VHOST", default_value = "/")]
    pub rabbitmq_vhost: String,
}
