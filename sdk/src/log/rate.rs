//! [`RateLimited`]: a message written at most once per interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{write, Level};

/// A message written at most once per interval; the occurrences in between
/// are counted and reported with the next line, so a failing peer cannot
/// flood the log and nothing is hidden.
///
/// ```
/// use std::time::Duration;
/// use app_plugin::log::{RateLimited, WARN};
/// let limit = RateLimited::new(Duration::from_secs(10));
/// limit.log(WARN, || "broker unreachable".to_string()); // written
/// limit.log(WARN, || "broker unreachable".to_string()); // counted
/// assert_eq!(limit.suppressed(), 1);
/// ```
pub struct RateLimited {
    interval: Duration,
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimited {
    /// At most one line per `interval`.
    ///
    /// ```
    /// let _limit = app_plugin::log::RateLimited::new(std::time::Duration::from_secs(5));
    /// ```
    pub fn new(interval: Duration) -> RateLimited {
        RateLimited {
            interval,
            last: Mutex::new(None),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Logs `message` at `level` unless one was logged within the interval
    /// (then it is only counted).
    ///
    /// ```
    /// use app_plugin::log::{RateLimited, WARN};
    /// let limit = RateLimited::new(std::time::Duration::ZERO);
    /// limit.log(WARN, || "twice".into());
    /// limit.log(WARN, || "twice".into());
    /// assert_eq!(limit.suppressed(), 0);
    /// ```
    pub fn log(&self, level: Level, message: impl FnOnce() -> String) {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < self.interval) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *last = Some(now);
        drop(last);
        let more = self.suppressed.swap(0, Ordering::Relaxed);
        if more > 0 {
            write(
                level,
                format_args!(
                    "{} ({more} more like this since the last report)",
                    message()
                ),
            );
        } else {
            write(level, format_args!("{}", message()));
        }
    }

    /// How many messages were counted and not yet reported.
    ///
    /// ```
    /// let limit = app_plugin::log::RateLimited::new(std::time::Duration::from_secs(1));
    /// assert_eq!(limit.suppressed(), 0);
    /// ```
    pub fn suppressed(&self) -> u64 {
        self.suppressed.load(Ordering::Relaxed)
    }
}
