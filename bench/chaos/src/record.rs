//! What a chaos run saw while the faults hit: filled in by the nemesis and
//! the route changes, read by the checker. A module of its own so that both
//! writers depend on it and not on each other.

/// What happened during the faults.
#[derive(Debug, Default)]
pub struct Record {
    /// Faults applied (skipped ones not counted).
    pub faults: u64,
    /// Applied faults by kind.
    pub applied: Vec<(String, u64)>,
    /// Skipped faults by reason.
    pub skipped: Vec<(String, u64)>,
    pub repeater_kills: u64,
    /// Faults after which a repeater may send unacknowledged publishes
    /// again (broker down or stopped, link cut or lossy, repeater stopped).
    pub reconnects: u64,
    /// Broker restarts and pauses: the checker's own window may come twice.
    pub broker_faults: u64,
    /// Events acknowledged while the disk was full before a repeater kill
    /// (the checkpoint could not move meanwhile).
    pub stale_checkpoint_events: u64,
    /// Highest acknowledgements per second of one repeater over a sample.
    pub peak_ack_rate: f64,
    pub peak_rss_kib: u64,
    pub route_changes: u64,
    /// Checks that failed during the run (a route change not applied, a
    /// process that did not come back).
    pub failures: Vec<String>,
}
