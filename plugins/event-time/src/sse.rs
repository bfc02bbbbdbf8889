//! One subscriber's Server-Sent Events stream.
//!
//! The stream sends, in order: a `: subscribed` comment; the held events the
//! client missed (after its `Last-Event-ID`), read from the history one
//! chunk at a time as the connection takes them; then live events. Events
//! that arrive together are sent as one chunk (up to [`MAX_CHUNK`] bytes),
//! and a `: keep-alive` comment goes out after every idle keep-alive period.
//!
//! Memory per subscriber is bounded in bytes: the subscriber itself holds
//! at most one chunk (replay is never copied out of the history whole), the
//! live channel is one ring shared by all subscribers, and the connection
//! buffers at most [`crate::server::MAX_CONN_BUFFER`] more.
//!
//! Slow subscribers: the live channel never waits. A subscriber that falls
//! more than [`crate::hub::LIVE_CAPACITY`] events behind is re-subscribed at
//! the position it had reached, and catches up from the history; nothing is
//! lost while the history still holds what it missed. What the history no
//! longer holds is skipped, and an SSE comment
//! `: lagged: events A..B are no longer held and were skipped` says so. The
//! subscriber is never disconnected for being slow; one that stops reading
//! altogether costs a receiver slot and its socket buffers, nothing more.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::broadcast::Receiver;
use tokio::time::Instant;

use crate::event::Published;
use crate::hub::Hub;
use crate::topics::Filter;

/// The largest chunk written at once when many events are pending.
pub const MAX_CHUNK: usize = 32 * 1024;

/// The comment sent when the stream has been idle for a keep-alive period.
pub const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// A subscriber's position and its pending work.
struct Subscriber {
    hub: Arc<Hub>,
    filter: Filter,
    live: Receiver<Published>,
    /// Replay position: the held events after it, up to `upto`, are still to send.
    pos: u64,
    upto: u64,
    /// Whether a gap found while replaying is the first one (the
    /// `Last-Event-ID` was older than the history) or a lag.
    initial: bool,
    /// A comment to send before anything else.
    notice: Option<Bytes>,
    /// The highest sequence number this subscriber has seen (sent or not
    /// matching); live events at or below it are duplicates of the replay.
    seen: u64,
    keep_alive: Duration,
    last_write: Instant,
}

/// The SSE body for a subscriber to `filter`, replaying what it missed after
/// `last_event_id`.
pub fn stream(
    hub: Arc<Hub>,
    filter: Filter,
    last_event_id: Option<u64>,
    keep_alive: Duration,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let sub = hub.subscribe(last_event_id);
    let mut notice = BytesMut::from(&b": subscribed\n\n"[..]);
    match sub.foreign {
        Some(0) | None => {}
        Some(id) if id > sub.head => notice.extend_from_slice(
            format!(": event id {id} is ahead of this server's last event {}; replaying everything held\n\n", sub.head)
                .as_bytes(),
        ),
        Some(id) => notice.extend_from_slice(
            format!(": events after id {id} from an earlier run of this server are no longer held; replaying this run's events from id {}\n\n", sub.from + 1)
                .as_bytes(),
        ),
    }
    let state = Subscriber {
        hub,
        filter,
        live: sub.live,
        pos: sub.from,
        upto: sub.head,
        initial: true,
        notice: Some(notice.freeze()),
        seen: sub.head,
        keep_alive,
        last_write: Instant::now(),
    };
    futures_util::stream::unfold(state, |mut sub| async move {
        let chunk = sub.next_chunk().await?;
        sub.last_write = Instant::now();
        Some((Ok(chunk), sub))
    })
}

impl Subscriber {
    /// The next bytes to send, or `None` when the server is shutting down.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if let Some(notice) = self.notice.take() {
                return Some(notice);
            }
            if self.pos < self.upto {
                if let Some(chunk) = self.replay_chunk() {
                    return Some(chunk);
                }
                continue;
            }
            let idle = tokio::time::sleep_until(self.last_write + self.keep_alive);
            tokio::select! {
                received = self.live.recv() => match received {
                    Ok(event) => {
                        if let Some(chunk) = self.live_chunk(event) {
                            return Some(chunk);
                        }
                    }
                    Err(RecvError::Lagged(_)) => self.catch_up(),
                    Err(RecvError::Closed) => return None,
                },
                () = idle => return Some(Bytes::from_static(KEEP_ALIVE)),
            }
        }
    }

    /// The next chunk of replay (about [`MAX_CHUNK`] bytes), preceded by a
    /// comment if events were no longer held; `None` if nothing in the part
    /// looked at was for this subscriber.
    fn replay_chunk(&mut self) -> Option<Bytes> {
        let chunk = self.hub.read(self.filter, self.pos, self.upto, MAX_CHUNK);
        self.pos = chunk.pos;
        let mut out = BytesMut::new();
        if let Some((from, to)) = chunk.missed {
            if self.initial {
                out.extend_from_slice(
                    format!(": events {from}..{to} are no longer held; replaying from the oldest held event\n\n")
                        .as_bytes(),
                );
            } else {
                app_plugin::log!(
                    app_plugin::log::WARN,
                    "a subscriber fell behind; events {from}..{to} were no longer held and are skipped for it"
                );
                out.extend_from_slice(
                    format!(
                        ": lagged: events {from}..{to} are no longer held and were skipped\n\n"
                    )
                    .as_bytes(),
                );
            }
        }
        self.initial = false;
        if out.is_empty() {
            return (!chunk.frames.is_empty()).then(|| chunk.frames.freeze());
        }
        out.extend_from_slice(&chunk.frames);
        Some(out.freeze())
    }

    /// `first` and whatever else is already waiting, as one chunk; `None`
    /// when none of it is for this subscriber.
    fn live_chunk(&mut self, first: Published) -> Option<Bytes> {
        // The common case, one event, needs no copy.
        let mut single = self.accept(first);
        let mut buf: Option<BytesMut> = None;
        loop {
            let size = buf.as_ref().map_or(0, BytesMut::len);
            if size >= MAX_CHUNK {
                break;
            }
            match self.live.try_recv() {
                Ok(event) => {
                    if let Some(frame) = self.accept(event) {
                        let b = buf.get_or_insert_with(BytesMut::new);
                        if let Some(s) = single.take() {
                            b.extend_from_slice(&s);
                        }
                        b.extend_from_slice(&frame);
                    }
                }
                Err(TryRecvError::Lagged(_)) => {
                    self.catch_up();
                    break;
                }
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        match buf {
            Some(b) => Some(b.freeze()),
            None => single,
        }
    }

    /// The frame of a live event if this subscriber should get it.
    fn accept(&mut self, event: Published) -> Option<Bytes> {
        if event.seq <= self.seen {
            return None;
        }
        self.seen = event.seq;
        self.filter.accepts(event.topic).then_some(event.frame)
    }

    /// After falling behind the live channel: subscribe again from the last
    /// event seen and replay the held events after it.
    fn catch_up(&mut self) {
        let sub = self.hub.subscribe(Some(self.seen));
        self.live = sub.live;
        self.pos = sub.from;
        self.upto = sub.head;
        self.initial = false;
        self.seen = sub.head;
    }
}
