//! When a sink loop stops, and the watchdog beat every turn of it gives.
//!
//! The sink loop is the relay loop that systemd's watchdog watches: every
//! turn calls [`Drain::beat`], and an idle loop wakes at
//! [`Drain::watchdog_due`], so the pings stop when the loop is stuck (a
//! write that never returns, a lock never released), not merely when the
//! process is gone. A broker that is down does not stop them: the loop
//! keeps turning through its backoff.

use std::time::Duration;

use app_plugin::daemon::Shutdown;
use app_plugin::notify::Watchdog;
use tokio::time::Instant;

/// When a sink must stop: `stop` starts the drain; it ends when everything
/// is delivered or `drain_timeout` has passed.
#[derive(Clone)]
pub struct Drain {
    pub stop: Shutdown,
    pub timeout: Duration,
    /// systemd's watchdog (disabled outside a unit with `WatchdogSec=`).
    pub watchdog: Watchdog,
}

impl Drain {
    /// Pings the watchdog if a ping is due: once per turn of a sink loop.
    pub fn beat(&self) {
        self.watchdog.beat();
    }

    /// Returns when the next watchdog ping is due (never without a
    /// watchdog): a branch of every wait in a sink loop.
    pub async fn watchdog_due(&self) {
        match self.watchdog.next_due() {
            Some(due) => tokio::time::sleep_until(due.into()).await,
            None => std::future::pending().await,
        }
    }

    /// The drain deadline once `stop` fired (set on first call after it).
    pub fn deadline(&self, deadline: &mut Option<Instant>) -> Option<Instant> {
        if deadline.is_none() && self.stop.is_shutdown() {
            *deadline = Some(Instant::now() + self.timeout);
        }
        *deadline
    }
}

/// Sleeps until `deadline`, or forever without one.
pub async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
