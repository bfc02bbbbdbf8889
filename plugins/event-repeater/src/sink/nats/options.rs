//! The async-nats client options: credentials, TLS, reconnection, and the
//! connection events the sink logs and counts.

use app_plugin::log::{debug, info, warn};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_nats::{ConnectOptions, Event};
use tokio::sync::Notify;

use crate::metrics::{inc, Metrics};
use crate::sink::nats::config::NatsConfig;

/// Builds the client options from the configuration.
pub async fn options(
    cfg: &NatsConfig,
    metrics: Arc<Metrics>,
    link: Arc<Notify>,
) -> Result<ConnectOptions, String> {
    let mut o = match &cfg.creds {
        Some(path) => ConnectOptions::with_credentials_file(path)
            .await
            .map_err(|e| format!("cannot use --creds {}: {e}", path.display()))?,
        None => ConnectOptions::new(),
    };
    if let Some(user) = &cfg.username {
        o = o.user_and_password(user.clone(), cfg.password.clone().unwrap_or_default());
    }
    if let Some(token) = &cfg.token {
        o = o.token(token.clone());
    }
    if let Some(ca) = &cfg.ca_file {
        o = o.add_root_certificates(ca.clone());
    }
    if cfg.tls {
        o = o.require_tls(true);
    }
    let servers = cfg.servers.join(", ");
    let o = o
        .name(cfg.client_name.clone())
        .connection_timeout(Duration::from_secs(5))
        // A hung server is noticed after two unanswered pings.
        .ping_interval(cfg.ack_timeout.max(Duration::from_secs(1)))
        .retry_on_initial_connect()
        .max_reconnects(None)
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis((100u64 << attempts.min(6)).min(5000))
        })
        .event_callback(move |event| {
            let metrics = metrics.clone();
            let servers = servers.clone();
            let link = link.clone();
            async move {
                // Wake the sink: it takes new events only while connected.
                link.notify_one();
                match event {
                    Event::Connected => {
                        metrics.sink_connected.store(true, Ordering::Relaxed);
                        info!("connected to NATS ({servers})");
                    }
                    Event::Disconnected => {
                        if metrics.sink_connected.swap(false, Ordering::Relaxed) {
                            inc(&metrics.sink_disconnects);
                        }
                        warn!("lost the connection to NATS ({servers}); reconnecting, events are kept in the buffer");
                    }
                    Event::ClientError(e) => {
                        let e = e.to_string();
                        warn!("NATS client: {e}; {}", client_error_hint(&e))
                    }
                    Event::ServerError(e) => warn!("NATS server: {e}"),
                    other => debug!("NATS: {other}"),
                }
            }
        });
    Ok(o)
}

/// What to check for a client error: the credentials when the server
/// refused them, else whether it runs at all.
fn client_error_hint(error: &str) -> &'static str {
    let e = error.to_ascii_lowercase();
    if e.contains("authorization") || e.contains("authentication") {
        "the server refused the credentials: check --creds, --username/--password or APP_NATS_TOKEN"
    } else {
        "is the server running? (see --sink)"
    }
}
