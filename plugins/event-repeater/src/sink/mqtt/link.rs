//! The state of the connection to one broker, and what the log says about
//! it: a lost connection once (not once per reconnect), and a broker that
//! drops the connection on a full window of publishes before it
//! acknowledged a window's worth (how mosquitto refuses more than its
//! quota) makes the window smaller and the backoff longer. A reconnect
//! storm cannot happen: the backoff is reset only once a connection has
//! acknowledged a full window (or everything there was to send).

use std::sync::atomic::Ordering;
use std::time::Instant;

use app_plugin::log::{debug, info, warn};
use rumqttc::{ConnectionError, QoS};

use crate::backoff::Backoff;
use crate::metrics::{inc, set_problem, Metrics};
use crate::sink::mqtt::book::Book;

pub struct Link {
    pub connected: bool,
    pub ever_connected: bool,
    /// Since when the broker has been away (set once per outage, cleared
    /// once it acknowledges again, or connects with nothing to prove).
    pub down_since: Option<Instant>,
    pub backoff: Backoff,
    /// When the broker last sent anything (for the hang check).
    pub last_heard: Instant,
    /// Publishes acknowledged on this connection (QoS 1 and 2).
    pub acks: usize,
    /// This connection acknowledged a full window, or all there was.
    pub progressed: bool,
    /// A connection was lost on a refused burst; cleared once one
    /// acknowledges a full window.
    pub refused: bool,
    /// When the last refused burst was: one soon after a window that was
    /// acknowledged once belongs to the same episode (a broker's quota can
    /// let one window through and refuse the next), said quietly.
    pub last_refused: Option<Instant>,
}

/// How long after a refused burst another is the same episode.
const REFUSAL_EPISODE: std::time::Duration = std::time::Duration::from_secs(60);

impl Link {
    pub fn new() -> Link {
        Link {
            connected: false,
            ever_connected: false,
            down_since: None,
            backoff: Backoff::network(),
            last_heard: Instant::now(),
            acks: 0,
            progressed: false,
            refused: false,
            last_refused: None,
        }
    }

    /// CONNACK: `again` publishes go out again. With `failover`, every
    /// connection is logged (it says which broker is in use).
    pub fn connack(
        &mut self,
        book: &Book,
        again: usize,
        session: bool,
        failover: bool,
        m: &Metrics,
        url: &str,
    ) {
        self.connected = true;
        m.sink_connected.store(true, Ordering::Relaxed);
        m.set_broker(url);
        let session = if session {
            "session resumed"
        } else {
            "new session"
        };
        // With publishes to send, the connection proves itself by an
        // acknowledgement (see `acked`); a broker that drops it again first
        // keeps the backoff growing and the log quiet.
        self.acks = 0;
        self.progressed = book.used == 0;
        if self.progressed {
            self.backoff.reset();
        }
        if self.refused {
            debug!("connected to the broker {url} ({session}; {again} publishes to send again within a window of {})", book.limit());
        } else if let Some(t) = self.down_since.take() {
            warn!(
                "connected to the broker {url} again after {:.1}s ({session}; {again} unacknowledged publishes sent again)",
                t.elapsed().as_secs_f64()
            );
        } else if !self.ever_connected || failover {
            info!("connected to the broker {url} ({again} unacknowledged publishes sent again)");
        }
        self.ever_connected = true;
    }

    /// An acknowledgement, until this connection has proved itself.
    pub fn acked(&mut self, book: &Book, url: &str) {
        self.acks += 1;
        if self.acks < book.limit() && book.used > 0 {
            return;
        }
        self.progressed = true;
        self.backoff.reset();
        if self.refused {
            self.refused = false;
            let after = self.down_since.take().map(|t| t.elapsed().as_secs_f64());
            warn!(
                "the broker {url} acknowledges publishes again after {:.1}s, with at most {} unacknowledged at once",
                after.unwrap_or_default(),
                book.limit()
            );
        }
    }

    /// The connection was lost (`e`), or could not be made.
    pub fn lost(&mut self, e: &ConnectionError, book: &mut Book, m: &Metrics, url: &str) {
        set_problem(&m.sink_last_error, &format!("{url}: {e}"));
        if self.connected {
            self.connected = false;
            m.sink_connected.store(false, Ordering::Relaxed);
            inc(&m.sink_disconnects);
            let wire = book.on_wire();
            // The window was full on this connection, and it was lost with
            // less than a window acknowledged.
            let burst = wire > 0 && self.acks < book.limit() && self.acks + wire >= book.limit();
            if !self.progressed && book.qos != QoS::AtMostOnce && burst {
                self.refused_burst(e, book, url);
                return;
            }
            if self.down_since.is_none() {
                warn!("lost the connection to the broker {url}: {e}; reconnecting with backoff, events are kept in the buffer");
                self.down_since = Some(Instant::now());
            }
        } else if self.down_since.is_none() {
            let hint = match e {
                ConnectionError::ConnectionRefused(_) => {
                    "; check --username, the password and --client-id"
                }
                _ => "; is the broker running? (see --sink)",
            };
            warn!("cannot connect to the broker {url}: {e}{hint}; retrying with backoff, events are kept in the buffer");
            self.down_since = Some(Instant::now());
        }
    }

    /// The broker dropped a connection on a full window before it
    /// acknowledged a window's worth: the way mosquitto refuses more
    /// unfinished publishes than its quota. The window becomes what it did
    /// acknowledge, or half if that is more, down to 1; nothing is lost or
    /// reordered (the book sends the oldest first).
    fn refused_burst(&mut self, e: &ConnectionError, book: &mut Book, url: &str) {
        let sent = book.on_wire() + self.acks;
        let was = book.limit();
        let now = book.lower(self.acks);
        let recent = self
            .last_refused
            .replace(Instant::now())
            .is_some_and(|t| t.elapsed() < REFUSAL_EPISODE);
        if !self.refused && recent {
            // Warned already: the window that seemed to work did not.
            self.refused = true;
            self.down_since.get_or_insert_with(Instant::now);
            info!("the broker {url} closed the connection again on a full window after taking one; window {was} -> {now}");
        } else if !self.refused {
            warn!(
                "the broker {url} closed the connection ({e}) with {sent} publishes sent and {} acknowledged: it may take fewer unacknowledged publishes than the window of {was} (mosquitto: max_inflight_messages); sending at most {now} at once from now on and backing off",
                self.acks
            );
            self.refused = true;
            self.down_since.get_or_insert_with(Instant::now);
        } else if now < was {
            info!("the broker {url} closed the connection again before acknowledging a full window; window {was} -> {now}");
        } else {
            debug!("the broker {url} closed the connection again before acknowledging a full window ({e})");
        }
    }
}
