//! A sink that holds events and acknowledges none is degraded, whatever
//! its connection says: JetStream without quorum, a stream it may not
//! create, a broker that takes the connection and never answers, a quota
//! storm. Every sink is watched the same way, from the outside: events
//! held (waiting or in flight) and no acknowledgement (nor a refusal that
//! let one go) for [`AFTER`] make `/healthz` `degraded` with the reason in
//! `sink.problem`, `sink_stalled` 1, `STATUS=` say so and the log warn
//! once; the first acknowledgement ends it (logged once).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app_plugin::daemon::Shutdown;
use app_plugin::log::warn;

use crate::buffer::Buffer;
use crate::metrics::{inc, problem, set_problem, Metrics};

/// How long events may wait with nothing acknowledged.
pub const AFTER: Duration = Duration::from_secs(10);

/// How often the watch looks.
const EVERY: Duration = Duration::from_millis(500);

/// What counts as the sink moving: acknowledged or refused events.
fn moved(m: &Metrics) -> u64 {
    let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    get(&m.acked) + get(&m.failed_sink) + get(&m.failed_too_large) + get(&m.failed_invalid_topic)
}

/// Why the sink is stalled, in words.
pub fn reason(held: usize, secs: u64, connected: bool, last_error: Option<String>) -> String {
    let link = if connected {
        "connected"
    } else {
        "not connected"
    };
    let mut text =
        format!("{held} events wait and the sink has acknowledged none for {secs}s ({link})");
    if let Some(e) = last_error {
        text.push_str("; last error: ");
        text.push_str(&e);
    }
    text
}

/// Watches until `stop`.
pub async fn watch(metrics: Arc<Metrics>, buffer: Arc<Buffer>, stop: Shutdown) {
    let mut last = moved(&metrics);
    let mut since = Instant::now();
    let mut stalled = false;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = stop.recv() => return,
        }
        let now = moved(&metrics);
        let stats = buffer.stats();
        let held = stats.queued + stats.inflight;
        if now != last || held == 0 {
            last = now;
            // An error before this progress is not why a later stall is.
            set_problem(&metrics.sink_last_error, "");
            if stalled {
                stalled = false;
                set_problem(&metrics.sink_stalled, "");
                warn!(
                    "the sink acknowledges events again after {:.1}s",
                    since.elapsed().as_secs_f64()
                );
            }
            since = Instant::now();
            continue;
        }
        let waited = since.elapsed();
        if waited < AFTER {
            continue;
        }
        let connected = metrics.sink_connected.load(Ordering::Relaxed);
        let last_error =
            problem(&metrics.sink_problem).or_else(|| problem(&metrics.sink_last_error));
        let text = reason(held, waited.as_secs(), connected, last_error);
        if !stalled {
            stalled = true;
            inc(&metrics.sink_stalls);
            warn!("{text}; /healthz says degraded until it acknowledges again");
        }
        set_problem(&metrics.sink_stalled, &text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_says_what_waits_how_long_and_the_last_error() {
        assert_eq!(
            reason(5, 12, true, None),
            "5 events wait and the sink has acknowledged none for 12s (connected)"
        );
        assert_eq!(
            reason(1, 10, false, Some("cannot create the stream EVENTS: x".into())),
            "1 events wait and the sink has acknowledged none for 10s (not connected); last error: cannot create the stream EVENTS: x"
        );
    }
}
