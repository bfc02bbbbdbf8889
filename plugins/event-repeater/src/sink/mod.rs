//! Sinks: the task that takes records from the buffer and delivers them.
//! Each returns, at the end, how many accepted events were not delivered.
//!
//! Each sink's module also holds its topic rules; the router asks the sink
//! chosen at start ([`Kind::refuse`]) about every event before buffering it,
//! so an event a broker would refuse (and drop the connection over) is never
//! published, is counted once, and neither blocks the events behind it nor
//! holds the checkpoint back.
//!
//! The sink loop is the relay loop that systemd's watchdog watches: every
//! turn calls [`Drain::beat`], and an idle loop wakes at
//! [`Drain::watchdog_due`], so the pings stop when the loop is stuck (a
//! write that never returns, a lock never released), not merely when the
//! process is gone. A broker that is down does not stop them: the loop
//! keeps turning through its backoff.

pub mod mqtt;
pub mod nats;
pub mod nats_acks;
pub mod nats_trouble;
pub mod stderr;
pub mod subject;

use std::time::Duration;

use app_plugin::notify::Watchdog;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::SinkConfig;

/// Why a sink refuses an event; the `reason` of `events_failed_total`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The sink topic is not one this sink can publish to (the message
    /// shows the topic escaped).
    InvalidTopic(String),
    /// The event is larger than the sink takes.
    TooLarge(String),
}

impl Refusal {
    /// What to tell the operator.
    pub fn message(&self) -> &str {
        match self {
            Refusal::InvalidTopic(m) | Refusal::TooLarge(m) => m,
        }
    }
}

/// The sink chosen at start, as the router sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Mqtt { max_packet: usize },
    Nats,
    Stderr,
}

impl Kind {
    pub fn of(cfg: &SinkConfig) -> Kind {
        match cfg {
            SinkConfig::Mqtt(m) => Kind::Mqtt {
                max_packet: m.max_packet_size,
            },
            SinkConfig::Nats(_) => Kind::Nats,
            SinkConfig::Stderr => Kind::Stderr,
        }
    }

    /// Why this sink cannot take an event of `payload_len` bytes for
    /// `topic`, or `None` when it can.
    pub fn refuse(&self, topic: &str, payload_len: usize) -> Option<Refusal> {
        match *self {
            Kind::Mqtt { max_packet } => mqtt::refuse(topic, payload_len, max_packet),
            Kind::Nats => nats::refuse(topic),
            Kind::Stderr => stderr::refuse(topic),
        }
    }
}

/// Whether `topic` holds a control character (U+0000–U+001F,
/// U+007F–U+009F), which no sink publishes: MQTT brokers drop the
/// connection over one, NATS splits subjects on some of them, and a
/// terminal obeys them.
pub fn has_control(topic: &str) -> bool {
    topic.chars().any(char::is_control)
}

/// When a sink must stop: `stop` starts the drain; it ends when everything
/// is delivered or `drain_timeout` has passed.
#[derive(Clone)]
pub struct Drain {
    pub stop: CancellationToken,
    pub timeout: Duration,
    /// systemd's watchdog (disabled outside a unit with `WatchdogSec=`).
    pub watchdog: Watchdog,
}

impl Drain {
    /// Pings the watchdog if a ping is due: once per turn of a sink loop.
    pub fn beat(&self) {
        self.watchdog.beat();
    }

    /// Returns when the next watchdog ping is due (never without a
    /// watchdog): a branch of every wait in a sink loop.
    pub async fn watchdog_due(&self) {
        match self.watchdog.next_due() {
            Some(due) => tokio::time::sleep_until(due.into()).await,
            None => std::future::pending().await,
        }
    }

    /// The drain deadline once `stop` fired (set on first call after it).
    pub fn deadline(&self, deadline: &mut Option<Instant>) -> Option<Instant> {
        if deadline.is_none() && self.stop.is_cancelled() {
            *deadline = Some(Instant::now() + self.timeout);
        }
        *deadline
    }
}

/// Sleeps until `deadline`, or forever without one.
pub async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
