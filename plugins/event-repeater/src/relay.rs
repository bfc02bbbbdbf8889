//! The router: one event in, at most one record into the buffer.
//!
//! The route is looked up in the table in force when the event arrives and
//! the sink topic is fixed then, so a route change takes effect between two
//! events and never rewrites an event already accepted.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::buffer::Buffer;
use crate::event::Event;
use crate::metrics::{inc, Metrics};
use crate::routes::Table;
use crate::sink::mqtt::mqtt_refusal;
use app_plugin::log::{RateLimited, DEBUG, WARN};

/// The routing table shared by the API (writer) and the router (reader).
pub type SharedTable = Arc<RwLock<Arc<Table>>>;

/// Reads the current table; a poisoned lock still holds a whole table
/// (writers only swap an `Arc`), so it is used as is.
pub fn current(table: &SharedTable) -> Arc<Table> {
    table.read().unwrap_or_else(|e| e.into_inner()).clone()
}

pub struct Relay {
    table: SharedTable,
    buffer: Arc<Buffer>,
    metrics: Arc<Metrics>,
    /// For MQTT: the largest packet, so oversized events are refused here.
    max_packet: Option<usize>,
    invalid_warning: RateLimited,
    refused_warning: RateLimited,
    unrouted_note: RateLimited,
}

impl Relay {
    pub fn new(
        table: SharedTable,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
        max_packet: Option<usize>,
    ) -> Relay {
        let every = Duration::from_secs(5);
        Relay {
            table,
            buffer,
            metrics,
            max_packet,
            invalid_warning: RateLimited::new(every),
            refused_warning: RateLimited::new(every),
            unrouted_note: RateLimited::new(every),
        }
    }

    /// Counts an event the SSE parser had to discard (`id`: the last event
    /// id in force).
    pub fn discarded(&self, why: &str, id: Option<&str>) {
        self.buffer.skip(id);
        inc(&self.metrics.received);
        inc(&self.metrics.invalid);
        self.invalid_warning.log(WARN, || {
            format!("discarded an event from the source: {why}")
        });
    }

    /// Routes one event's data (`id`: the SSE event id in force); waits
    /// only under `--overflow block`. Every event that is not accepted into
    /// the buffer is recorded as done for the checkpoint.
    pub async fn handle(&self, data: &str, id: Option<&str>, cancel: &CancellationToken) {
        inc(&self.metrics.received);
        let event = match Event::parse(data) {
            Ok(e) => e,
            Err(e) => {
                self.buffer.skip(id);
                inc(&self.metrics.invalid);
                self.invalid_warning
                    .log(WARN, || format!("discarded an event from the source: {e}"));
                return;
            }
        };
        let table = current(&self.table);
        let Some(decision) = table.route(&event.topic) else {
            self.buffer.skip(id);
            inc(&self.metrics.unrouted);
            let topic = event.topic.clone();
            self.unrouted_note.log(DEBUG, || {
                format!("no route for topic {topic:?}; event not relayed")
            });
            return;
        };
        if let Some(max) = self.max_packet {
            if let Some((reason, why)) = mqtt_refusal(&decision.sink_topic, event.json.len(), max) {
                self.buffer.skip(id);
                match reason {
                    "too_large" => inc(&self.metrics.failed_too_large),
                    _ => inc(&self.metrics.failed_invalid_topic),
                }
                let source = event.topic.clone();
                self.refused_warning
                    .log(WARN, || format!("refused an event on {source:?}: {why}"));
                return;
            }
        }
        self.buffer
            .push(
                event.topic,
                decision.sink_topic,
                Bytes::from(event.json),
                id,
                cancel,
            )
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Overflow;
    use crate::routes::{RouteSpec, Routes};
    use std::sync::atomic::Ordering;

    #[tokio::test]
    async fn routes_counts_and_refuses() {
        let routes = Routes::from_specs(vec![
            RouteSpec {
                sourcetopic: "a".into(),
                sinktopic: "x/{topic}".into(),
            },
            RouteSpec {
                sourcetopic: "bad".into(),
                sinktopic: "".into(),
            },
        ])
        .unwrap();
        let table: SharedTable =
            Arc::new(RwLock::new(Arc::new(Table::build(&routes, false, None))));
        let metrics = Arc::new(Metrics::default());
        let buffer = Arc::new(Buffer::new(
            10,
            1 << 20,
            Overflow::DropNewest,
            metrics.clone(),
        ));
        let relay = Relay::new(table, buffer.clone(), metrics.clone(), Some(200));
        let c = CancellationToken::new();
        relay
            .handle(r#"{"topic":"a","data":1}"#, Some("1"), &c)
            .await;
        relay.handle(r#"{"topic":"zzz"}"#, Some("2"), &c).await;
        relay.handle("not json", Some("3"), &c).await;
        let big = format!(r#"{{"topic":"bad","data":"{}"}}"#, "x".repeat(300));
        relay.handle(&big, Some("4"), &c).await;
        // Only the accepted event holds the checkpoint back.
        assert_eq!(buffer.checkpoint().0, None);
        let taken = buffer.take(10);
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].sink_topic, "x/a");
        assert_eq!(&taken[0].payload[..], br#"{"topic":"a","data":1}"#);
        assert_eq!(metrics.received.load(Ordering::Relaxed), 4);
        assert_eq!(metrics.unrouted.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.invalid.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.failed_too_large.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.accepted.load(Ordering::Relaxed), 1);
        buffer.release(&taken[0]);
        assert_eq!(buffer.checkpoint().0.as_deref(), Some("4"));
    }
}
