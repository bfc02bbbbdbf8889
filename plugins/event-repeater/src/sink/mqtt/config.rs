//! The MQTT sink's configuration: `--sink` URLs (failover brokers), the
//! session, QoS and TLS flags, checked before anything connects.

use std::path::PathBuf;
use std::time::Duration;

use app_plugin::address::{join_host_port, Rules, Scheme};

use crate::flag_values::Qos;
use crate::sink::{default_client_id, Setup};

/// The MQTT sink's own flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "MQTT sink (--sinkprotocol mqtt)")]
// No group: its flags are told apart by `sink::configure`, not by clap.
#[group(skip)]
pub struct Args {
    /// Publish with the retain flag.
    #[arg(long)]
    pub retain: bool,

    /// MQTT client id (default: derived from the host name and --name, stable across restarts).
    #[arg(long)]
    pub client_id: Option<String>,

    /// Start every connection with a clean MQTT session instead of a persistent one.
    #[arg(long)]
    pub clean_session: bool,

    /// Largest MQTT packet sent or received; bigger events are refused and counted.
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = crate::flag_values::parse_size)]
    pub max_packet_size: usize,
}

/// MQTT settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqttConfig {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    pub ca_file: Option<PathBuf>,
    pub client_id: String,
    pub clean_session: bool,
    pub username: Option<String>,
    pub password: Option<String>,
    pub qos: Qos,
    pub retain: bool,
    pub inflight: u16,
    pub max_packet_size: usize,
    /// Brokers to fail over to, in order, after `host:port` (`--sink` repeated).
    pub failover: Vec<Endpoint>,
    /// How long a broker may leave a publish or a ping unanswered before the
    /// repeater moves to the next one (with `failover` only).
    pub ack_timeout: Duration,
}

/// One MQTT broker address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Endpoint {
    pub fn url(&self) -> String {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        format!("{scheme}://{}", join_host_port(&self.host, self.port))
    }
}

impl MqttConfig {
    /// Every broker, the preferred one first.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        let first = Endpoint {
            host: self.host.clone(),
            port: self.port,
            tls: self.tls,
        };
        std::iter::once(first)
            .chain(self.failover.iter().cloned())
            .collect()
    }

    /// The broker (or, with failover, every broker) as a URL.
    pub fn url(&self) -> String {
        let urls: Vec<String> = self.endpoints().iter().map(Endpoint::url).collect();
        urls.join(",")
    }
}

/// The MQTT settings from the flags; an `Err` is a usage error. (The TLS
/// set-up is checked by [`crate::sink::mqtt::Mqtt`].)
pub fn configure(own: &Args, setup: &Setup) -> Result<MqttConfig, String> {
    let args = setup.sink;
    let (first, more) = match args.sink.split_first() {
        None => ("tcp://localhost:1883", &[][..]),
        Some((first, more)) => (first.as_str(), more),
    };
    let (host, port, tls) = parse_sink(first)?;
    let mut failover = Vec::new();
    for text in more {
        let (host, port, t) = parse_sink(text)?;
        if t != tls {
            return Err(format!(
                "--sink {:?}: every MQTT broker must use TLS (mqtts://) or none",
                app_plugin::redact::url(text)
            ));
        }
        failover.push(Endpoint { host, port, tls });
    }
    if args.ca_file.is_some() && !tls {
        return Err("--ca-file only applies to an mqtts:// sink".into());
    }
    let client_id = match &own.client_id {
        Some(id) if id.is_empty() => return Err("--client-id must not be empty".into()),
        Some(id) => id.clone(),
        None => default_client_id(setup.name),
    };
    let mqtt = MqttConfig {
        host,
        port,
        tls,
        ca_file: args.ca_file.clone(),
        client_id,
        clean_session: own.clean_session,
        username: args.username.clone(),
        password: setup.password.clone(),
        qos: args.qos,
        retain: own.retain,
        inflight: inflight(args.inflight, args.qos),
        max_packet_size: own.max_packet_size,
        failover,
        ack_timeout: args.ack_timeout,
    };
    Ok(mqtt)
}

/// The window: `--inflight`, or its default for the QoS. A QoS 2 window
/// over the broker's limit loses events unseen (see
/// [`crate::flag_values::DEFAULT_INFLIGHT_MQTT_QOS2`]), so one asked for is warned
/// about once, at start.
fn inflight(asked: Option<u16>, qos: Qos) -> u16 {
    let qos2 = crate::flag_values::DEFAULT_INFLIGHT_MQTT_QOS2;
    match (asked, qos) {
        (Some(n), Qos::ExactlyOnce) if n > qos2 => {
            app_plugin::log::warn!(
                "--inflight {n} at --qos 2: the broker must take {n} unfinished QoS 2 publishes (mosquitto: max_inflight_messages, 20 by default); over MQTT 3.1.1 one over its limit is answered as if accepted and then discarded, so the event is lost; leave --inflight at its QoS 2 default of {qos2} unless the broker's limit is at least {n}"
            );
            n
        }
        (Some(n), _) => n,
        (None, Qos::ExactlyOnce) => qos2,
        (None, _) => crate::flag_values::DEFAULT_INFLIGHT,
    }
}

/// What `--sink` takes for MQTT: `tcp://`, `mqtt://` (1883), `mqtts://`,
/// `ssl://` (8883, TLS), or `HOST[:PORT]`; no path, no credentials.
pub const URLS: Rules = Rules {
    schemes: &[
        Scheme::plain("tcp", 1883),
        Scheme::plain("mqtt", 1883),
        Scheme::tls("mqtts", 8883),
        Scheme::tls("ssl", 8883),
    ],
    bare: Some("tcp"),
    path: false,
    credentials: Some("--username and --password-file (or APP_MQTT_PASSWORD)"),
};

/// `tcp://h:p`, `mqtt://h:p`, `mqtts://h:p`, `h:p` or `h` → (host, port, tls).
pub fn parse_sink(text: &str) -> Result<(String, u16, bool), String> {
    let a = URLS.parse(text).map_err(|e| format!("--sink {e}"))?;
    Ok((a.host, a.port, a.scheme.tls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::{run_args, setup};

    /// The MQTT settings of `args` (after `run`).
    fn mqtt(args: &[&str]) -> MqttConfig {
        let run = run_args(args);
        let own = <Args as clap::FromArgMatches>::from_arg_matches(&run.sink.matches).unwrap();
        configure(&own, &setup(&run, "event-time")).unwrap()
    }

    #[test]
    fn defaults() {
        let m = mqtt(&[]);
        assert_eq!((m.host.as_str(), m.port, m.tls), ("localhost", 1883, false));
        assert!(!m.clean_session);
        assert_eq!(m.client_id, default_client_id("event-repeater"));
        let m = mqtt(&["--sink", "a", "--sink", "tcp://b:2"]);
        assert_eq!(m.url(), "mqtt://a:1883,mqtt://b:2");
    }

    #[test]
    fn the_window_defaults_to_what_brokers_take_for_each_qos() {
        let window = |args: &[&str]| mqtt(args).inflight;
        assert_eq!(window(&[]), 1000);
        assert_eq!(window(&["--qos", "0"]), 1000);
        assert_eq!(window(&["--qos", "2"]), 20);
        assert_eq!(window(&["--qos", "2", "--inflight", "50"]), 50);
        assert_eq!(window(&["--qos", "1", "--inflight", "7"]), 7);
    }

    #[test]
    fn sinks() {
        assert_eq!(
            parse_sink("tcp://localhost:1883"),
            Ok(("localhost".into(), 1883, false))
        );
        assert_eq!(
            parse_sink("localhost:1884"),
            Ok(("localhost".into(), 1884, false))
        );
        assert_eq!(parse_sink("mqtt://h"), Ok(("h".into(), 1883, false)));
        assert_eq!(parse_sink("mqtts://h"), Ok(("h".into(), 8883, true)));
        assert_eq!(parse_sink("[::1]:1"), Ok(("::1".into(), 1, false)));
        assert!(parse_sink("ws://h").is_err());
        assert!(parse_sink("h:notaport").is_err());
        // Issue 32: the host was "a/b" here, and refused on NATS.
        assert!(parse_sink("tcp://a/b").unwrap_err().contains("a path"));
        assert_eq!(parse_sink("tcp://a/"), Ok(("a".into(), 1883, false)));
    }

    #[test]
    fn credentials_in_the_url_are_refused_masked() {
        let err = parse_sink("mqtt://u:hunter4@h:1").unwrap_err();
        assert!(
            err.contains("--password-file") && !err.contains("hunter4"),
            "{err}"
        );
        let err = parse_sink("nats://u:hunter6@h:1").unwrap_err();
        assert!(
            err.contains("unsupported scheme") && !err.contains("hunter6"),
            "{err}"
        );
    }
}
