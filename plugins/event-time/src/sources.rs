//! What publishes events: the timers, and the numbered test stream.
//!
//! Each timer fires on whole multiples of its period since the Unix epoch
//! (`timer/min/1` at every minute's second 0), so two servers agree on when a
//! timer fires. The test stream (`--rate`) publishes in batches from one task:
//! each tick publishes every event that is due by then, under one lock.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::{Instant, MissedTickBehavior};

use crate::event::{rfc3339_millis, EventDoc};
use crate::hub::Hub;
use crate::topics::{Catalogue, TEST_SEQ, TIMERS};
use app_plugin::log::{INFO, TRACE};
use app_plugin::notify::Watchdog;

/// At most this many events are published under one lock.
const MAX_BATCH: u64 = 4096;

/// Starts one task per timer topic. Each pings systemd's `watchdog` after
/// it publishes (a ping is sent only when due), so the pings stop when the
/// timers stop firing or publishing blocks.
pub fn spawn_timers(hub: &Arc<Hub>, catalogue: &Catalogue, watchdog: &Watchdog) {
    for (topic, id, period) in TIMERS {
        if let Some(topic_id) = catalogue.id(topic) {
            let hub = Arc::clone(hub);
            let watchdog = watchdog.clone();
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval_at(
                    Instant::now() + until_next_multiple(SystemTime::now(), period),
                    period,
                );
                // After a stall (a suspended laptop), fire once, not a burst.
                ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
                let data = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
                loop {
                    ticks.tick().await;
                    let json = EventDoc {
                        topic,
                        kind: "timer",
                        id,
                        timestamp: rfc3339_millis(SystemTime::now()),
                        data,
                    }
                    .to_json();
                    let seq = hub.publish(topic_id, json);
                    app_plugin::log!(TRACE, "published {seq} on {topic}");
                    watchdog.beat();
                }
            });
        }
    }
}

/// How long from `now` to the next whole multiple of `period` since the epoch.
pub fn until_next_multiple(now: SystemTime, period: Duration) -> Duration {
    let since = now
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let period_ns = period.as_nanos().max(1);
    let wait = period_ns - since % period_ns;
    Duration::from_nanos(u64::try_from(wait).unwrap_or(0))
}

/// Starts the numbered test stream on `test/seq`: `rate` events per second,
/// numbered from 1, stopping after `count` events if given.
pub fn spawn_numbered(hub: &Arc<Hub>, catalogue: &Catalogue, rate: u32, count: Option<u64>) {
    let Some(topic_id) = catalogue.id(TEST_SEQ) else {
        return;
    };
    let hub = Arc::clone(hub);
    let rate = u64::from(rate.max(1));
    let tick = Duration::from_nanos(1_000_000_000 / rate)
        .clamp(Duration::from_millis(1), Duration::from_millis(100));
    tokio::spawn(async move {
        let start = Instant::now();
        let mut ticks = tokio::time::interval(tick);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut sent: u64 = 0;
        loop {
            ticks.tick().await;
            let due = due_by(start.elapsed(), rate, count);
            while sent < due {
                let batch = (due - sent).min(MAX_BATCH);
                let timestamp = rfc3339_millis(SystemTime::now());
                hub.publish_batch(usize::try_from(batch).unwrap_or(1), |_| {
                    sent += 1;
                    let id = sent.to_string();
                    let json = EventDoc {
                        topic: TEST_SEQ,
                        kind: "seq",
                        id: &id,
                        timestamp: timestamp.clone(),
                        data: sent,
                    }
                    .to_json();
                    (topic_id, json)
                });
            }
            if count.is_some_and(|c| sent >= c) {
                app_plugin::log!(
                    INFO,
                    "published all {sent} numbered events on {TEST_SEQ}; still serving"
                );
                return;
            }
        }
    });
}

/// How many numbered events are due `elapsed` after the start: the first at
/// once, then one every `1/rate` seconds, never more than `count`.
pub fn due_by(elapsed: Duration, rate: u64, count: Option<u64>) -> u64 {
    let due = elapsed.as_nanos() * u128::from(rate) / 1_000_000_000 + 1;
    let due = u64::try_from(due).unwrap_or(u64::MAX);
    count.map_or(due, |c| due.min(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timers_align_on_whole_periods() {
        let t = UNIX_EPOCH + Duration::from_millis(61_250);
        assert_eq!(
            until_next_multiple(t, Duration::from_secs(1)),
            Duration::from_millis(750)
        );
        assert_eq!(
            until_next_multiple(t, Duration::from_secs(60)),
            Duration::from_millis(58_750)
        );
        assert_eq!(
            until_next_multiple(t, Duration::from_millis(100)),
            Duration::from_millis(50)
        );
        let exact = UNIX_EPOCH + Duration::from_secs(120);
        assert_eq!(
            until_next_multiple(exact, Duration::from_secs(60)),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn numbered_events_are_due_at_the_rate_and_capped_by_count() {
        assert_eq!(due_by(Duration::ZERO, 1000, None), 1);
        assert_eq!(due_by(Duration::from_millis(10), 1000, None), 11);
        assert_eq!(due_by(Duration::from_secs(2), 20_000, None), 40_001);
        assert_eq!(due_by(Duration::from_secs(2), 20_000, Some(500)), 500);
    }
}
