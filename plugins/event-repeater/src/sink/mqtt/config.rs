//! The MQTT sink's configuration: `--sink` URLs (failover brokers), the
//! session, QoS and TLS flags, checked before anything connects.

use std::path::PathBuf;
use std::time::Duration;

use crate::addr::{join_host_port, split_host_port};
use crate::cli::Qos;
use crate::sink::{default_client_id, no_credentials, Setup};

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
/// set-up is checked by [`crate::sink::mqtt::KIND`].)
pub fn configure(setup: &Setup) -> Result<MqttConfig, String> {
    let args = setup.args;
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
    let client_id = match &args.client_id {
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
        clean_session: args.clean_session,
        username: args.username.clone(),
        password: setup.password.clone(),
        qos: args.qos,
        retain: args.retain,
        inflight: inflight(args.inflight, args.qos),
        max_packet_size: args.max_packet_size,
        failover,
        ack_timeout: args.ack_timeout,
    };
    Ok(mqtt)
}

/// The window: `--inflight`, or its default for the QoS. A QoS 2 window
/// over the broker's limit loses events unseen (see
/// [`crate::cli::DEFAULT_INFLIGHT_MQTT_QOS2`]), so one asked for is warned
/// about once, at start.
fn inflight(asked: Option<u16>, qos: Qos) -> u16 {
    let qos2 = crate::cli::DEFAULT_INFLIGHT_MQTT_QOS2;
    match (asked, qos) {
        (Some(n), Qos::ExactlyOnce) if n > qos2 => {
            app_plugin::log::warn!(
                "--inflight {n} at --qos 2: the broker must take {n} unfinished QoS 2 publishes (mosquitto: max_inflight_messages, 20 by default); over MQTT 3.1.1 one over its limit is answered as if accepted and then discarded, so the event is lost; leave --inflight at its QoS 2 default of {qos2} unless the broker's limit is at least {n}"
            );
            n
        }
        (Some(n), _) => n,
        (None, Qos::ExactlyOnce) => qos2,
        (None, _) => crate::cli::DEFAULT_INFLIGHT,
    }
}

/// `tcp://h:p`, `mqtt://h:p`, `mqtts://h:p`, `h:p` or `h` → (host, port, tls).
pub fn parse_sink(text: &str) -> Result<(String, u16, bool), String> {
    let (rest, tls) = if let Some(r) = text
        .strip_prefix("mqtts://")
        .or_else(|| text.strip_prefix("ssl://"))
    {
        (r, true)
    } else if let Some(r) = text
        .strip_prefix("tcp://")
        .or_else(|| text.strip_prefix("mqtt://"))
    {
        (r, false)
    } else if text.contains("://") {
        return Err(format!(
            "--sink {:?}: unsupported scheme; use tcp://, mqtt:// or mqtts://",
            app_plugin::redact::url(text)
        ));
    } else {
        (text, false)
    };
    no_credentials(
        text,
        rest,
        "--username and --password-file (or APP_MQTT_PASSWORD)",
    )?;
    let rest = rest.trim_end_matches('/');
    let default_port = if tls { 8883 } else { 1883 };
    let (host, port) = match split_host_port(rest) {
        Some(hp) => hp,
        None if !rest.is_empty() && !rest.contains(':') => (rest.to_string(), default_port),
        None if rest.starts_with('[') && rest.ends_with(']') => {
            (rest[1..rest.len() - 1].to_string(), default_port)
        }
        None => {
            return Err(format!(
                "--sink {:?} is not HOST:PORT",
                app_plugin::redact::url(text)
            ))
        }
    };
    Ok((host, port, tls))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::{run_args, setup};

    #[test]
    fn defaults() {
        let m = configure(&setup(&run_args(&[]), "event-time")).unwrap();
        assert_eq!((m.host.as_str(), m.port, m.tls), ("localhost", 1883, false));
        assert!(!m.clean_session);
        assert_eq!(m.client_id, default_client_id("event-repeater"));
        let args = run_args(&["--sink", "a", "--sink", "tcp://b:2"]);
        let m = configure(&setup(&args, "event-time")).unwrap();
        assert_eq!(m.url(), "mqtt://a:1883,mqtt://b:2");
    }

    #[test]
    fn the_window_defaults_to_what_brokers_take_for_each_qos() {
        let window = |args: &[&str]| {
            configure(&setup(&run_args(args), "event-time"))
                .unwrap()
                .inflight
        };
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
