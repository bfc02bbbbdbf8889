//! A small RabbitMQ stream protocol client: one connection (TCP or TLS),
//! signed in with SASL PLAIN, tuned and opened on a virtual host; then
//! requests answered by correlation id, publishes whose confirmations and
//! errors arrive as [`Event`]s, subscriptions for a reader, heartbeats both
//! ways. It sends only version 1 of each command and never
//! ExchangeCommandVersions (RabbitMQ 3.11's), so RabbitMQ 3.9 and 3.10
//! take it (the `rabbitmq-stream-client` crate closes on them: 3.10 answers
//! that command with "unknown command" and a close).
//!
//! Limits: connecting and signing in within `Options::timeout`, every
//! request answered and every write taken within it; frames no larger
//! than the tuned frame max (or `Options::read_max`); nothing read for two heartbeats plus the
//! timeout ends the connection.

mod handshake;
pub mod proto;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, WriteHalf};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;

use handshake::handshake;
use proto::{code, code_name, Body, Chunk, Frame, Incoming, Reply, ANSWER};

/// The largest frame proposed in the tune (RabbitMQ's default too).
pub const FRAME_MAX: u32 = 1 << 20;

/// Events queued for the caller before the reader waits (its socket then
/// fills and RabbitMQ waits).
const EVENTS: usize = 1024;

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}
type Stream = Box<dyn Io>;

/// How to connect.
#[derive(Clone)]
pub struct Options<'a> {
    pub host: &'a str,
    pub port: u16,
    /// TLS with this configuration, the host as the server name.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub username: &'a str,
    pub password: &'a str,
    pub vhost: &'a str,
    /// The connection name RabbitMQ shows.
    pub connection_name: &'a str,
    /// Asked for in the tune (RabbitMQ may ask for less).
    pub heartbeat: Duration,
    /// Connecting and signing in, and then each request and write.
    pub timeout: Duration,
    /// The largest frame taken from the node once tuned: the tuned size
    /// when 0. A reader needs more: RabbitMQ 3.10 delivers a chunk in one
    /// frame whatever its size, and with 16 KiB events it sent chunks of
    /// 1 MiB and a few hundred bytes (publishers only get small frames).
    pub read_max: u32,
}

impl<'a> Options<'a> {
    /// RabbitMQ's defaults: `guest`, the vhost `/`, no TLS.
    pub fn new(host: &'a str, port: u16) -> Options<'a> {
        Options {
            host,
            port,
            tls: None,
            username: "guest",
            password: "guest",
            vhost: "/",
            connection_name: "app",
            heartbeat: Duration::from_secs(10),
            timeout: Duration::from_secs(5),
            read_max: 0,
        }
    }
}

/// What the connection reports, in the order it arrived.
#[derive(Debug)]
pub enum Event {
    /// Stored (or dropped as a duplicate of a stored one: RabbitMQ
    /// confirms those too), per producer.
    Confirmed(u8, Vec<u64>),
    /// Refused: (publishing id, response code).
    Failed(u8, Vec<(u64, u16)>),
    /// A chunk of a subscription's messages (their bodies as stored).
    Delivered(u8, Chunk),
    /// The connection ended, and why.
    Closed(String),
}

struct Waiting {
    replies: HashMap<u32, oneshot::Sender<Reply>>,
    closed: Option<String>,
}

struct Shared {
    writer: tokio::sync::Mutex<WriteHalf<Stream>>,
    waiting: Mutex<Waiting>,
    timeout: Duration,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the connection dead: requests waiting fail with `why`.
    fn fail(&self, why: &str) {
        let mut w = self.waiting();
        w.closed.get_or_insert_with(|| why.to_string());
        w.replies.clear();
    }

    fn closed(&self) -> Option<String> {
        self.waiting().closed.clone()
    }

    async fn write(&self, frame: &[u8]) -> Result<(), String> {
        if let Some(why) = self.closed() {
            return Err(why);
        }
        let t = self.timeout;
        let done = timeout(t, async {
            let mut w = self.writer.lock().await;
            w.write_all(frame).await?;
            w.flush().await
        })
        .await;
        let why = match done {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => format!("cannot write to RabbitMQ: {e}"),
            Err(_) => format!("RabbitMQ took nothing for {t:?}"),
        };
        // A frame may be cut: nothing more can be sent on this connection.
        self.fail(&why);
        Err(why)
    }
}

/// One connection. Dropping it ends its tasks (and the connection).
pub struct Client {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    next_corr: AtomicU32,
    /// The frame size both sides agreed on.
    pub frame_max: u32,
}

impl Drop for Client {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Connects, signs in, tunes and opens the virtual host, within
/// `o.timeout`; the events of the connection arrive on the receiver.
pub async fn connect(o: &Options<'_>) -> Result<(Client, mpsc::Receiver<Event>), String> {
    let (stream, frame_max, heartbeat) = timeout(o.timeout, handshake(o))
        .await
        .map_err(|_| format!("no answer within {:?}", o.timeout))??;
    let (r, w) = tokio::io::split(stream);
    let shared = Arc::new(Shared {
        writer: tokio::sync::Mutex::new(w),
        waiting: Mutex::new(Waiting {
            replies: HashMap::new(),
            closed: None,
        }),
        timeout: o.timeout,
    });
    let (tx, rx) = mpsc::channel(EVENTS);
    // Silence for two heartbeats (RabbitMQ sends one when it has nothing
    // else to send) and the timeout: the peer or the path is gone.
    let idle = heartbeat * 2 + o.timeout;
    let read_max = if o.read_max == 0 {
        frame_max
    } else {
        o.read_max
    };
    let reader = tokio::spawn(read_loop(
        BufReader::with_capacity(64 * 1024, r),
        shared.clone(),
        tx,
        read_max,
        idle,
    ));
    let beat = tokio::spawn(heartbeats(shared.clone(), heartbeat));
    let client = Client {
        shared,
        tasks: vec![reader, beat],
        next_corr: AtomicU32::new(10),
        frame_max,
    };
    Ok((client, rx))
}

/// One frame into `buf`, refusing one over `max` before reading it.
async fn read_frame(
    r: &mut (impl AsyncRead + Unpin),
    buf: &mut Vec<u8>,
    max: u32,
) -> Result<(), String> {
    let gone = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "RabbitMQ closed the connection".to_string(),
        _ => format!("cannot read from RabbitMQ: {e}"),
    };
    let size = r.read_u32().await.map_err(gone)?;
    if size > max {
        return Err(format!(
            "RabbitMQ sent a frame of {size} bytes, over the {max} taken"
        ));
    }
    buf.resize(size as usize, 0);
    r.read_exact(buf).await.map_err(gone)?;
    Ok(())
}

async fn read_loop(
    mut r: BufReader<tokio::io::ReadHalf<Stream>>,
    shared: Arc<Shared>,
    events: mpsc::Sender<Event>,
    read_max: u32,
    idle: Duration,
) {
    let mut buf = Vec::new();
    let why = loop {
        match timeout(idle, read_frame(&mut r, &mut buf, read_max)).await {
            Err(_) => break format!("nothing from RabbitMQ for {idle:?} (heartbeats stopped)"),
            Ok(Err(e)) => break e,
            Ok(Ok(())) => {}
        }
        let event = match proto::decode(&buf) {
            Err(e) => break e.to_string(),
            Ok(Incoming::Reply(corr, reply)) => {
                if let Some(tx) = shared.waiting().replies.remove(&corr) {
                    let _ = tx.send(reply);
                }
                continue;
            }
            Ok(Incoming::Confirm(p, ids)) => Event::Confirmed(p, ids),
            Ok(Incoming::PublishError(p, e)) => Event::Failed(p, e),
            Ok(Incoming::Deliver(s, chunk)) => Event::Delivered(s, chunk),
            Ok(Incoming::MetadataUpdate { code, stream }) => {
                break format!(
                    "RabbitMQ reports the stream {stream:?} changed ({})",
                    code_name(code)
                )
            }
            Ok(Incoming::Close { corr, code, reason }) => {
                let ok = Frame::new(proto::CLOSE | ANSWER).u32(corr).u16(code::OK);
                let _ = shared.write(&ok.finish()).await;
                break format!(
                    "RabbitMQ closed the connection: {reason} ({})",
                    code_name(code)
                );
            }
            Ok(Incoming::CreditError(sub, code)) => {
                break format!("credit for subscription {sub}: {}", code_name(code))
            }
            Ok(Incoming::Heartbeat | Incoming::Tune { .. } | Incoming::Other(_)) => continue,
        };
        if events.send(event).await.is_err() {
            break "the client is gone".into();
        }
    };
    shared.fail(&why);
    let _ = events.send(Event::Closed(why)).await;
}

async fn heartbeats(shared: Arc<Shared>, every: Duration) {
    let beat = Frame::new(proto::HEARTBEAT).finish();
    loop {
        tokio::time::sleep(every).await;
        if shared.write(&beat).await.is_err() {
            return;
        }
    }
}

/// Messages of one producer for one publish frame.
pub struct Batch {
    frame: Frame,
    count: u32,
    publisher: u8,
}

/// Where a publish frame's message count sits (size, key, version, id).
const COUNT_AT: usize = 4 + 2 + 2 + 1;

impl Batch {
    pub fn new(publisher: u8) -> Batch {
        Batch {
            frame: Frame::new(proto::PUBLISH).u8(publisher).u32(0),
            count: 0,
            publisher,
        }
    }
    pub fn publisher(&self) -> u8 {
        self.publisher
    }
    pub fn count(&self) -> u32 {
        self.count
    }
    /// The frame's size so far, in bytes.
    pub fn bytes(&self) -> usize {
        self.frame.len()
    }
    /// Whether a body of `len` bytes still fits in a frame of `frame_max`.
    pub fn fits(&self, len: usize, frame_max: u32) -> bool {
        self.frame.len() + proto::PUBLISH_PER_MESSAGE + len <= frame_max as usize
    }
    pub fn push(&mut self, id: u64, body: &[u8]) {
        self.frame.put_message(id, body);
        self.count += 1;
    }
}

/// The largest body one publish frame of `frame_max` takes.
pub fn max_body(frame_max: u32) -> usize {
    (frame_max as usize).saturating_sub(proto::PUBLISH_HEAD + proto::PUBLISH_PER_MESSAGE)
}

impl Client {
    async fn request(&self, build: impl FnOnce(u32) -> Frame) -> Result<Reply, String> {
        let corr = self.next_corr.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut w = self.shared.waiting();
            if let Some(why) = &w.closed {
                return Err(why.clone());
            }
            w.replies.insert(corr, tx);
        }
        self.shared.write(&build(corr).finish()).await?;
        let t = self.shared.timeout;
        match timeout(t, rx).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(self.shared.closed().unwrap_or_default()),
            Err(_) => {
                self.shared.waiting().replies.remove(&corr);
                Err(format!("no answer from RabbitMQ within {t:?}"))
            }
        }
    }

    /// Creates `stream` with `args` (`max-age`, `initial-cluster-size`,
    /// …); RabbitMQ's response code.
    pub async fn create_stream(&self, stream: &str, args: &[(&str, &str)]) -> Result<u16, String> {
        let r = self
            .request(|c| {
                Frame::new(proto::CREATE_STREAM)
                    .u32(c)
                    .string(stream)
                    .properties(args)
            })
            .await?;
        Ok(r.code)
    }

    /// Declares producer `id` on `stream`, named `reference` (the name
    /// RabbitMQ deduplicates by) or unnamed; the response code.
    pub async fn declare_publisher(
        &self,
        id: u8,
        reference: Option<&str>,
        stream: &str,
    ) -> Result<u16, String> {
        let r = self
            .request(|c| {
                let f = Frame::new(proto::DECLARE_PUBLISHER).u32(c).u8(id);
                // No name: an empty reference. RabbitMQ reads the length
                // unsigned, so a null string (-1) is "unknown frame" and
                // the connection closes (found replaying dead letters).
                let f = f.string(reference.unwrap_or(""));
                f.string(stream)
            })
            .await?;
        Ok(r.code)
    }

    /// The highest publishing id `stream` holds for the producer name
    /// `reference` (0: none).
    pub async fn query_publisher_sequence(
        &self,
        reference: &str,
        stream: &str,
    ) -> Result<u64, String> {
        let r = self
            .request(|c| {
                Frame::new(proto::QUERY_PUBLISHER_SEQUENCE)
                    .u32(c)
                    .string(reference)
                    .string(stream)
            })
            .await?;
        match (r.code, r.body) {
            (code::OK, Body::Sequence(n)) => Ok(n),
            (c, _) => Err(format!("publisher sequence: {}", code_name(c))),
        }
    }

    /// Deletes `stream` and its messages; RabbitMQ's response code.
    pub async fn delete_stream(&self, stream: &str) -> Result<u16, String> {
        let r = self
            .request(|c| Frame::new(proto::DELETE_STREAM).u32(c).string(stream))
            .await?;
        Ok(r.code)
    }

    pub async fn delete_publisher(&self, id: u8) -> Result<u16, String> {
        let r = self
            .request(|c| Frame::new(proto::DELETE_PUBLISHER).u32(c).u8(id))
            .await?;
        Ok(r.code)
    }

    /// Sends a batch; its confirmation comes as an [`Event`].
    pub async fn publish(&self, batch: Batch) -> Result<(), String> {
        let Batch {
            mut frame, count, ..
        } = batch;
        frame.patch_u32(COUNT_AT, count);
        self.shared.write(&frame.finish()).await
    }

    /// Subscribes `sub` to `stream` from its first message with `credit`
    /// chunks; the response code.
    pub async fn subscribe(&self, sub: u8, stream: &str, credit: u16) -> Result<u16, String> {
        let r = self
            .request(|c| {
                Frame::new(proto::SUBSCRIBE)
                    .u32(c)
                    .u8(sub)
                    .string(stream)
                    .u16(1) // offset specification: first
                    .u16(credit)
                    .properties(&[])
            })
            .await?;
        Ok(r.code)
    }

    /// Lets RabbitMQ send `n` more chunks to `sub`.
    pub async fn credit(&self, sub: u8, n: u16) -> Result<(), String> {
        let f = Frame::new(proto::CREDIT).u8(sub).u16(n);
        self.shared.write(&f.finish()).await
    }

    /// Closes the connection politely, waiting at most `within` for the
    /// answer.
    pub async fn close(self, within: Duration) {
        let bye = self.request(|c| {
            Frame::new(proto::CLOSE)
                .u32(c)
                .u16(code::OK)
                .string("closed by the client")
        });
        let _ = timeout(within, bye).await;
    }
}
