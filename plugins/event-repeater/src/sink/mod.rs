//! Sinks: the task that takes records from the buffer and delivers them.
//! Each returns, at the end, how many accepted events were not delivered.

pub mod mqtt;
pub mod nats;
pub mod stderr;
pub mod subject;

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// When a sink must stop: `stop` starts the drain; it ends when everything
/// is delivered or `drain_timeout` has passed.
#[derive(Clone)]
pub struct Drain {
    pub stop: CancellationToken,
    pub timeout: Duration,
}

impl Drain {
    /// The drain deadline once `stop` fired (set on first call after it).
    pub fn deadline(&self, deadline: &mut Option<Instant>) -> Option<Instant> {
        if deadline.is_none() && self.stop.is_cancelled() {
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
