//! How long to wait before the next subscription: the source's own word
//! first (a `retry:` field for a lost stream, `Retry-After` on a 429 or
//! 503), bounded to [`MIN_DELAY`]..[`MAX_DELAY`] with jitter so that many
//! repeaters do not come back in step; otherwise capped exponential backoff.

use std::time::Duration;

use crate::backoff::Backoff;

/// The shortest wait a source can ask for.
pub const MIN_DELAY: Duration = Duration::from_millis(100);
/// The longest wait a source can ask for.
pub const MAX_DELAY: Duration = Duration::from_secs(300);

#[derive(Debug)]
pub struct Pace {
    backoff: Backoff,
    /// The last `retry:` the source sent.
    retry: Option<Duration>,
}

impl Default for Pace {
    fn default() -> Pace {
        Pace {
            backoff: Backoff::network(),
            retry: None,
        }
    }
}

impl Pace {
    /// The source sent `retry: ms`.
    pub fn set_retry(&mut self, ms: u64) {
        self.retry = Some(Duration::from_millis(ms));
    }

    /// A subscription was answered.
    pub fn connected(&mut self) {
        self.backoff.reset();
    }

    /// The wait after a stream that was open ended or stalled.
    pub fn after_lost(&mut self) -> Duration {
        match self.retry {
            Some(asked) => asked_for(asked),
            None => self.backoff.next_delay(),
        }
    }

    /// The wait after a failed subscription; `retry_after` when the
    /// source said (429, 503).
    pub fn after_failed(&mut self, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(asked) => {
                // Grown too, so that a source that keeps refusing is not
                // asked more often once its Retry-After stops.
                let _ = self.backoff.next_delay();
                asked_for(asked)
            }
            None => self.backoff.next_delay(),
        }
    }
}

/// `asked`, bounded, plus up to a tenth (at most 1 s) of jitter: never
/// earlier than asked.
fn asked_for(asked: Duration) -> Duration {
    let d = asked.clamp(MIN_DELAY, MAX_DELAY);
    let spread = (d / 10).min(Duration::from_secs(1)).as_millis() as u64;
    d + Duration::from_millis(fastrand::u64(0..=spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_is_obeyed_within_bounds() {
        let mut p = Pace::default();
        assert!(p.after_lost() <= Duration::from_millis(100));
        p.set_retry(3000);
        let d = p.after_lost();
        assert!(
            d >= Duration::from_secs(3) && d <= Duration::from_millis(3300),
            "{d:?}"
        );
        p.set_retry(1);
        assert!(p.after_lost() >= MIN_DELAY);
        p.set_retry(u64::MAX / 2);
        assert!(p.after_lost() <= MAX_DELAY + Duration::from_secs(1));
        let d = p.after_failed(Some(Duration::from_secs(2)));
        assert!(
            d >= Duration::from_secs(2) && d <= Duration::from_millis(2200),
            "{d:?}"
        );
        let d = p.after_failed(Some(Duration::from_secs(86_400)));
        assert!(d <= MAX_DELAY + Duration::from_secs(1), "{d:?}");
    }
}
