//! The checkpoint in memory: every event the router sees, in arrival
//! order, until it is done (acknowledged by the sink, dropped, refused or
//! not routed), and from that the id of the newest event such that it and
//! every event before it are done. The buffer keeps it under its own lock;
//! [`crate::checkpoint`] writes what it computes to disk.
//!
//! A leaf: plain memory, so the buffer does not depend on the checkpoint
//! file, nor through it on the configuration.

use std::collections::VecDeque;

use crate::event_key::EventKey;

/// Accepted events not yet done, in acceptance order, and the id of the last
/// event that arrived.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Acceptance sequence number of `pending[0]`.
    front: u64,
    /// For each accepted event from `front` on: the id in force before it
    /// arrived (the checkpoint while it is the oldest not done), and whether
    /// it is done.
    pending: VecDeque<(Option<EventKey>, bool)>,
    /// The id of the newest event that arrived.
    last: Option<EventKey>,
    /// Bumped whenever the checkpoint may have changed.
    version: u64,
}

impl Ledger {
    /// The checkpoint starts at `id` (the one loaded at start, if any).
    pub fn new(id: Option<EventKey>) -> Ledger {
        Ledger {
            last: id,
            ..Ledger::default()
        }
    }

    /// An event without a key came after an empty `id:` (or before any
    /// id): the position is "no id" from then on, as the source said.
    fn arrive(&mut self, id: Option<&EventKey>) {
        self.last = id.cloned();
        if self.pending.is_empty() {
            self.version += 1;
        }
    }

    /// An event that is done on arrival (unrouted, invalid, refused, or
    /// dropped because the buffer was full).
    pub fn skip(&mut self, id: Option<&EventKey>) {
        self.arrive(id);
    }

    /// An event accepted under acceptance number `seq` (consecutive).
    pub fn accept(&mut self, seq: u64, id: Option<&EventKey>) {
        if self.pending.is_empty() {
            self.front = seq;
        }
        debug_assert_eq!(self.front + self.pending.len() as u64, seq);
        self.pending.push_back((self.last.clone(), false));
        self.arrive(id);
    }

    /// A replayed dead letter accepted under `seq`: it holds the
    /// checkpoint where it is until done, and is no position of its own.
    pub fn accept_replay(&mut self, seq: u64) {
        if self.pending.is_empty() {
            self.front = seq;
        }
        debug_assert_eq!(self.front + self.pending.len() as u64, seq);
        self.pending.push_back((self.last.clone(), false));
    }

    /// Accepted event `seq` is done.
    pub fn done(&mut self, seq: u64) {
        let Some(i) = seq.checked_sub(self.front) else {
            return;
        };
        let Some(entry) = self.pending.get_mut(i as usize) else {
            return;
        };
        entry.1 = true;
        if i == 0 {
            while self.pending.front().is_some_and(|e| e.1) {
                self.pending.pop_front();
                self.front += 1;
            }
            self.version += 1;
        }
    }

    /// Accepted events from the oldest not done on: the events after the
    /// checkpoint.
    pub fn behind(&self) -> usize {
        self.pending.len()
    }

    /// The current checkpoint and its version.
    pub fn checkpoint(&self) -> (Option<EventKey>, u64) {
        let id = match self.pending.front() {
            Some((before, _)) => before.clone(),
            None => self.last.clone(),
        };
        (id, self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Arc;

    fn cp(l: &Ledger) -> Option<String> {
        l.checkpoint().0.map(|s| s.as_str().to_string())
    }

    fn key(id: &str) -> EventKey {
        EventKey::own(Arc::from(id))
    }

    #[test]
    fn the_checkpoint_waits_for_the_oldest_event_not_done() {
        let mut l = Ledger::new(Some(key("0")));
        assert_eq!(cp(&l).as_deref(), Some("0"));
        l.accept(1, Some(&key("1")));
        l.skip(Some(&key("2"))); // unrouted: done at once
        l.accept(2, Some(&key("3")));
        l.accept(3, Some(&key("4")));
        assert_eq!(cp(&l).as_deref(), Some("0"));
        // 3 acked before 1: nothing moves.
        l.done(2);
        assert_eq!(cp(&l).as_deref(), Some("0"));
        l.done(1);
        // 1, 2 (skipped) and 3 are done; 4 is not.
        assert_eq!(cp(&l).as_deref(), Some("3"));
        l.done(3);
        assert_eq!(cp(&l).as_deref(), Some("4"));
        l.skip(Some(&key("5")));
        assert_eq!(cp(&l).as_deref(), Some("5"));
        // Unknown or repeated numbers change nothing.
        l.done(3);
        l.done(99);
        assert_eq!(cp(&l).as_deref(), Some("5"));
        // An event without a key after an empty `id:`: the position is
        // "no id" (a restart sends no Last-Event-ID).
        l.skip(None);
        assert_eq!(cp(&l), None);
    }

    #[test]
    fn the_version_moves_only_when_the_checkpoint_may_have() {
        let mut l = Ledger::new(None);
        let v0 = l.checkpoint().1;
        l.accept(1, Some(&key("a")));
        let v1 = l.checkpoint().1;
        assert_eq!(v1, v0, "accepting does not move the checkpoint");
        l.skip(Some(&key("b")));
        assert_eq!(l.checkpoint().1, v1, "behind a pending event");
        l.done(1);
        assert!(l.checkpoint().1 > v1);
        assert_eq!(cp(&l).as_deref(), Some("b"));
    }
}
