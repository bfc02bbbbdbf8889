//! Dead letters (`--dead-letter FILE`): every event accepted and then not
//! delivered for a reason of its own ([`Reason`]) is kept as one JSON line
//! ([`Letter`]), to be listed, replayed ([`crate::replay`]) and purged over
//! the API.
//!
//! Keeping one never blocks the relay: the letter goes to the writer
//! thread (`writer`) through a bounded queue, and when the queue is full
//! or the disk refuses the line, the letter is counted in
//! `dead_letters_lost_total` and warned about (every 5 s), and delivery
//! goes on. The files are bounded by `--dead-letter-max` (`file`).
//!
//! - `book`: what became of the letters a replay sent
//! - `file`: the file and its `.1`: append, rotate, read, rewrite
//! - `writer`: the thread that owns them

mod book;
mod file;
mod writer;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

pub use app_event_repeater_api::dead_letter::Letter;
use app_plugin::log::{RateLimited, WARN};
pub use book::{Book, Settled};
use tokio::sync::oneshot;

use crate::event_key::EventKey;
use crate::metrics::{inc, Metrics};
pub use crate::reason::Reason;
use writer::{Command, Writer};

/// Letters waiting for the writer, at most (then they are lost, counted).
const QUEUE: usize = 4096;
/// Bytes of letters waiting for the writer, at most.
const QUEUE_BYTES: usize = 16 << 20;

/// An event not delivered, as the refusing code sees it (borrowed: a
/// letter is only built, and allocated, when one is kept).
#[derive(Debug, Clone, Copy)]
pub struct Refused<'a> {
    pub reason: Reason,
    /// What was wrong, in words.
    pub why: &'a str,
    /// The route's source topic, when routed.
    pub route: Option<&'a str>,
    pub source_topic: Option<&'a str>,
    pub key: Option<&'a EventKey>,
    /// The SSE `event:` name.
    pub event: Option<&'a str>,
    pub sink_topic: Option<&'a str>,
    /// The data (UTF-8: the SSE parser checked it).
    pub data: &'a [u8],
}

impl Refused<'_> {
    fn letter(&self) -> Letter {
        let id = self.key.map(|k| k.last_event_id().to_string());
        let key = self
            .key
            .map(|k| k.as_str())
            .filter(|k| Some(*k) != id.as_deref())
            .map(str::to_string);
        Letter {
            seq: 0,
            time: String::new(),
            reason: self.reason.label().to_string(),
            // A broker's error can quote a URL: stored through the one
            // redaction, like every other line the repeater writes.
            why: app_plugin::text::shorten(&app_plugin::redact::words(self.why), 1024).into_owned(),
            route: self.route.map(str::to_string),
            source_topic: self.source_topic.map(str::to_string),
            id,
            key,
            event: self.event.map(str::to_string),
            sink_topic: self.sink_topic.map(str::to_string),
            data: String::from_utf8_lossy(self.data).into_owned(),
        }
    }
}

/// Which letters (every part optional; all must match).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub reason: Option<String>,
    /// A source topic, or a prefix ending in `/`, or `.` for every topic.
    pub topic: Option<String>,
    /// Written at or after, in microseconds since the epoch.
    pub since: Option<u64>,
    /// Written before, in microseconds since the epoch.
    pub until: Option<u64>,
}

impl Filter {
    pub fn matches(&self, l: &Letter) -> bool {
        let topic = l.source_topic.as_deref().unwrap_or("");
        // `Option::is_none_or` is newer than the MSRV (1.80).
        self.reason.as_ref().map_or(true, |r| *r == l.reason)
            && self.topic.as_ref().map_or(true, |t| {
                t == "." || t == topic || (t.ends_with('/') && topic.starts_with(t.as_str()))
            })
            && self.since.map_or(true, |s| l.seq >= s)
            && self.until.map_or(true, |u| l.seq < u)
    }
}

/// The answer of [`DeadLetters::list`].
#[derive(Debug)]
pub struct Listed {
    /// The letters that match, oldest first.
    pub letters: Vec<Letter>,
    /// Every letter in the files.
    pub total: u64,
    /// Lines that are not letters.
    pub unreadable: u64,
}

/// The handle every part that refuses events keeps: cheap to share.
pub struct DeadLetters {
    tx: SyncSender<Command>,
    pending: Arc<AtomicUsize>,
    metrics: Arc<Metrics>,
    lost: RateLimited,
}

/// What the API's dead-letter requests can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the dead-letter writer has stopped")]
    Stopped,
    #[error("the dead-letter file: {0}")]
    Io(#[from] std::io::Error),
}

impl DeadLetters {
    /// Opens (or creates) the file at `path`, bounded by `max` bytes with
    /// its `.1`, and starts its writer thread.
    pub fn open(path: &Path, max: u64, metrics: Arc<Metrics>) -> std::io::Result<DeadLetters> {
        let files = file::Files::open(path, max)?;
        let (tx, rx) = sync_channel(QUEUE);
        let pending = Arc::new(AtomicUsize::new(0));
        let writer = Writer {
            files,
            metrics: metrics.clone(),
            pending: pending.clone(),
        };
        std::thread::Builder::new()
            .name("dead-letters".into())
            .spawn(move || writer.run(rx))?;
        Ok(DeadLetters {
            tx,
            pending,
            metrics,
            lost: RateLimited::new(Duration::from_secs(5)),
        })
    }

    /// Keeps `r` as a dead letter, without waiting: when the writer is
    /// behind, it is counted as lost instead.
    pub fn keep(&self, r: &Refused<'_>) {
        let cost = r.data.len() + 256;
        if self.pending.fetch_add(cost, Ordering::Relaxed) + cost > QUEUE_BYTES {
            self.pending.fetch_sub(cost, Ordering::Relaxed);
            return self.lose("the writer is behind");
        }
        match self
            .tx
            .try_send(Command::Append(Box::new(r.letter()), cost))
        {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.pending.fetch_sub(cost, Ordering::Relaxed);
                self.lose("the writer is behind");
            }
            Err(TrySendError::Disconnected(_)) => {
                self.pending.fetch_sub(cost, Ordering::Relaxed);
                self.lose("the writer has stopped");
            }
        }
    }

    fn lose(&self, why: &str) {
        inc(&self.metrics.dead_letters_lost);
        self.lost.log(WARN, || {
            format!("could not keep a dead letter: {why}; it is counted in dead_letters_lost_total")
        });
    }

    async fn ask<T>(&self, cmd: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, Error> {
        let (reply, answer) = oneshot::channel();
        let tx = self.tx.clone();
        let cmd = cmd(reply);
        // A full queue waits for room, off the async workers.
        tokio::task::spawn_blocking(move || tx.send(cmd))
            .await
            .map_err(|_| Error::Stopped)?
            .map_err(|_| Error::Stopped)?;
        answer.await.map_err(|_| Error::Stopped)
    }

    /// The letters `filter` matches, oldest first, with the count of
    /// every letter and of the lines that could not be read.
    pub async fn list(&self, filter: Filter) -> Result<Listed, Error> {
        Ok(self.ask(|r| Command::List(filter, r)).await??)
    }

    /// Removes the letters of `seqs`; returns how many were removed.
    pub async fn remove(&self, seqs: HashSet<u64>) -> Result<u64, Error> {
        Ok(self.ask(|r| Command::Remove(seqs, r)).await??)
    }

    /// Waits until the letters kept so far are written (at shutdown).
    pub async fn flush(&self) -> Result<(), Error> {
        self.ask(Command::Flush).await
    }

    /// Removes the letters `filter` matches: (removed, left).
    pub async fn purge(&self, filter: Filter) -> Result<(u64, u64), Error> {
        Ok(self.ask(|r| Command::Purge(filter, r)).await??)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_letter_keeps_the_data_exactly_and_no_secret_of_the_why() {
        let data = "{\"a\":\"x\\u001b\"}\nline two";
        let r = Refused {
            reason: Reason::SinkError,
            why: "publish to mqtt://user:hunter2@h:1883/?token=t0k failed",
            route: Some("a/"),
            source_topic: Some("a/b"),
            key: None,
            event: None,
            sink_topic: Some("x/b"),
            data: data.as_bytes(),
        };
        let l = r.letter();
        assert_eq!(l.data, data);
        assert_eq!(l.reason, "sink_error");
        assert!(
            !l.why.contains("hunter2") && !l.why.contains("t0k"),
            "{}",
            l.why
        );
        // The positive control: the rest of the words stay.
        assert!(
            l.why.contains("publish to") && l.why.contains("failed"),
            "{}",
            l.why
        );
    }
}
