//! One connection to a RabbitMQ node through the `rabbitmq-stream-client`
//! crate's `Client`, with the producers of every stream the sink writes to
//! declared on it. Its confirmations and errors arrive on one channel.
//!
//! The crate's `Producer` is not used: it opens a connection per stream,
//! keys its waiters by publishing id (a repeated id replaces a waiter, and
//! its confirmation then panics the connection's task), and closes itself
//! with a blocking wait in `drop`. The `Client` underneath does none of that.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use rabbitmq_stream_client::error::ClientError;
use rabbitmq_stream_client::types::{MessageResult, ResponseCode, ResponseKind};
use rabbitmq_stream_client::{Client, ClientOptions, TlsConfiguration};
use tokio::sync::mpsc;

use crate::sink::rabbitmq_stream::config::{Node, RabbitConfig};

/// How long connecting, and every request on the connection, may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The most streams written to at once on one connection: two producers
/// each (RabbitMQ numbers a connection's producers with one byte).
pub const MAX_STREAMS: usize = 120;

/// What the connection reports.
#[derive(Debug)]
pub enum Event {
    /// Stored (or dropped as a duplicate, which RabbitMQ confirms too).
    Confirmed(u8, Vec<u64>),
    /// Refused, with RabbitMQ's code.
    Failed(u8, Vec<(u64, ResponseCode)>),
    /// The connection ended.
    Closed,
}

/// The producers of one stream on this connection.
#[derive(Debug, Clone, Copy)]
pub struct Producers {
    /// Named (deduplicating), and the highest id the stream held for the
    /// name when it was declared.
    pub named: u8,
    pub stored: u64,
    /// Without a name, declared when first needed.
    pub plain: Option<u8>,
}

/// Why a stream cannot be written to.
pub enum NotReady {
    /// RabbitMQ refuses the name itself: the event is refused and counted.
    Refused(String),
    /// Not now (the connection, rights, a cluster that cannot place it).
    Later(String),
}

pub struct Link {
    pub client: Client,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub node: String,
    pub streams: HashMap<Arc<str>, Producers>,
    free: Vec<u8>,
}

async fn bounded<T>(
    what: &str,
    f: impl std::future::Future<Output = Result<T, ClientError>>,
) -> Result<T, String> {
    match tokio::time::timeout(REQUEST_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {REQUEST_TIMEOUT:?}")),
    }
}

/// Connects to `node` and signs in; `Err` says why not.
pub async fn connect(cfg: &RabbitConfig, node: &Node) -> Result<Link, String> {
    let shown = format!("{}:{}", node.host, node.port);
    let mut o = ClientOptions::builder()
        .host(&node.host)
        .port(node.port)
        .v_host(&cfg.vhost)
        .heartbeat(10)
        .client_provided_name(cfg.client_name.clone());
    if let Some(user) = &cfg.username {
        o = o
            .user(user)
            .password(cfg.password.as_deref().unwrap_or_default());
    }
    if cfg.tls {
        // The library builds its rustls configuration with the process's
        // default provider: ring, as the rest of the repeater uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let tls = TlsConfiguration::builder()
            .add_root_certificates(cfg.ca_file.display().to_string())
            .build()
            .map_err(|e| format!("TLS for RabbitMQ: {e}"))?;
        o = o.tls(tls);
    }
    let client = bounded(
        &format!("cannot connect to RabbitMQ at {shown}"),
        Client::connect(o.build()),
    )
    .await
    .map_err(|e| format!("{e}{}", hint(&e)))?;
    let (tx, events) = mpsc::unbounded_channel();
    client
        .set_handler(move |item: MessageResult| {
            let tx = tx.clone();
            async move {
                let event = match item {
                    Some(Ok(r)) => match r.kind() {
                        ResponseKind::PublishConfirm(c) => {
                            Event::Confirmed(c.publisher_id, c.publishing_ids.clone())
                        }
                        ResponseKind::PublishError(e) => Event::Failed(
                            e.publisher_id,
                            e.publishing_errors
                                .iter()
                                .map(|p| (p.publishing_id, p.error_code.clone()))
                                .collect(),
                        ),
                        _ => return Ok(()),
                    },
                    Some(Err(_)) | None => Event::Closed,
                };
                let _ = tx.send(event);
                Ok(())
            }
        })
        .await;
    Ok(Link {
        client,
        events,
        node: shown,
        streams: HashMap::new(),
        free: (0..=255u8).rev().collect(),
    })
}

fn hint(e: &str) -> &'static str {
    let l = e.to_ascii_lowercase();
    if l.contains("authentication") || l.contains("sasl") || l.contains("access") {
        " (check --username and --password-file)"
    } else if l.contains("virtual") || l.contains("vhost") {
        " (check --rabbitmq-vhost)"
    } else {
        " (is RabbitMQ running with the rabbitmq_stream plugin? see --sink)"
    }
}

impl Link {
    /// The producers of `stream`, creating the stream (if missing) and
    /// declaring them first.
    pub async fn ready(
        &mut self,
        cfg: &RabbitConfig,
        stream: &Arc<str>,
        plain: bool,
        busy: impl Fn(u8) -> bool,
    ) -> Result<Producers, NotReady> {
        if let Some(p) = self.streams.get(stream).copied() {
            if !plain || p.plain.is_some() {
                return Ok(p);
            }
            let id = self.declare(stream, None).await?;
            let p = Producers {
                plain: Some(id),
                ..p
            };
            self.streams.insert(stream.clone(), p);
            return Ok(p);
        }
        if self.streams.len() >= MAX_STREAMS {
            self.forget_one(&busy).await?;
        }
        self.create(cfg, stream).await?;
        let named = self.declare(stream, Some(cfg.producer.clone())).await?;
        let stored = bounded(
            &format!("cannot read the producer's sequence in the stream {stream}"),
            self.client.query_publisher_sequence(&cfg.producer, stream),
        )
        .await
        .map_err(NotReady::Later)?;
        let plain = if plain {
            Some(self.declare(stream, None).await?)
        } else {
            None
        };
        let p = Producers {
            named,
            stored,
            plain,
        };
        self.streams.insert(stream.clone(), p);
        Ok(p)
    }

    async fn create(&self, cfg: &RabbitConfig, stream: &str) -> Result<(), NotReady> {
        let args = HashMap::from([
            ("initial-cluster-size".to_string(), cfg.replicas.to_string()),
            ("max-age".to_string(), "24h".to_string()),
        ]);
        let r = bounded(
            &format!("cannot create the stream {stream}"),
            self.client.create_stream(stream, args),
        )
        .await
        .map_err(NotReady::Later)?;
        match r.code() {
            ResponseCode::Ok => {
                app_plugin::log::info!("created the stream {stream} ({} replicas)", cfg.replicas);
                Ok(())
            }
            ResponseCode::StreamAlreadyExists => Ok(()),
            ResponseCode::PreconditionFailed => Err(NotReady::Refused(format!(
                "RabbitMQ refuses to create a stream named {stream:?} ({:?})",
                r.code()
            ))),
            code => Err(NotReady::Later(format!(
                "cannot create the stream {stream}: {code:?}{}",
                if *code == ResponseCode::AccessRefused {
                    " (the user may not configure it)"
                } else {
                    ""
                }
            ))),
        }
    }

    async fn declare(&mut self, stream: &str, name: Option<String>) -> Result<u8, NotReady> {
        let Some(id) = self.free.pop() else {
            return Err(NotReady::Later("no producer left on the connection".into()));
        };
        let r = bounded(
            &format!("cannot declare a producer on the stream {stream}"),
            self.client.declare_publisher(id, name, stream),
        )
        .await;
        match r {
            Ok(r) if r.is_ok() => Ok(id),
            Ok(r) => {
                self.free.push(id);
                Err(NotReady::Later(format!(
                    "cannot declare a producer on the stream {stream}: {:?}",
                    r.code()
                )))
            }
            Err(e) => {
                self.free.push(id);
                Err(NotReady::Later(e))
            }
        }
    }

    /// Closes the producers of a stream with nothing in flight, to make
    /// room for another.
    async fn forget_one(&mut self, busy: &impl Fn(u8) -> bool) -> Result<(), NotReady> {
        let idle = self
            .streams
            .iter()
            .find(|(_, p)| !busy(p.named) && !p.plain.is_some_and(busy))
            .map(|(s, p)| (s.clone(), *p));
        let Some((stream, p)) = idle else {
            return Err(NotReady::Later(format!(
                "{MAX_STREAMS} streams have publishes in flight"
            )));
        };
        self.streams.remove(&stream);
        for id in std::iter::once(p.named).chain(p.plain) {
            let _ = bounded("delete a producer", self.client.delete_publisher(id)).await;
            self.free.push(id);
        }
        Ok(())
    }

    /// Closes the connection, bounded.
    pub async fn close(self) {
        let _ = tokio::time::timeout(Duration::from_millis(500), self.client.close()).await;
    }
}
