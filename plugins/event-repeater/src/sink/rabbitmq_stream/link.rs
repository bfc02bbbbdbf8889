//! One connection to a RabbitMQ node through the sink's own [`client`],
//! with the producers of every stream the sink writes to declared on it.
//! Its confirmations and errors arrive on one channel.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::sink::rabbitmq_stream::client::proto::{code, code_name};
use crate::sink::rabbitmq_stream::client::{self, Client, Options};
use crate::sink::rabbitmq_stream::config::{Node, RabbitConfig};

pub use crate::sink::rabbitmq_stream::client::Event;

/// How long connecting, and every request on the connection, may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a stream the sink creates keeps its messages.
pub const MAX_AGE: &str = "24h";

/// The heartbeat asked for (RabbitMQ's default is 60 s): a node that went
/// away without closing is noticed within two of them.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// The most streams written to at once on one connection: two producers
/// each (RabbitMQ numbers a connection's producers with one byte).
pub const MAX_STREAMS: usize = 120;

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
    pub events: mpsc::Receiver<Event>,
    pub node: String,
    pub streams: HashMap<Arc<str>, Producers>,
    /// The stream of the last [`Link::ready`] and its producers: a route's
    /// events share one `Arc`, so most events skip the map.
    last: Option<(Arc<str>, Producers)>,
    free: Vec<u8>,
}

/// Connects to `node` and signs in; `Err` says why not.
pub async fn connect(
    cfg: &RabbitConfig,
    tls: Option<&Arc<rustls::ClientConfig>>,
    node: &Node,
) -> Result<Link, String> {
    let shown = format!("{}:{}", node.host, node.port);
    let mut o = Options::new(&node.host, node.port);
    o.vhost = &cfg.vhost;
    o.connection_name = &cfg.client_name;
    o.heartbeat = HEARTBEAT;
    o.timeout = REQUEST_TIMEOUT;
    o.tls = tls.cloned();
    if let Some(user) = &cfg.username {
        o.username = user;
        o.password = cfg.password.as_deref().unwrap_or_default();
    }
    let (client, events) = client::connect(&o)
        .await
        .map_err(|e| format!("cannot connect to RabbitMQ at {shown}: {e}{}", hint(&e)))?;
    Ok(Link {
        client,
        events,
        node: shown,
        streams: HashMap::new(),
        last: None,
        free: (0..=255u8).rev().collect(),
    })
}

fn hint(e: &str) -> &'static str {
    if e.contains("authentication") || e.contains("SASL") {
        " (check --username and --password-file)"
    } else if e.contains("virtual host") {
        " (check --rabbitmq-vhost)"
    } else if e.contains("TLS") {
        " (check the scheme, rabbitmq-stream+tls://, and --ca-file)"
    } else {
        " (is RabbitMQ running with the rabbitmq_stream plugin? see --sink)"
    }
}

impl Link {
    /// The producers of `stream` if it was the last one [`Link::ready`]
    /// answered for (the same `Arc`) and they are all that is needed.
    pub fn last_ready(&self, stream: &Arc<str>, plain: bool) -> Option<Producers> {
        match &self.last {
            Some((s, p)) if Arc::ptr_eq(s, stream) && (!plain || p.plain.is_some()) => Some(*p),
            _ => None,
        }
    }

    /// The producers of `stream`, creating the stream (if missing) and
    /// declaring them first.
    pub async fn ready(
        &mut self,
        cfg: &RabbitConfig,
        stream: &Arc<str>,
        plain: bool,
        busy: impl Fn(u8) -> bool,
    ) -> Result<Producers, NotReady> {
        let p = self.lookup(cfg, stream, plain, busy).await?;
        self.last = Some((stream.clone(), p));
        Ok(p)
    }

    async fn lookup(
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
        let named = self.declare(stream, Some(&cfg.producer)).await?;
        let stored = self
            .client
            .query_publisher_sequence(&cfg.producer, stream)
            .await
            .map_err(|e| {
                NotReady::Later(format!(
                    "cannot read the producer's sequence in the stream {stream}: {e}"
                ))
            })?;
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
        let replicas = cfg.replicas.to_string();
        let args = [
            ("initial-cluster-size", replicas.as_str()),
            ("max-age", MAX_AGE),
        ];
        let r = self
            .client
            .create_stream(stream, &args)
            .await
            .map_err(|e| NotReady::Later(format!("cannot create the stream {stream}: {e}")))?;
        match r {
            code::OK => {
                app_plugin::log::info!("created the stream {stream} ({} replicas)", cfg.replicas);
                Ok(())
            }
            code::STREAM_ALREADY_EXISTS => Ok(()),
            // RabbitMQ answers this both for a name or arguments it refuses
            // and for a stream that exists with other arguments (its own
            // max-age, say): that one is used as it is, as the docs say.
            code::PRECONDITION_FAILED
                if self
                    .client
                    .query_publisher_sequence(&cfg.producer, stream)
                    .await
                    .is_ok() =>
            {
                app_plugin::log::info!(
                    "the stream {stream} exists with other arguments than the repeater gives a stream it creates; using it as it is"
                );
                Ok(())
            }
            code::PRECONDITION_FAILED => Err(NotReady::Refused(format!(
                "RabbitMQ refuses to create a stream named {stream:?} ({})",
                code_name(r)
            ))),
            c => Err(NotReady::Later(format!(
                "cannot create the stream {stream}: {}{}",
                code_name(c),
                if c == code::ACCESS_REFUSED {
                    " (the user may not configure it)"
                } else {
                    ""
                }
            ))),
        }
    }

    async fn declare(&mut self, stream: &str, name: Option<&str>) -> Result<u8, NotReady> {
        let Some(id) = self.free.pop() else {
            return Err(NotReady::Later("no producer left on the connection".into()));
        };
        match self.client.declare_publisher(id, name, stream).await {
            Ok(code::OK) => Ok(id),
            r => {
                self.free.push(id);
                let why = match r {
                    Ok(c) => code_name(c).to_string(),
                    Err(e) => e,
                };
                Err(NotReady::Later(format!(
                    "cannot declare a producer on the stream {stream}: {why}"
                )))
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
        self.last = None;
        for id in std::iter::once(p.named).chain(p.plain) {
            let _ = self.client.delete_publisher(id).await;
            self.free.push(id);
        }
        Ok(())
    }

    /// Closes the connection, bounded.
    pub async fn close(self) {
        self.client.close(Duration::from_millis(500)).await;
    }
}
