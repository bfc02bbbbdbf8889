//! A small leveled logger writing one line per message to stderr.
//!
//! The level is process-wide state (one atomic), set once at start from
//! `--log` or the `app` context: every task logs through the same stderr, so
//! passing a logger around would buy nothing.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static LEVEL: AtomicU8 = AtomicU8::new(2);

/// Levels, as `--log` numbers them.
pub const ERROR: u8 = 1;
pub const WARN: u8 = 2;
pub const INFO: u8 = 3;
pub const DEBUG: u8 = 4;
pub const TRACE: u8 = 5;

/// Sets the level: 0 silent, 1 errors, 2 warnings, 3 info, 4 debug, 5 trace.
pub fn set_level(level: u8) {
    LEVEL.store(level.min(TRACE), Ordering::Relaxed);
}

/// Whether messages of `level` are printed.
pub fn enabled(level: u8) -> bool {
    level != 0 && level <= LEVEL.load(Ordering::Relaxed)
}

/// Prints one log line if `level` is enabled.
pub fn emit(level: u8, args: std::fmt::Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let tag = match level {
        ERROR => "error: ",
        WARN => "warning: ",
        INFO => "",
        DEBUG => "debug: ",
        _ => "trace: ",
    };
    eprintln!("{}: {tag}{args}", crate::BIN_NAME);
}

#[macro_export]
macro_rules! error { ($($t:tt)*) => { $crate::log::emit($crate::log::ERROR, format_args!($($t)*)) } }
#[macro_export]
macro_rules! warn { ($($t:tt)*) => { $crate::log::emit($crate::log::WARN, format_args!($($t)*)) } }
#[macro_export]
macro_rules! info { ($($t:tt)*) => { $crate::log::emit($crate::log::INFO, format_args!($($t)*)) } }
#[macro_export]
macro_rules! debug { ($($t:tt)*) => { $crate::log::emit($crate::log::DEBUG, format_args!($($t)*)) } }
#[macro_export]
macro_rules! trace { ($($t:tt)*) => { $crate::log::emit($crate::log::TRACE, format_args!($($t)*)) } }

/// A warning that is printed at most once per interval; the occurrences in
/// between are counted and reported with the next line.
pub struct RateLimited {
    interval: Duration,
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimited {
    pub fn new(interval: Duration) -> RateLimited {
        RateLimited {
            interval,
            last: Mutex::new(None),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Logs `message` at `level` unless one was logged within the interval.
    pub fn log(&self, level: u8, message: impl FnOnce() -> String) {
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
            emit(
                level,
                format_args!(
                    "{} ({more} more like this since the last report)",
                    message()
                ),
            );
        } else {
            emit(level, format_args!("{}", message()));
        }
    }
}
