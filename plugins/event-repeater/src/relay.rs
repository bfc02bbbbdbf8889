//! The router: one event in, at most one record into the buffer.
//!
//! The route is looked up in the table in force when the event arrives and
//! the sink topic is fixed then, so a route change takes effect between two
//! events and never rewrites an event already accepted.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::buffer::Buffer;
use crate::dead_letter::{Reason, Refused};
use crate::decode::Decoder;
use crate::event::EventData;
use crate::event_key::EventKey;
use crate::first_checkpoint::FirstCheckpoint;
use crate::metrics::{inc, Metrics};
use crate::routes::{current, LastRoute, SharedTable};
use crate::sink::{Refusal, Rules};
use app_plugin::daemon::Shutdown;
use app_plugin::log::{RateLimited, DEBUG, WARN};

pub struct Relay {
    table: SharedTable,
    buffer: Arc<Buffer>,
    metrics: Arc<Metrics>,
    /// The sink's topic rules, asked about every event before it is buffered.
    sink: Rules,
    invalid_warning: RateLimited,
    id_warning: RateLimited,
    too_large_warning: RateLimited,
    refused_warning: OncePerTopic,
    unrouted_note: RateLimited,
    /// The last topic's route (only the source's task routes: never
    /// contended).
    last: Mutex<LastRoute>,
    /// On a fresh start, until the first checkpoint is on disk.
    first: Option<FirstCheckpoint>,
    /// `--topic-from` and `--payload`.
    decoder: Decoder,
}

/// How many topics [`OncePerTopic`] remembers; past that, one warning per
/// 5 s for the rest, so a source inventing topics cannot grow the set.
const WARNED_TOPICS: usize = 1024;

/// The longest warning about one event: a topic can be 64 KiB, and a
/// line twice that (escaped) told the operator nothing more (issue 30).
const MAX_WARNING: usize = 1024;

/// A warning given once per topic. Topics are remembered by a hash: 1,024
/// topics of 64 KiB would have held 64 MiB.
struct OncePerTopic {
    warned: Mutex<HashSet<u64>>,
    /// How many topics are remembered ([`WARNED_TOPICS`]).
    cap: usize,
    others: RateLimited,
}

impl OncePerTopic {
    fn log(&self, topic: &str, message: impl FnOnce() -> String) {
        use std::hash::{BuildHasher, RandomState};
        static HASHER: std::sync::OnceLock<RandomState> = std::sync::OnceLock::new();
        let key = HASHER.get_or_init(RandomState::new).hash_one(topic);
        let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
        if warned.contains(&key) {
            return;
        }
        let message = || app_plugin::text::shorten(&message(), MAX_WARNING).into_owned();
        if warned.len() < self.cap {
            warned.insert(key);
            drop(warned);
            app_plugin::log::write(WARN, format_args!("{} (said once per topic)", message()));
        } else {
            drop(warned);
            self.others.log(WARN, message);
        }
    }
}

impl Relay {
    pub fn new(
        table: SharedTable,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
        sink: Rules,
    ) -> Relay {
        let every = Duration::from_secs(5);
        Relay {
            table,
            buffer,
            metrics,
            sink,
            invalid_warning: RateLimited::new(every),
            id_warning: RateLimited::new(every),
            too_large_warning: RateLimited::new(every),
            refused_warning: OncePerTopic {
                warned: Mutex::default(),
                cap: WARNED_TOPICS,
                others: RateLimited::new(every),
            },
            unrouted_note: RateLimited::new(every),
            last: Mutex::default(),
            first: None,
            decoder: Decoder::default(),
        }
    }

    /// Events decoded by `decoder` (`--topic-from`, `--payload`).
    pub fn with_decoder(mut self, decoder: Decoder) -> Relay {
        self.decoder = decoder;
        self
    }

    /// A fresh start: the first event with an id is accepted only once the
    /// first checkpoint is on disk (see [`crate::first_checkpoint`]).
    pub fn with_first_checkpoint(mut self, first: FirstCheckpoint) -> Relay {
        self.first = Some(first);
        self
    }

    /// A fresh start's first checkpoint, until it is on disk.
    pub fn first_checkpoint(&self) -> Option<&FirstCheckpoint> {
        self.first.as_ref().filter(|f| f.needed())
    }

    /// Counts an event the SSE parser had to discard (`id`: the last event
    /// id in force).
    pub fn discarded(&self, why: &str, id: Option<&EventKey>) {
        self.buffer.skip(id);
        inc(&self.metrics.received);
        inc(&self.metrics.invalid);
        self.invalid_warning.log(WARN, || {
            format!("discarded an event from the source: {why}")
        });
    }

    /// Counts an SSE id the parser did not keep (too long, or one that
    /// could not be sent back as `Last-Event-ID`); the event itself is
    /// still relayed.
    pub fn id_refused(&self, why: crate::sse::IdRefusal) {
        inc(&self.metrics.source_ids_refused);
        self.id_warning.log(WARN, || {
            format!(
                "the event source sent an event id {why}: it is not kept (the event is relayed; the checkpoint and Last-Event-ID stay at the id before it, so a restart may send such events again)"
            )
        });
    }

    /// Routes one event's data (`id`: the SSE event id in force); waits
    /// only under `--overflow block`. Every event that is not accepted into
    /// the buffer is recorded as done for the checkpoint; one refused for a
    /// reason of its own is kept as a dead letter.
    pub async fn handle(
        &self,
        data: EventData,
        name: Option<&str>,
        id: Option<&EventKey>,
        cancel: &Shutdown,
    ) {
        inc(&self.metrics.received);
        let event = match self.decoder.decode(&data, name) {
            Ok(e) => e,
            Err(e) => {
                self.buffer.skip(id);
                inc(&self.metrics.invalid);
                let why = e.to_string();
                self.invalid_warning.log(WARN, || {
                    format!("discarded an event from the source: {why}")
                });
                self.buffer.keep(&Refused {
                    reason: Reason::Invalid,
                    why: &why,
                    route: None,
                    source_topic: None,
                    key: id,
                    event: name,
                    sink_topic: None,
                    data: data.as_bytes(),
                });
                return;
            }
        };
        let (topic, sink_topic) = match self.route(&event.topic, event.json.as_str()) {
            Routed::To { topic, sink_topic } => (topic, sink_topic),
            Routed::Nowhere => return self.buffer.skip(id),
            Routed::Refused(r) => {
                self.buffer.skip(id);
                return self.buffer.keep(&r.with(id, name, data.as_bytes()));
            }
        };
        if let (Some(first), Some(id)) = (&self.first, id) {
            if first.needed()
                && !first
                    .write(self.buffer.checkpoint().0, id, data.as_str(), name, cancel)
                    .await
            {
                return;
            }
        }
        self.buffer
            .push(topic, sink_topic, event.json.into_bytes(), id, cancel)
            .await;
    }

    /// Where the current routes and the sink's rules send an event of
    /// `topic` whose payload is `json` (counted, and warned about when
    /// refused).
    pub fn route(&self, topic: &str, json: &str) -> Routed {
        let table = current(&self.table);
        let (topic, decision) = self
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .route(&table, topic);
        let Some(decision) = decision else {
            inc(&self.metrics.unrouted);
            self.unrouted_note.log(DEBUG, || {
                format!("no route for topic {topic:?}; event not relayed")
            });
            return Routed::Nowhere;
        };
        let rendered = match decision.for_event(&topic, json) {
            Ok(rendered) => rendered,
            Err(why) => {
                inc(&self.metrics.failed_invalid_topic);
                let why = format!("its route's sink topic cannot be made: {why}");
                self.refused_warning.log(&decision.sink_topic, || {
                    format!("refused an event from {topic:?}: {why}")
                });
                return Routed::Refused(Box::new(Refusing {
                    reason: Reason::InvalidTopic,
                    why,
                    route: decision.route().map(str::to_string),
                    topic,
                    sink_topic: None,
                }));
            }
        };
        let sink_topic = rendered.as_ref().unwrap_or(&decision.sink_topic);
        let Some(refusal) = self.sink.refuse(sink_topic, json.len()) else {
            // Moved, not cloned: one reference count less per event.
            let sink_topic = rendered.unwrap_or(decision.sink_topic);
            return Routed::To { topic, sink_topic };
        };
        let message = || format!("refused an event from {topic:?}: {}", refusal.message());
        let reason = match refusal {
            // A size is the event's: said every 5 s while it happens.
            Refusal::TooLarge(_) => {
                inc(&self.metrics.failed_too_large);
                self.too_large_warning.log(WARN, || {
                    app_plugin::text::shorten(&message(), MAX_WARNING).into_owned()
                });
                Reason::TooLarge
            }
            // A topic stays unusable: said once for each.
            Refusal::InvalidTopic(_) => {
                inc(&self.metrics.failed_invalid_topic);
                self.refused_warning.log(sink_topic, message);
                Reason::InvalidTopic
            }
        };
        Routed::Refused(Box::new(Refusing {
            reason,
            why: refusal.message().to_string(),
            route: decision.route().map(str::to_string),
            sink_topic: Some(sink_topic.clone()),
            topic,
        }))
    }

    /// The decoder, for a replay to decode a letter's data again.
    pub fn decoder(&self) -> &Decoder {
        &self.decoder
    }
}

/// Where [`Relay::route`] sends an event.
pub enum Routed {
    To {
        topic: Arc<str>,
        sink_topic: Arc<str>,
    },
    /// No route takes it (counted as unrouted: not a dead letter).
    Nowhere,
    Refused(Box<Refusing>),
}

/// An event a route or the sink's rules refused.
pub struct Refusing {
    pub reason: Reason,
    pub why: String,
    pub route: Option<String>,
    pub topic: Arc<str>,
    pub sink_topic: Option<Arc<str>>,
}

impl Refusing {
    /// The dead letter of the event `data` (SSE id `key`, `event:` name).
    pub fn with<'a>(
        &'a self,
        key: Option<&'a EventKey>,
        event: Option<&'a str>,
        data: &'a [u8],
    ) -> Refused<'a> {
        Refused {
            reason: self.reason,
            why: &self.why,
            route: self.route.as_deref(),
            source_topic: Some(&self.topic),
            key,
            event,
            sink_topic: self.sink_topic.as_deref(),
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Overflow;
    use crate::routes::{Route, Routes, Table};
    use std::sync::atomic::Ordering;
    use std::sync::RwLock;

    #[test]
    fn a_refusal_is_warned_once_per_topic_and_the_topics_kept_are_bounded() {
        let cap = 3;
        let once = OncePerTopic {
            warned: Mutex::default(),
            cap,
            others: RateLimited::new(Duration::from_secs(3600)),
        };
        let asked = std::cell::Cell::new(0);
        let message = || {
            asked.set(asked.get() + 1);
            "refused".to_string()
        };
        once.log("a/\u{1b}", message);
        once.log("a/\u{1b}", message);
        assert_eq!(asked.get(), 1, "warned twice for one topic");
        for i in 0..2 * cap {
            once.log(&format!("t/{i}"), message);
        }
        assert_eq!(once.warned.lock().unwrap().len(), cap);
        // Past the bound: one line per interval, the rest counted.
        assert_eq!(asked.get(), cap + 1);
        assert_eq!(once.others.suppressed(), cap as u64);
    }

    #[tokio::test]
    async fn routes_counts_and_refuses() {
        let routes = Routes::from_specs(vec![
            Route {
                sourcetopic: "a".into(),
                sinktopic: "x/{topic}".into(),
            },
            Route {
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
        let sink = Rules::new(Arc::new(crate::sink::mqtt::MqttRules { max_packet: 200 }));
        let relay = Relay::new(table, buffer.clone(), metrics.clone(), sink);
        let c = Shutdown::new();
        let id = |s: &str| Some(EventKey::own(Arc::from(s)));
        relay
            .handle(
                r#"{"topic":"a","data":1}"#.into(),
                None,
                id("1").as_ref(),
                &c,
            )
            .await;
        relay
            .handle(r#"{"topic":"zzz"}"#.into(), None, id("2").as_ref(), &c)
            .await;
        relay
            .handle("not json".into(), None, id("3").as_ref(), &c)
            .await;
        let big = format!(r#"{{"topic":"bad","data":"{}"}}"#, "x".repeat(300));
        relay.handle(big.into(), None, id("4").as_ref(), &c).await;
        // Only the accepted event holds the checkpoint back.
        assert_eq!(buffer.checkpoint().0, None);
        let taken = buffer.take(10);
        assert_eq!(taken.len(), 1);
        assert_eq!(&*taken[0].sink_topic, "x/a");
        assert_eq!(&taken[0].payload[..], br#"{"topic":"a","data":1}"#);
        assert_eq!(metrics.received.load(Ordering::Relaxed), 4);
        assert_eq!(metrics.unrouted.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.invalid.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.failed_too_large.load(Ordering::Relaxed), 1);
        assert_eq!(metrics.accepted.load(Ordering::Relaxed), 1);
        buffer.release(&taken[0]);
        assert_eq!(buffer.checkpoint().0, id("4"));
    }
}
