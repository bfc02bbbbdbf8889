//! Capped exponential backoff with jitter, for reconnecting to the source and
//! to the broker: 100 ms, 200 ms, 400 ms, … up to 5 s, each delay drawn
//! uniformly from its upper half so that many repeaters do not retry in step.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    current: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            current: initial,
        }
    }

    /// The default for network peers: 100 ms doubling up to 5 s.
    pub fn network() -> Backoff {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// The next delay to wait, with jitter; grows the base for the next call.
    pub fn next_delay(&mut self) -> Duration {
        let base = self.current;
        self.current = (self.current * 2).min(self.max);
        let half = base / 2;
        let jitter_ms = fastrand::u64(0..=half.as_millis() as u64);
        half + Duration::from_millis(jitter_ms)
    }

    /// Back to the initial delay, after a connection succeeded.
    pub fn reset(&mut self) {
        self.current = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_the_cap_and_stays_within_bounds() {
        let mut b = Backoff::network();
        let mut upper = Duration::from_millis(100);
        for _ in 0..20 {
            let d = b.next_delay();
            assert!(d <= upper, "{d:?} > {upper:?}");
            assert!(d >= upper / 2, "{d:?} < half of {upper:?}");
            upper = (upper * 2).min(Duration::from_secs(5));
        }
        assert!(b.next_delay() >= Duration::from_millis(2500));
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(100));
    }
}
