//! The rumqttc options for a broker: keep-alive, packet sizes, the window,
//! credentials and TLS.

use std::time::Duration;

use rumqttc::{MqttOptions, QoS, TlsConfiguration, Transport};

use crate::flag_values::Qos;
use crate::sink::mqtt::config::{Endpoint, MqttConfig};

pub fn qos(q: Qos) -> QoS {
    match q {
        Qos::AtMostOnce => QoS::AtMostOnce,
        Qos::AtLeastOnce => QoS::AtLeastOnce,
        Qos::ExactlyOnce => QoS::ExactlyOnce,
    }
}

/// The rumqttc options for `broker`, as `client_id`.
pub fn options_for(
    cfg: &MqttConfig,
    broker: &Endpoint,
    client_id: &str,
) -> Result<MqttOptions, String> {
    let mut o = MqttOptions::new(client_id, broker.host.clone(), broker.port);
    // With brokers to fail over to, a broker that stops answering pings is
    // noticed within about two --ack-timeouts even when nothing is published.
    let keep_alive = if cfg.failover.is_empty() {
        Duration::from_secs(10)
    } else {
        cfg.ack_timeout.max(Duration::from_secs(1))
    };
    o.set_keep_alive(keep_alive);
    o.set_max_packet_size(cfg.max_packet_size, cfg.max_packet_size);
    o.set_inflight(cfg.inflight);
    o.set_clean_session(true);
    if let Some(user) = &cfg.username {
        o.set_credentials(user.clone(), cfg.password.clone().unwrap_or_default());
    }
    if broker.tls {
        o.set_transport(Transport::tls_with_config(tls_config(cfg)?));
    }
    Ok(o)
}

/// Whether the TLS set-up for `cfg` works: `--ca-file` a regular file of
/// at most 1 MiB holding at least one certificate, or the system's CA
/// certificates; checked at start, read again at each connection.
pub fn check_tls(cfg: &MqttConfig) -> Result<(), String> {
    tls_config(cfg).map(|_| ())
}

fn tls_config(cfg: &MqttConfig) -> Result<TlsConfiguration, String> {
    crate::tls_client::config(cfg.ca_file.as_deref(), "--ca-file", "the broker")
        .map(TlsConfiguration::Rustls)
}
