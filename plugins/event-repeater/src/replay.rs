//! Replaying dead letters (`POST /dead-letters/replay`): each letter the
//! filter matches goes through the current routes and the sink's rules
//! again, as if it had just arrived, into the buffer; the replay waits
//! (within its timeout) for the sink to settle them, and removes from the
//! file each one delivered.
//!
//! A replayed event keeps its dedup key, so a replay that is cut short (a
//! crash, a timeout) and run again is stored once by JetStream (within its
//! duplicate window). It never moves the checkpoint (it is older than what
//! the source sends now), and it is never dropped by `--overflow`: it
//! waits for room until the timeout.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use app_event_repeater_api::dead_letter::Replayed;
use bytes::Bytes;
use tokio::time::Instant;

use crate::buffer::Buffer;
use crate::dead_letter::{DeadLetters, Filter, Letter};
use crate::event::EventData;
use crate::event_key::EventKey;
use crate::metrics::Metrics;
use crate::relay::{Relay, Routed};

/// Why a replay did not run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("a replay is already running; wait for it to end")]
    Busy,
    #[error(transparent)]
    Letters(#[from] crate::dead_letter::Error),
}

/// What the API replays with: a router of its own over the same table,
/// buffer and rules as the source's.
pub struct Replayer {
    pub relay: Relay,
    pub buffer: Arc<Buffer>,
    pub letters: Arc<DeadLetters>,
    pub metrics: Arc<Metrics>,
    pub busy: tokio::sync::Mutex<()>,
}

/// A letter ready for the buffer.
struct Ready {
    topic: Arc<str>,
    sink_topic: Arc<str>,
    payload: Bytes,
    key: Option<EventKey>,
}

impl Replayer {
    /// Replays the letters `filter` matches, waiting at most `timeout`.
    pub async fn replay(&self, filter: Filter, timeout: Duration) -> Result<Replayed, ReplayError> {
        let _one = self.busy.try_lock().map_err(|_| ReplayError::Busy)?;
        let deadline = Instant::now() + timeout;
        let listed = self.letters.list(filter).await?;
        let mut out = Replayed {
            matched: listed.letters.len() as u64,
            ..Replayed::default()
        };
        let mut sent = Vec::new();
        for letter in &listed.letters {
            let Some(r) = self.ready(letter) else {
                out.refused += 1;
                continue;
            };
            let pushed = (self.buffer)
                .push_replay(
                    r.topic,
                    r.sink_topic,
                    r.payload,
                    r.key,
                    letter.seq,
                    deadline,
                )
                .await;
            if !pushed {
                break;
            }
            sent.push(letter.seq);
        }
        let settled = self.buffer.book().wait(&sent, deadline).await;
        out.refused += settled.refused;
        out.pending = out.matched - out.refused - settled.delivered.len() as u64;
        let delivered: HashSet<u64> = settled.delivered.into_iter().collect();
        out.delivered = delivered.len() as u64;
        if !delivered.is_empty() {
            self.letters.remove(delivered).await?;
        }
        (self.metrics.dead_letters_replayed).fetch_add(out.delivered, Ordering::Relaxed);
        Ok(out)
    }

    /// Where `letter` goes now: `None` when it is refused again (or no
    /// route takes it).
    fn ready(&self, letter: &Letter) -> Option<Ready> {
        let data = EventData::from(letter.data.clone());
        let decoded = self.relay.decoder().decode(&data, letter.event.as_deref());
        // The topic it had; the payload as the decoder makes it (an event
        // refused before the buffer kept its data as received).
        let (topic, payload) = match (&letter.source_topic, decoded) {
            (Some(topic), Ok(e)) => (topic.clone(), e.json),
            (Some(topic), Err(_)) => (topic.clone(), data.clone()),
            (None, Ok(e)) => (e.topic.into_owned(), e.json),
            (None, Err(_)) => return None,
        };
        let Routed::To { topic, sink_topic } = self.relay.route(&topic, payload.as_str()) else {
            return None;
        };
        let key = (letter.id.as_deref()).map(|id| EventKey::restored(id, letter.key.as_deref()));
        Some(Ready {
            topic,
            sink_topic,
            payload: payload.into_bytes(),
            key,
        })
    }
}
