//! What keeps JetStream from taking events, said once and clearly.
//!
//! Three conditions used to look like a passing outage (a warning every 5 s,
//! retried for ever, `/healthz` "ok"):
//!
//! - the server has **no JetStream** (started without `-js`, or not for this
//!   account): its JetStream API does not answer;
//! - **`--nats-replicas N` over what the servers can hold**: a server that is
//!   not in a cluster refuses a replicated stream; a cluster with fewer
//!   servers than replicas (or some of them down) cannot place it ("no
//!   suitable peers for placement", "insufficient resources");
//! - the **stream is full**: a stream made with `max_msgs`, `max_bytes` or
//!   `max_msgs_per_subject` and `discard new` refuses new messages.
//!
//! [`check_at_start`] refuses to start (exit 1) on the first two when the
//! server answers at start and the condition can never change: no JetStream
//! at all, or replicas on a server without a cluster. Later, and for the
//! rest, [`Condition`] reports what is wrong once when it starts and once
//! when it ends, in the log and in `/healthz` (`sink.problem`), while the
//! events stay in the buffer and are sent again with backoff: nothing
//! accepted is dropped for it. Refused publishes into a full stream are
//! counted in `sink_refused_total{reason="stream_full"}`.

use app_plugin::log::{info, warn};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::{AccountErrorKind, GetStreamErrorKind};
use async_nats::jetstream::{self, ErrorCode};
use async_nats::Client;
use tokio::time::Instant;

use crate::metrics::{inc, set_problem, Metrics};
use crate::sink::nats::config::NatsConfig;

/// How long the start waits for the first connection before it leaves the
/// checks to the running sink.
const START_WAIT: Duration = Duration::from_secs(3);

/// A condition that keeps events from being stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trouble {
    NoJetStream,
    /// A replicated stream on a server without a cluster.
    ReplicasWithoutCluster,
    /// The cluster cannot place the stream's replicas.
    InsufficientResources,
    StreamFull,
}

/// Which condition a JetStream error (as async-nats writes it) is, if any.
pub fn classify(error: &str) -> Option<Trouble> {
    let e = error.to_ascii_lowercase();
    // The JetStream error codes nats-server sends (server/errors.json);
    // "no responders" is what a JetStream request gets when nothing serves
    // the JetStream API.
    if e.contains("requested jetstream resource does not exist")
        || e.contains("jetstream unavailable")
        || e.contains("error code 10076")
        || e.contains("error code 10039")
    {
        Some(Trouble::NoJetStream)
    } else if e.contains("error code 10074") {
        Some(Trouble::ReplicasWithoutCluster)
    } else if e.contains("error code 10023") || e.contains("error code 10005") {
        Some(Trouble::InsufficientResources)
    } else if e.contains("maximum messages exceeded")
        || e.contains("maximum bytes exceeded")
        || e.contains("maximum messages per subject exceeded")
    {
        Some(Trouble::StreamFull)
    } else {
        None
    }
}

/// Whether a publish was refused for being over the stream's own
/// `max_msg_size`: that event can never be stored (a condition of the event,
/// not of the sink), so it is counted as `failed{reason="too_large"}`.
pub fn over_stream_max_msg_size(error: &str) -> bool {
    let e = error.to_ascii_lowercase();
    e.contains("error code 10054") || e.contains("message size exceeds maximum allowed")
}

/// What is wrong, for `/healthz`, the log and the start-up error.
fn describe(t: Trouble, cfg: &NatsConfig) -> String {
    let (stream, n, servers) = (&cfg.stream, cfg.stream_replicas, cfg.servers.join(", "));
    match t {
        Trouble::NoJetStream => format!(
            "no JetStream: the NATS server ({servers}) does not answer JetStream requests (start nats-server with -js, or enable JetStream for this account; --qos 0 publishes to core NATS without it)"
        ),
        Trouble::ReplicasWithoutCluster => format!(
            "the stream {stream} cannot be created with --nats-replicas {n}: the NATS server ({servers}) is not in a cluster, and one server keeps 1 replica (use --nats-replicas 1, or create the stream yourself)"
        ),
        Trouble::InsufficientResources => format!(
            "JetStream cannot place the stream {stream} with --nats-replicas {n}: fewer than {n} servers with JetStream are up in the cluster, or they lack storage"
        ),
        Trouble::StreamFull => format!(
            "the stream {stream} is full: it refuses new messages (its max_msgs, max_bytes or max_msgs_per_subject limit with discard new)"
        ),
    }
}

/// The sink's current condition: logged when it starts and ends, shown in
/// `/healthz` while it lasts.
pub struct Condition {
    metrics: Arc<Metrics>,
    cfg: NatsConfig,
    current: Option<(Trouble, Instant)>,
}

impl Condition {
    pub fn new(metrics: Arc<Metrics>, cfg: &NatsConfig) -> Condition {
        Condition {
            metrics,
            cfg: cfg.clone(),
            current: None,
        }
    }

    /// Takes note of a failure: `true` when it is one of the known
    /// conditions (reported here, so the caller need not warn again).
    pub fn failed(&mut self, error: &str) -> bool {
        let Some(t) = classify(error) else {
            return false;
        };
        if t == Trouble::StreamFull {
            inc(&self.metrics.refused_stream_full);
        }
        if self.current.map(|(c, _)| c) != Some(t) {
            let text = format!(
                "{}; events are kept and sent again with backoff",
                describe(t, &self.cfg)
            );
            warn!("{text} ({error})");
            set_problem(&self.metrics.sink_problem, &text);
            self.current = Some((t, Instant::now()));
        }
        true
    }

    /// An event was stored: whatever was wrong is over.
    pub fn stored(&mut self) {
        if let Some((t, since)) = self.current.take() {
            set_problem(&self.metrics.sink_problem, "");
            let what = match t {
                Trouble::StreamFull => format!("the stream {} has room again", self.cfg.stream),
                _ => format!("JetStream stores events in {} again", self.cfg.stream),
            };
            warn!(
                "{what} after {:.1}s; the events kept meanwhile are being sent",
                since.elapsed().as_secs_f64()
            );
        }
    }
}

/// Waits (up to a few seconds) for the first connection, then checks what
/// can never change while the repeater runs: `Err` is a start-up failure.
/// A server that does not answer in time is left to the running sink.
pub async fn check_at_start(client: &Client, cfg: &NatsConfig) -> Result<(), String> {
    let deadline = Instant::now() + START_WAIT;
    while client.connection_state() != async_nats::connection::State::Connected {
        if Instant::now() >= deadline {
            info!(
                "NATS ({}) does not answer yet; JetStream is checked once it does",
                cfg.servers.join(", ")
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let js = jetstream::ContextBuilder::new()
        .timeout(cfg.ack_timeout)
        .build(client.clone());
    if let Err(e) = js.query_account().await {
        match e.kind() {
            AccountErrorKind::JetStreamUnavailable => {
                return Err(describe_fatal(Trouble::NoJetStream, cfg))
            }
            AccountErrorKind::JetStream(j)
                if j.error_code() == ErrorCode::JETSTREAM_NOT_ENABLED
                    || j.error_code() == ErrorCode::JETSTREAM_NOT_ENABLED_FOR_ACCOUNT =>
            {
                return Err(describe_fatal(Trouble::NoJetStream, cfg))
            }
            // No answer in time: the running sink finds out.
            AccountErrorKind::TimedOut => return Ok(()),
            // An answer this client cannot read (servers older than the
            // client's account schema): JetStream is there.
            _ => {}
        }
    }
    if cfg.stream_replicas > 1 && client.server_info().cluster.is_none() {
        // A stream that exists is used as it is: the flag does not matter.
        if let Err(e) = js.get_stream(&cfg.stream).await {
            if let GetStreamErrorKind::JetStream(j) = e.kind() {
                if j.error_code() == ErrorCode::STREAM_NOT_FOUND {
                    return Err(describe_fatal(Trouble::ReplicasWithoutCluster, cfg));
                }
            }
        }
    }
    Ok(())
}

/// The start-up error for a condition that can never change.
fn describe_fatal(t: Trouble, cfg: &NatsConfig) -> String {
    format!(
        "{}; nothing could ever be stored, so the repeater does not start",
        describe(t, cfg)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_as_async_nats_writes_them_are_classified() {
        for (text, want) in [
            ("request error: requested JetStream resource does not exist", Some(Trouble::NoJetStream)),
            ("jetstream error: replicas > 1 not supported in non-clustered mode (code 500, error code 10074)", Some(Trouble::ReplicasWithoutCluster)),
            ("jetstream error: insufficient resources (code 503, error code 10023)", Some(Trouble::InsufficientResources)),
            ("jetstream error: no suitable peers for placement (code 400, error code 10005)", Some(Trouble::InsufficientResources)),
            ("publish failed: maximum messages exceeded (code 503, error code 10077)", Some(Trouble::StreamFull)),
            ("publish failed: maximum bytes exceeded (code 503, error code 10077)", Some(Trouble::StreamFull)),
            ("timed out: didn't receive ack in time", None),
            ("no stream found for given subject", None),
        ] {
            assert_eq!(classify(text), want, "{text}");
        }
        let big =
            "publish failed: message size exceeds maximum allowed (code 400, error code 10054)";
        assert!(over_stream_max_msg_size(big));
        assert_eq!(classify(big), None);
        assert!(!over_stream_max_msg_size(
            "publish failed: maximum messages exceeded (code 503, error code 10077)"
        ));
    }
}
