//! The Kafka sink's configuration: `--sink` bootstrap servers, TLS, SASL,
//! the topics it creates and the record key's prefix, checked before
//! anything connects, and the librdkafka settings made from it.

use std::path::PathBuf;
use std::time::Duration;

use app_plugin::address::{join_host_port, AddressError, Rules, Scheme};

use crate::sink::kafka::Args;
use crate::sink::{default_client_id, Setup};

/// The port Kafka listens on, and the one this sink assumes with TLS (Kafka
/// has no standard one: give it).
pub const PORT: u16 = 9092;
pub const TLS_PORT: u16 = 9093;

/// What `--sink` takes for Kafka: `kafka://` or `kafka+tls://` (TLS)
/// `HOST[:PORT]`, or `HOST[:PORT]`; no path, no credentials.
pub const URLS: Rules = Rules {
    schemes: &[
        Scheme::plain("kafka", PORT),
        Scheme::tls("kafka+tls", TLS_PORT),
    ],
    bare: Some("kafka"),
    path: false,
    credentials: Some("--username and --password-file"),
};

/// Kafka settings (`--sinkprotocol kafka`).
#[derive(Clone, PartialEq, Eq)]
pub struct KafkaConfig {
    /// `HOST:PORT` of every bootstrap server (IPv6 in brackets).
    pub brokers: Vec<String>,
    pub tls: bool,
    /// Roots to trust with TLS: `--ca-file`, or the system's.
    pub ca_file: Option<PathBuf>,
    /// `--username`, the password and the SASL mechanism (librdkafka's
    /// spelling: `PLAIN`, `SCRAM-SHA-256`, `SCRAM-SHA-512`).
    pub sasl: Option<Sasl>,
    /// Partitions and replication factor of a topic the sink creates.
    pub partitions: u16,
    pub replicas: u8,
    /// The record key's prefix: `--source-id` as given or derived.
    pub source_id: String,
    pub inflight: usize,
    pub ack_timeout: Duration,
    /// The client id the brokers show.
    pub client_id: String,
}

/// SASL credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct Sasl {
    pub mechanism: &'static str,
    pub username: String,
    pub password: String,
}

/// Never the password.
impl std::fmt::Debug for KafkaConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaConfig")
            .field("url", &self.url())
            .field(
                "sasl",
                &self.sasl.as_ref().map(|s| (s.mechanism, &s.username)),
            )
            .field("partitions", &self.partitions)
            .field("replicas", &self.replicas)
            .finish_non_exhaustive()
    }
}

impl KafkaConfig {
    /// The brokers as `kafka[+tls]://HOST:PORT`, comma separated.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "kafka+tls" } else { "kafka" };
        self.brokers
            .iter()
            .map(|b| format!("{scheme}://{b}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The librdkafka settings: an idempotent producer (`acks=all`, so a
    /// record is acknowledged once every in-sync replica has it, and
    /// librdkafka's own retries never store one twice), the partitioner
    /// Java clients use (a key goes to the same partition from any
    /// client), and no topic created as a side effect of a lookup (the
    /// sink creates them, with its flags).
    pub fn client_config(&self) -> rdkafka::ClientConfig {
        let mut c = rdkafka::ClientConfig::new();
        let ms = |d: Duration| d.as_millis().clamp(1, i32::MAX as u128).to_string();
        c.set("bootstrap.servers", self.brokers.join(","))
            .set("client.id", &self.client_id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("partitioner", "murmur2_random")
            .set("allow.auto.create.topics", "false")
            // A delivery that takes longer is failed back to the sink,
            // which sends it again after a backoff.
            .set("message.timeout.ms", ms(self.ack_timeout))
            .set(
                "request.timeout.ms",
                ms(self.ack_timeout.min(Duration::from_secs(30))),
            )
            .set("socket.connection.setup.timeout.ms", "5000")
            .set("reconnect.backoff.max.ms", "2000")
            // The sink's own window bounds what is queued; this only has to
            // be larger.
            .set(
                "queue.buffering.max.messages",
                (self.inflight * 2 + 1000).to_string(),
            )
            .set(
                "message.max.bytes",
                (super::MAX_EVENT + 64 * 1024).to_string(),
            );
        let protocol = match (self.tls, self.sasl.is_some()) {
            (false, false) => "plaintext",
            (true, false) => "ssl",
            (false, true) => "sasl_plaintext",
            (true, true) => "sasl_ssl",
        };
        c.set("security.protocol", protocol);
        if self.tls {
            let ca = match &self.ca_file {
                Some(p) => p.display().to_string(),
                None => "probe".to_string(),
            };
            c.set("ssl.ca.location", ca);
        }
        if let Some(s) = &self.sasl {
            c.set("sasl.mechanism", s.mechanism)
                .set("sasl.username", &s.username)
                .set("sasl.password", &s.password);
        }
        c
    }
}

/// The settings; an `Err` is a usage error.
pub fn configure(own: &Args, setup: &Setup) -> Result<KafkaConfig, String> {
    let args = setup.sink;
    let given: Vec<&str> = if args.sink.is_empty() {
        vec!["kafka://localhost:9092"]
    } else {
        args.sink.iter().map(String::as_str).collect()
    };
    let mut brokers = Vec::new();
    let mut schemes = Vec::new();
    for text in given {
        let (broker, tls) = parse_sink(text)?;
        brokers.push(broker);
        schemes.push(tls);
    }
    let tls = schemes[0];
    if schemes.iter().any(|&t| t != tls) {
        return Err(
            "--sink: give every Kafka broker with the same scheme (all kafka:// or all kafka+tls://)"
                .into(),
        );
    }
    if args.ca_file.is_some() && !tls {
        return Err("--ca-file only applies to a kafka+tls:// sink".into());
    }
    if let Some(ca) = &args.ca_file {
        // Read now, so a missing or unreadable file is a usage error here
        // rather than a connection that never succeeds.
        crate::tls_client::config(Some(ca), "--ca-file", "Kafka")?;
    }
    let sasl = match (&args.username, &own.kafka_sasl_mechanism) {
        (None, None) => None,
        (None, Some(m)) => {
            return Err(format!(
                "--kafka-sasl-mechanism {m} needs --username (and --password-file)"
            ))
        }
        (Some(user), m) => Some(Sasl {
            mechanism: match m.as_deref() {
                None | Some("plain") => "PLAIN",
                Some("scram-sha-256") => "SCRAM-SHA-256",
                _ => "SCRAM-SHA-512",
            },
            username: user.clone(),
            password: setup.password.clone().ok_or(
                "--username for Kafka needs its password: --password-file or APP_MQTT_PASSWORD",
            )?,
        }),
    };
    Ok(KafkaConfig {
        brokers,
        tls,
        ca_file: args.ca_file.clone(),
        sasl,
        partitions: own.kafka_partitions,
        replicas: own.kafka_replicas,
        source_id: args.source_id(&setup.source)?,
        inflight: usize::from(
            args.inflight
                .unwrap_or(crate::flag_values::DEFAULT_INFLIGHT),
        ),
        ack_timeout: args.ack_timeout,
        client_id: default_client_id(setup.name),
    })
}

/// `kafka://HOST[:PORT]`, `kafka+tls://HOST[:PORT]` or `HOST[:PORT]` →
/// `HOST:PORT` and whether it is TLS ([`URLS`]).
pub fn parse_sink(text: &str) -> Result<(String, bool), String> {
    let a = URLS.parse(text).map_err(|e| match e {
        AddressError::Path { .. } => format!("--sink {e} (a Kafka broker has no path)"),
        e => format!("--sink {e}"),
    })?;
    Ok((join_host_port(&a.host, a.port), a.scheme.tls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::{run_args, setup};

    fn configured(args: &[&str], password: Option<&str>) -> Result<KafkaConfig, String> {
        let run = run_args(args);
        let own = <Args as clap::FromArgMatches>::from_arg_matches(&run.sink.matches).unwrap();
        let mut s = setup(&run, "http://h:1");
        s.password = password.map(String::from);
        configure(&own, &s)
    }

    fn setting(c: &rdkafka::ClientConfig, key: &str) -> Option<String> {
        c.get(key).map(String::from)
    }

    #[test]
    fn brokers_are_parsed_with_url() {
        assert_eq!(
            parse_sink("kafka://127.0.0.1:1"),
            Ok(("127.0.0.1:1".into(), false))
        );
        assert_eq!(parse_sink("kafka://h"), Ok(("h:9092".into(), false)));
        assert_eq!(
            parse_sink("kafka+tls://[::1]/"),
            Ok(("[::1]:9093".into(), true))
        );
        assert_eq!(parse_sink("h:1"), Ok(("h:1".into(), false)));
        for bad in [
            "nats://h:1",
            "kafka://h:1/t",
            "kafka://h:1?x=1",
            "kafka://",
            "kafka://h:99999",
        ] {
            assert!(parse_sink(bad).is_err(), "{bad}");
        }
        let err = parse_sink("kafka://u:hunter3@h:1").unwrap_err();
        assert!(
            !err.contains("hunter3") && err.contains("--password-file"),
            "{err}"
        );
    }

    #[test]
    fn an_idempotent_producer_with_the_flags_given() {
        let c = configured(
            &[
                "--sink",
                "kafka://a:1",
                "--sink",
                "kafka://[::1]:2",
                "--source-id",
                "site",
                "--kafka-partitions",
                "3",
                "--kafka-replicas",
                "2",
                "--ack-timeout",
                "7s",
            ],
            None,
        )
        .unwrap();
        assert_eq!(c.url(), "kafka://a:1,kafka://[::1]:2");
        assert_eq!(
            (c.partitions, c.replicas, c.source_id.as_str()),
            (3, 2, "site")
        );
        let rd = c.client_config();
        assert_eq!(
            setting(&rd, "bootstrap.servers").as_deref(),
            Some("a:1,[::1]:2")
        );
        assert_eq!(setting(&rd, "enable.idempotence").as_deref(), Some("true"));
        assert_eq!(setting(&rd, "acks").as_deref(), Some("all"));
        assert_eq!(setting(&rd, "message.timeout.ms").as_deref(), Some("7000"));
        assert_eq!(
            setting(&rd, "security.protocol").as_deref(),
            Some("plaintext")
        );
        // The scheme alone chooses the sink.
        for url in ["kafka://h", "kafka+tls://h:1"] {
            let args = run_args(&["--sink", url]);
            assert_eq!(
                crate::sink::protocol(&args.sink.common).unwrap().name,
                "kafka"
            );
        }
    }

    #[test]
    fn tls_and_sasl_become_librdkafka_settings_and_the_password_is_never_shown() {
        let c = configured(
            &[
                "--sink",
                "kafka+tls://h",
                "--username",
                "u",
                "--kafka-sasl-mechanism",
                "scram-sha-512",
            ],
            Some("hunter2"),
        )
        .unwrap();
        let rd = c.client_config();
        assert_eq!(
            setting(&rd, "security.protocol").as_deref(),
            Some("sasl_ssl")
        );
        assert_eq!(
            setting(&rd, "sasl.mechanism").as_deref(),
            Some("SCRAM-SHA-512")
        );
        assert_eq!(setting(&rd, "ssl.ca.location").as_deref(), Some("probe"));
        assert_eq!(setting(&rd, "sasl.password").as_deref(), Some("hunter2"));
        assert!(!format!("{c:?}").contains("hunter2"), "{c:?}");
        // PLAIN by default, over plaintext.
        let c = configured(&["--sink", "kafka://h", "--username", "u"], Some("p")).unwrap();
        let rd = c.client_config();
        assert_eq!(
            setting(&rd, "security.protocol").as_deref(),
            Some("sasl_plaintext")
        );
        assert_eq!(setting(&rd, "sasl.mechanism").as_deref(), Some("PLAIN"));
        // Refusals name what to give.
        let e = configured(&["--sink", "kafka://h", "--username", "u"], None).unwrap_err();
        assert!(e.contains("--password-file"), "{e}");
        let e = configured(
            &["--sink", "kafka://h", "--kafka-sasl-mechanism", "plain"],
            None,
        )
        .unwrap_err();
        assert!(e.contains("needs --username"), "{e}");
        let e = configured(&["--sink", "kafka://h", "--ca-file", "/x"], None).unwrap_err();
        assert!(e.contains("kafka+tls://"), "{e}");
        let e = configured(&["--sink", "kafka://a", "--sink", "kafka+tls://b"], None).unwrap_err();
        assert!(e.contains("same scheme"), "{e}");
        let e = crate::sink::configured(&["--sink", "nats://h", "--kafka-partitions", "2"])
            .unwrap_err();
        assert!(
            e.starts_with("--kafka-partitions only applies to a kafka sink")
                && e.ends_with("not nats"),
            "{e}"
        );
    }
}
