//! Duplicate acknowledgements: JetStream answers `duplicate` when the
//! stream already holds a message with the publish's `Nats-Msg-Id`
//! (`SOURCE_ID:SSE_ID`). That is expected for a publish this run sent
//! before, for events an earlier run stored after its last checkpoint, and
//! for a second repeater of the same source sharing the `--source-id`. It
//! is a loss when another writer uses the same `--source-id` for other
//! events: this event was not stored, the stream keeps the other one. So a
//! duplicate of an event this run had not sent before is checked against
//! the stored message (one check at a time, each bounded), and a
//! different message is counted and warned about (at most once a minute).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use app_plugin::log::{RateLimited, WARN};
use async_nats::jetstream;
use async_nats::Subject;
use bytes::Bytes;

use crate::metrics::{inc, Metrics};
use crate::sink::nats::acks::Duplicate;

/// How long one check of a stored message may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Dups {
    metrics: Arc<Metrics>,
    source_id: String,
    busy: Arc<AtomicBool>,
    warned: Arc<RateLimited>,
}

impl Dups {
    pub fn new(metrics: Arc<Metrics>, source_id: &str) -> Dups {
        Dups {
            metrics,
            source_id: source_id.to_string(),
            busy: Arc::new(AtomicBool::new(false)),
            warned: Arc::new(RateLimited::new(Duration::from_secs(60))),
        }
    }

    /// A publish of `payload` to `subject` was acknowledged as a duplicate
    /// of `original`; `sent_before`: by this run.
    pub fn seen(
        &self,
        js: &jetstream::Context,
        original: Duplicate,
        subject: &Subject,
        payload: &Bytes,
        sent_before: bool,
    ) {
        inc(&self.metrics.duplicates);
        if sent_before || self.busy.swap(true, Ordering::AcqRel) {
            return;
        }
        let (js, subject, payload) = (js.clone(), subject.clone(), payload.clone());
        let (metrics, busy, warned) =
            (self.metrics.clone(), self.busy.clone(), self.warned.clone());
        let source_id = self.source_id.clone();
        tokio::spawn(async move {
            let stored = tokio::time::timeout(CHECK_TIMEOUT, async {
                let stream = js.get_stream_no_info(&original.stream).await.ok()?;
                stream.get_raw_message(original.seq).await.ok()
            })
            .await
            .ok()
            .flatten();
            busy.store(false, Ordering::Release);
            let Some(stored) = stored else { return };
            if stored.payload == payload && stored.subject == subject {
                return;
            }
            inc(&metrics.duplicate_conflicts);
            let n = metrics.duplicate_conflicts.load(Ordering::Relaxed);
            warned.log(WARN, || {
                format!(
                    "another writer with --source-id {:?} sends other events under the same SSE ids: an event for {subject} was not stored, the stream {} holds a different message under its Nats-Msg-Id (seq {}); {n} such so far (events_duplicate_conflict_total). Give each source its own --source-id; share one only between repeaters of the same source",
                    app_plugin::text::escape_for_terminal(&source_id),
                    original.stream,
                    original.seq
                )
            });
        });
    }
}
