//! QoS 0: core NATS publishes, done once the client took them.

use std::time::Duration;

use async_nats::Client;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::inc;
use crate::reason::Reason;
use crate::sink::nats::{is_connected, LastSubject, NatsSink};
use crate::sink::{until, Drain};
use app_plugin::log::{RateLimited, WARN};

impl NatsSink {
    /// QoS 0: core publishes while connected.
    pub(super) async fn run_core(&self, client: &Client, link: &Notify, drain: Drain) -> usize {
        let refused = RateLimited::new(Duration::from_secs(5));
        let mut deadline = None;
        let mut subjects = LastSubject::default();
        // The server's limit, read once per connection (server_info()
        // clones the whole INFO).
        let mut max_payload = None;
        loop {
            drain.beat();
            let dl = drain.deadline(&mut deadline);
            if dl.is_some() && self.buffer.is_queue_empty() {
                return 0;
            }
            let connected = is_connected(client);
            // Stopping while the server is down: nothing can drain.
            if dl.is_some_and(|d| Instant::now() >= d || !connected) {
                return self.buffer.stats().queued;
            }
            if !connected {
                max_payload = None;
            }
            if connected {
                let limit = *max_payload.get_or_insert_with(|| client.server_info().max_payload);
                let batch = self.buffer.take(256);
                for rec in batch {
                    match subjects.of(&rec.sink_topic) {
                        Err(why) => self.refuse(&rec, &why, &refused),
                        Ok(s) if rec.payload.len() > limit => {
                            let why = format!("over the server's max_payload ({limit} bytes)");
                            refused.log(WARN, || format!("refused an event for {s}: {why}"));
                            self.buffer.refuse(&rec, Reason::TooLarge, &why);
                        }
                        Ok(s) => match client.publish(s, rec.payload.clone()).await {
                            Ok(()) => {
                                inc(&self.metrics.published);
                                inc(&self.metrics.acked);
                                self.buffer.release(&rec);
                            }
                            Err(e) => self.buffer.refuse(&rec, Reason::SinkError, &e.to_string()),
                        },
                    }
                }
            }
            tokio::select! {
                _ = self.buffer.ready(), if connected => {}
                _ = link.notified() => { max_payload = None; }
                // The state may change just after the event that announced it.
                _ = tokio::time::sleep(Duration::from_millis(250)), if !connected => {}
                _ = drain.stop.recv(), if dl.is_none() => {}
                _ = until(dl) => {}
                _ = drain.watchdog_due() => {}
            }
        }
    }
}
