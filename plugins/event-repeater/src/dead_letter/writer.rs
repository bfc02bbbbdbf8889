//! The thread that owns the dead-letter files: every append, read and
//! rewrite goes through it, one at a time, so the relay never waits on
//! the disk and two rewrites never race an append.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use app_event_repeater_api::dead_letter::Letter;
use app_plugin::log::{RateLimited, WARN};
use tokio::sync::oneshot;

use super::file::Files;
use super::{Filter, Listed};
use crate::metrics::{inc, Metrics};

pub enum Command {
    Append(Box<Letter>, usize),
    List(Filter, oneshot::Sender<std::io::Result<Listed>>),
    /// Removes the letters of these `seq`s (replayed and delivered).
    Remove(HashSet<u64>, oneshot::Sender<std::io::Result<u64>>),
    /// Removes the letters the filter matches: (removed, left).
    Purge(Filter, oneshot::Sender<std::io::Result<(u64, u64)>>),
    /// Answers once every command before it is done.
    Flush(oneshot::Sender<()>),
}

pub struct Writer {
    pub files: Files,
    pub metrics: Arc<Metrics>,
    /// Bytes of letters sent and not yet written, shared with the handle.
    pub pending: Arc<std::sync::atomic::AtomicUsize>,
}

impl Writer {
    pub fn run(mut self, rx: Receiver<Command>) {
        let failed = RateLimited::new(Duration::from_secs(5));
        self.gauge();
        while let Ok(cmd) = rx.recv() {
            match cmd {
                Command::Append(letter, cost) => {
                    if let Err(e) = self.append(*letter) {
                        inc(&self.metrics.dead_letters_lost);
                        failed.log(WARN, || {
                            format!("could not keep a dead letter ({e}); it is counted in dead_letters_lost_total")
                        });
                    }
                    self.pending.fetch_sub(cost, Ordering::Relaxed);
                }
                Command::List(filter, reply) => {
                    let read = self.files.read().map(|r| Listed {
                        total: r.letters.len() as u64,
                        unreadable: r.unreadable,
                        letters: r
                            .letters
                            .into_iter()
                            .filter(|l| filter.matches(l))
                            .collect(),
                    });
                    let _ = reply.send(read);
                }
                Command::Remove(seqs, reply) => {
                    let _ = reply.send(self.keep(|l| !seqs.contains(&l.seq)).map(|(gone, _)| gone));
                }
                Command::Purge(filter, reply) => {
                    let _ = reply.send(self.keep(|l| !filter.matches(l)));
                }
                Command::Flush(reply) => {
                    let _ = reply.send(());
                }
            }
        }
    }

    fn append(&mut self, mut letter: Letter) -> std::io::Result<()> {
        let now = SystemTime::now();
        let micros = now
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        letter.seq = micros.max(self.files.last_seq + 1);
        letter.time = app_plugin::time::rfc3339_millis(now);
        let mut line = serde_json::to_vec(&letter).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let cut = self.files.append(&line)?;
        self.files.last_seq = letter.seq;
        if let Some(reason) = crate::reason::Reason::from_label(&letter.reason) {
            inc(&self.metrics.dead_letters[reason.index()]);
        }
        self.metrics
            .dead_letters_cut
            .fetch_add(cut, Ordering::Relaxed);
        self.gauge();
        Ok(())
    }

    /// Rewrites the files with the letters `keep` keeps: (removed, left).
    fn keep(&mut self, keep: impl Fn(&Letter) -> bool) -> std::io::Result<(u64, u64)> {
        let read = self.files.read()?;
        let before = read.letters.len() as u64;
        let kept: Vec<Letter> = read.letters.into_iter().filter(|l| keep(l)).collect();
        let left = kept.len() as u64;
        if left < before || read.unreadable > 0 {
            self.files.rewrite(&kept)?;
        }
        self.gauge();
        Ok((before - left, left))
    }

    fn gauge(&self) {
        (self.metrics.dead_letter_bytes).store(self.files.bytes(), Ordering::Relaxed);
    }
}
