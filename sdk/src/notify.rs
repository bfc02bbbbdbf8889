//! Telling systemd how a daemon is doing (`sd_notify`), through the
//! `sd-notify` crate: `READY=1` once it serves, `STATUS=…` lines saying what
//! it does, `STOPPING=1` when it begins to drain, and `WATCHDOG=1` pings.
//!
//! Everything here does nothing unless systemd asked for it: the messages
//! need `NOTIFY_SOCKET` (a unit with `Type=notify`), the pings also
//! `WATCHDOG_USEC` (a unit with `WatchdogSec=`). A message that cannot be
//! sent is reported once as a warning and never stops the daemon.
//!
//! The watchdog is only as good as the place that pings: [`Watchdog::beat`]
//! belongs in the loop whose progress matters (the repeater's sink loop,
//! event-time's timer), woken at [`Watchdog::next_due`] when idle, so that
//! a loop that is stuck stops the pings and systemd restarts the service.
//!
//! ```
//! use app_plugin::notify;
//!
//! // Not under systemd: these are no-ops.
//! notify::ready("serving on /run/app/plugins/demo.sock");
//! let watchdog = notify::Watchdog::from_env();
//! watchdog.beat();
//! notify::stopping("draining");
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sd_notify::NotifyState;

/// Sends `READY=1` with a `STATUS=` line: the daemon serves now.
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(&one_line(status))]);
}

/// Sends a `STATUS=` line (shown by `systemctl status`).
pub fn status(status: &str) {
    send(&[NotifyState::Status(&one_line(status))]);
}

/// Sends `STOPPING=1` with a `STATUS=` line: the daemon begins to stop.
pub fn stopping(status: &str) {
    send(&[
        NotifyState::Stopping,
        NotifyState::Status(&one_line(status)),
    ]);
}

/// A status is one line of the message: a newline would start another
/// assignment.
fn one_line(status: &str) -> String {
    status.replace(['\n', '\r'], " ")
}

fn send(states: &[NotifyState<'_>]) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if let Err(e) = sd_notify::notify(false, states) {
        if !WARNED.swap(true, Ordering::Relaxed) {
            crate::warn!("cannot notify systemd through NOTIFY_SOCKET: {e}");
        }
    }
}

/// `WATCHDOG=1` pings at half the period systemd set in `WATCHDOG_USEC`
/// (when `WATCHDOG_PID` is unset or names this process). Cheap to clone and
/// to call: [`beat`](Watchdog::beat) sends only when a ping is due.
///
/// ```
/// let off = app_plugin::notify::Watchdog::disabled();
/// assert_eq!(off.interval(), None);
/// assert_eq!(off.next_due(), None);
/// off.beat();
/// ```
#[derive(Clone, Debug, Default)]
pub struct Watchdog {
    inner: Option<Arc<Inner>>,
}

#[derive(Debug)]
struct Inner {
    half: Duration,
    start: Instant,
    /// Milliseconds since `start` of the last ping, plus one (0: never).
    last: AtomicU64,
}

impl Watchdog {
    /// The watchdog systemd asked for, or a disabled one.
    pub fn from_env() -> Watchdog {
        let mut usec = 0;
        if !sd_notify::watchdog_enabled(false, &mut usec) || usec == 0 {
            return Watchdog::disabled();
        }
        Watchdog::every(Duration::from_micros(usec) / 2)
    }

    /// A watchdog that never pings.
    pub fn disabled() -> Watchdog {
        Watchdog { inner: None }
    }

    fn every(half: Duration) -> Watchdog {
        Watchdog {
            inner: Some(Arc::new(Inner {
                half: half.max(Duration::from_millis(1)),
                start: Instant::now(),
                last: AtomicU64::new(0),
            })),
        }
    }

    /// How often it pings (half of `WATCHDOG_USEC`), when enabled.
    pub fn interval(&self) -> Option<Duration> {
        self.inner.as_ref().map(|i| i.half)
    }

    /// When the next ping is due (now, if none was sent yet).
    pub fn next_due(&self) -> Option<Instant> {
        let inner = self.inner.as_ref()?;
        Some(match inner.last.load(Ordering::Relaxed) {
            0 => Instant::now(),
            last => inner.start + Duration::from_millis(last - 1) + inner.half,
        })
    }

    /// Sends `WATCHDOG=1` if a ping is due.
    pub fn beat(&self) {
        let Some(inner) = &self.inner else { return };
        let last = inner.last.load(Ordering::Relaxed);
        let now = Instant::now();
        if last != 0 && inner.start + Duration::from_millis(last - 1) + inner.half > now {
            return;
        }
        let ms = u64::try_from(now.duration_since(inner.start).as_millis()).unwrap_or(u64::MAX - 1);
        inner.last.store(ms + 1, Ordering::Relaxed);
        send(&[NotifyState::Watchdog]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_is_due_at_once_then_after_half_the_period() {
        let w = Watchdog::every(Duration::from_secs(10));
        assert!(w.next_due().unwrap() <= Instant::now());
        w.beat();
        let due = w.next_due().unwrap();
        let wait = due.saturating_duration_since(Instant::now());
        assert!(
            wait > Duration::from_secs(9) && wait <= Duration::from_secs(10),
            "{wait:?}"
        );
        // A beat before then sends nothing and keeps the due time.
        w.beat();
        assert_eq!(w.next_due().unwrap(), due);
    }
}
