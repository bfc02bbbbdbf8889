//! What became of the letters a replay put into the buffer: the buffer
//! settles each one (delivered, or refused again) and the replay waits for
//! them, bounded by its timeout.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The letters in flight, by `seq`: `None` until settled.
#[derive(Default)]
pub struct Book {
    letters: Mutex<HashMap<u64, Option<bool>>>,
    changed: Notify,
}

/// What a replay's letters came to by its deadline.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    pub delivered: Vec<u64>,
    pub refused: u64,
    pub pending: u64,
}

impl Book {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Option<bool>>> {
        self.letters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A letter is about to go into the buffer.
    pub fn expect(&self, seq: u64) {
        self.lock().insert(seq, None);
    }

    /// The buffer is done with letter `seq`.
    pub fn settle(&self, seq: u64, delivered: bool) {
        if let Some(slot) = self.lock().get_mut(&seq) {
            *slot = Some(delivered);
        }
        self.changed.notify_waiters();
    }

    /// Waits until every letter of `seqs` is settled or `deadline`, and
    /// forgets them.
    pub async fn wait(&self, seqs: &[u64], deadline: Instant) -> Settled {
        loop {
            let changed = self.changed.notified();
            let open = {
                let letters = self.lock();
                seqs.iter()
                    .any(|s| letters.get(s).is_some_and(Option::is_none))
            };
            if !open || tokio::time::timeout_at(deadline, changed).await.is_err() {
                break;
            }
        }
        let mut letters = self.lock();
        let mut out = Settled::default();
        for seq in seqs {
            match letters.remove(seq) {
                Some(Some(true)) => out.delivered.push(*seq),
                Some(Some(false)) => out.refused += 1,
                Some(None) => out.pending += 1,
                None => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_replay_learns_what_was_delivered_refused_and_still_pending() {
        let book = std::sync::Arc::new(Book::default());
        for s in [1, 2, 3] {
            book.expect(s);
        }
        let b = book.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            b.settle(1, true);
            b.settle(2, false);
        });
        let deadline = Instant::now() + Duration::from_millis(300);
        let settled = book.wait(&[1, 2, 3], deadline).await;
        assert_eq!(
            settled,
            Settled {
                delivered: vec![1],
                refused: 1,
                pending: 1
            }
        );
        assert!(
            Instant::now() >= deadline,
            "returned before the deadline with 3 open"
        );
    }
}
