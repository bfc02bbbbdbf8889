//! The RabbitMQ Streams sink's configuration: `--sink` nodes, credentials,
//! TLS, replicas and the producer name, checked before anything connects.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use app_plugin::address::{join_host_port, AddressError, Rules, Scheme};

use crate::sink::rabbitmq_stream::pubid::producer_name;
use crate::sink::rabbitmq_stream::Args;
use crate::sink::{default_client_id, Setup};

/// The stream port RabbitMQ listens on, without and with TLS.
pub const PORT: u16 = 5552;
pub const TLS_PORT: u16 = 5551;

/// What `--sink` takes for RabbitMQ Streams: `rabbitmq-stream://` or
/// `rabbitmq-stream+tls://` (TLS), or `HOST[:PORT]` (5552); no path (the
/// virtual host is `--rabbitmq-vhost`), no credentials.
pub const URLS: Rules = Rules {
    schemes: &[
        Scheme::plain("rabbitmq-stream", PORT),
        Scheme::tls("rabbitmq-stream+tls", TLS_PORT),
    ],
    bare: Some("rabbitmq-stream"),
    path: false,
    credentials: Some("--username and --password-file"),
};

/// One node of `--sink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Without IPv6 brackets (what a socket connects to).
    pub host: String,
    pub port: u16,
}

/// RabbitMQ Streams settings (`--sinkprotocol rabbitmq-stream`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RabbitConfig {
    /// Tried in turn: the nodes of a cluster (any node takes publishes for
    /// any stream).
    pub nodes: Vec<Node>,
    pub tls: bool,
    /// Roots to trust with TLS: `--ca-file`, or the system's.
    pub ca_file: Option<PathBuf>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub vhost: String,
    /// The initial cluster size of a stream the repeater creates.
    pub replicas: u8,
    /// The producer name every repeater of the source shares.
    pub producer: String,
    /// `--source-id` as given or derived (for messages).
    pub source_id: String,
    pub inflight: usize,
    pub ack_timeout: Duration,
    /// The connection name the broker shows.
    pub client_name: String,
}

impl RabbitConfig {
    /// The nodes as `rabbitmq-stream[+tls]://HOST:PORT`, comma separated.
    pub fn url(&self) -> String {
        let scheme = if self.tls {
            "rabbitmq-stream+tls"
        } else {
            "rabbitmq-stream"
        };
        self.nodes
            .iter()
            .map(|n| format!("{scheme}://{}", join_host_port(&n.host, n.port)))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The settings; an `Err` is a usage error.
pub fn configure(own: &Args, setup: &Setup) -> Result<RabbitConfig, String> {
    let args = setup.sink;
    let given: Vec<&str> = if args.sink.is_empty() {
        vec!["rabbitmq-stream://localhost:5552"]
    } else {
        args.sink.iter().map(String::as_str).collect()
    };
    let mut nodes = Vec::new();
    let mut schemes = Vec::new();
    for text in given {
        let (node, tls) = parse_sink(text)?;
        nodes.push(node);
        schemes.push(tls);
    }
    let tls = schemes[0];
    if schemes.iter().any(|&t| t != tls) {
        return Err("--sink: give every RabbitMQ node with the same scheme (all rabbitmq-stream:// or all rabbitmq-stream+tls://)".into());
    }
    if args.ca_file.is_some() && !tls {
        return Err("--ca-file only applies to a rabbitmq-stream+tls:// sink".into());
    }
    let ca_file = args.ca_file.clone();
    let vhost = &own.rabbitmq_vhost;
    if vhost.is_empty() || vhost.len() > 255 || vhost.chars().any(char::is_control) {
        return Err(format!(
            "--rabbitmq-vhost {vhost:?} is not a virtual host name (1 to 255 bytes, no control characters)"
        ));
    }
    let source_id = args.source_id(&setup.source)?;
    let cfg = RabbitConfig {
        nodes,
        tls,
        ca_file,
        username: args.username.clone(),
        password: setup.password.clone(),
        vhost: vhost.clone(),
        replicas: own.rabbitmq_replicas,
        producer: producer_name(&source_id),
        source_id,
        inflight: usize::from(
            args.inflight
                .unwrap_or(crate::flag_values::DEFAULT_INFLIGHT),
        ),
        ack_timeout: args.ack_timeout,
        client_name: default_client_id(setup.name),
    };
    if tls {
        // Checked now (a usage error); made again when the sink is built.
        tls_config(&cfg)?;
    }
    Ok(cfg)
}

/// The TLS client configuration: the project's ([`crate::tls_client`]),
/// trusting `--ca-file` or the system's CA certificates.
pub fn tls_config(cfg: &RabbitConfig) -> Result<Arc<rustls::ClientConfig>, String> {
    crate::tls_client::config(cfg.ca_file.as_deref(), "--ca-file", "RabbitMQ")
}

/// `rabbitmq-stream://HOST[:PORT]`, `rabbitmq-stream+tls://HOST[:PORT]`
/// or `HOST[:PORT]` → the node and whether it is TLS ([`URLS`]).
/// Credentials, paths and queries are refused, naming the flag to use
/// instead.
pub fn parse_sink(text: &str) -> Result<(Node, bool), String> {
    let a = URLS.parse(text).map_err(|e| match e {
        AddressError::Path { .. } => format!("--sink {e} (the virtual host is --rabbitmq-vhost)"),
        e => format!("--sink {e}"),
    })?;
    let node = Node {
        host: a.host,
        port: a.port,
    };
    Ok((node, a.scheme.tls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::{run_args, setup};

    /// The configuration `args` (after `run`) make for the source `source`.
    fn configured(args: &[&str], source: &str) -> Result<RabbitConfig, String> {
        let run = run_args(args);
        let own = <Args as clap::FromArgMatches>::from_arg_matches(&run.sink.matches).unwrap();
        configure(&own, &setup(&run, source))
    }

    fn node(host: &str, port: u16) -> Node {
        Node {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn sinks_are_parsed_with_url() {
        assert_eq!(
            parse_sink("rabbitmq-stream://127.0.0.1:1"),
            Ok((node("127.0.0.1", 1), false))
        );
        assert_eq!(
            parse_sink("rabbitmq-stream://h"),
            Ok((node("h", PORT), false))
        );
        assert_eq!(
            parse_sink("rabbitmq-stream+tls://[::1]/"),
            Ok((node("::1", TLS_PORT), true))
        );
        // As --sinkprotocol rabbitmq-stream's --sink, a bare HOST:PORT.
        assert_eq!(parse_sink("h:1"), Ok((node("h", 1), false)));
        for bad in [
            "nats://h:1",
            "rabbitmq-stream://h:1/vhost",
            "rabbitmq-stream://h:1?x=1",
            "rabbitmq-stream://",
            "rabbitmq-stream://h:99999",
        ] {
            assert!(parse_sink(bad).is_err(), "{bad}");
        }
        let err = parse_sink("rabbitmq-stream://h:1/vhost").unwrap_err();
        assert!(err.contains("--rabbitmq-vhost"), "{err}");
        let err = parse_sink("rabbitmq-stream://u:hunter3@h:1").unwrap_err();
        assert!(
            !err.contains("hunter3") && err.contains("--password-file"),
            "{err}"
        );
    }

    #[test]
    fn nodes_producer_and_flags() {
        let c = configured(
            &[
                "--sinkprotocol",
                "rabbitmq-stream",
                "--sink",
                "rabbitmq-stream://a:1",
                "--sink",
                "rabbitmq-stream://[::1]:2",
                "--source-id",
                "site",
                "--rabbitmq-replicas",
                "3",
            ],
            "http://127.0.0.1:9",
        )
        .unwrap();
        assert_eq!(c.nodes, [node("a", 1), node("::1", 2)]);
        assert_eq!(c.url(), "rabbitmq-stream://a:1,rabbitmq-stream://[::1]:2");
        assert_eq!(c.producer, "app-event-repeater:site");
        assert_eq!((c.replicas, c.vhost.as_str()), (3, "/"));
        let mixed = [
            "--sinkprotocol",
            "rabbitmq-stream",
            "--sink",
            "rabbitmq-stream://a:1",
            "--sink",
            "rabbitmq-stream+tls://b:2",
        ];
        assert!(configured(&mixed, "x").unwrap_err().contains("same scheme"));
        let ca = ["--sinkprotocol", "rabbitmq-stream", "--ca-file", "/x"];
        assert!(configured(&ca, "x").unwrap_err().contains("+tls"));
        let empty = ["--sinkprotocol", "rabbitmq-stream", "--source-id", ""];
        assert!(configured(&empty, "x").unwrap_err().contains("--source-id"));
        // The default producer name comes from the source address.
        let c = configured(&["--sinkprotocol", "rabbitmq-stream"], "http://h:1").unwrap();
        assert_eq!(c.producer, "app-event-repeater:http://h:1");
        assert_eq!(c.nodes, [node("localhost", PORT)]);
        // The scheme alone chooses the sink; its flags belong to it.
        for url in ["rabbitmq-stream://h", "rabbitmq-stream+tls://h:1"] {
            let args = run_args(&["--sink", url]);
            let kind = crate::sink::protocol(&args.sink.common).unwrap();
            assert_eq!(kind.name, "rabbitmq-stream");
        }
        let e =
            crate::sink::configured(&["--sink", "nats://h", "--rabbitmq-vhost", "v"]).unwrap_err();
        assert!(
            e.starts_with("--rabbitmq-vhost only applies to a rabbitmq-stream sink")
                && e.ends_with("not nats"),
            "{e}"
        );
    }
}
