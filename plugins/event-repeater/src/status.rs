//! What `systemctl status` shows for a repeater run by systemd: the
//! `STATUS=` line, refreshed every few seconds while it changes
//! ("relaying to mqtt://…: 1.2k events/s, 0 buffered"). Nothing is sent
//! outside a unit (see [`app_plugin::notify`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app_plugin::daemon::Shutdown;

use crate::buffer::Buffer;
use crate::metrics::Metrics;

/// How often the status line is recomputed.
pub const EVERY: Duration = Duration::from_secs(5);

/// One status line: what the relay does, how fast, what waits.
///
/// ```
/// use app_event_repeater::status::line;
/// assert_eq!(line("mqtt://h:1883", true, 1234.0, 0), "relaying to mqtt://h:1883: 1.2k events/s, 0 buffered");
/// assert_eq!(line("mqtt://h:1883", true, 5.0, 2), "relaying to mqtt://h:1883: 5 events/s, 2 buffered");
/// assert_eq!(line("nats://h:4222", false, 0.0, 120), "waiting for the sink nats://h:4222: 120 buffered");
/// ```
pub fn line(sink: &str, connected: bool, per_second: f64, buffered: usize) -> String {
    if !connected {
        return format!("waiting for the sink {sink}: {buffered} buffered");
    }
    let rate = if per_second >= 1000.0 {
        format!("{:.1}k", per_second / 1000.0)
    } else {
        format!("{per_second:.0}")
    };
    format!("relaying to {sink}: {rate} events/s, {buffered} buffered")
}

/// Sends the status line every [`EVERY`] while it changes, until `stop`.
pub async fn report(sink: String, metrics: Arc<Metrics>, buffer: Arc<Buffer>, stop: Shutdown) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    let mut last = String::new();
    let mut acked = metrics.acked.load(Ordering::Relaxed);
    let mut at = Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = stop.recv() => return,
        }
        let now_acked = metrics.acked.load(Ordering::Relaxed);
        let now = Instant::now();
        let seconds = now.duration_since(at).as_secs_f64().max(0.001);
        let per_second = now_acked.saturating_sub(acked) as f64 / seconds;
        (acked, at) = (now_acked, now);
        let stats = buffer.stats();
        let text = match crate::metrics::problem(&metrics.sink_stalled) {
            Some(why) => format!("degraded: {why}"),
            None => line(
                &sink,
                metrics.sink_connected.load(Ordering::Relaxed),
                per_second,
                stats.queued + stats.inflight,
            ),
        };
        if text != last {
            app_plugin::notify::status(&text);
            last = text;
        }
    }
}
