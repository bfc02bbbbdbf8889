//! The stderr sink: one JSON line per event,
//! `{"source_topic":…,"sink_topic":…,"event":{…}}`.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use app_plugin::address::Scheme;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use crate::buffer::{Buffer, Record};
use crate::metrics::{inc, Metrics};
use crate::sink::{
    has_control, Drain, NoFlags, Refusal, Setup, Sink, SinkConfig, SinkKind, TopicRules,
};

/// `--sinkprotocol stderr`: no flags of its own; it prints a `--payload text` event as a JSON string.
impl SinkKind for Stderr {
    const NAME: &'static str = "stderr";
    const ABOUT: &'static str = "Write one JSON line per event to stderr";
    const SCHEMES: &'static [Scheme] = &[];
    type Args = NoFlags;

    fn configure(_: NoFlags, setup: &Setup) -> Result<Box<dyn SinkConfig>, String> {
        Ok(Box::new(Stderr {
            text: setup.text_payload,
        }))
    }
}

/// The stderr sink's configuration (and its topic rules).
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr {
    /// `--payload text`: the event is printed as a JSON string, since
    /// its data need not be JSON.
    pub text: bool,
}

impl SinkConfig for Stderr {
    fn url(&self) -> String {
        "stderr".to_string()
    }

    fn rules(&self) -> Arc<dyn TopicRules> {
        Arc::new(*self)
    }

    /// stderr is never down: a stop always waits for the drain.
    fn connected(&self, _: &Metrics) -> bool {
        true
    }

    fn build(
        &self,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
    ) -> BoxFuture<'_, Result<Box<dyn Sink>, String>> {
        let text = self.text;
        async move {
            Ok(Box::new(StderrSink {
                buffer,
                metrics,
                text,
            }) as Box<dyn Sink>)
        }
        .boxed()
    }
}

impl TopicRules for Stderr {
    /// Only a control character: the JSON line would show it escaped, but
    /// it is refused on every sink alike, so trying routes on stderr never
    /// shows an event no broker would take.
    fn refuse_topic(&self, topic: &str) -> Option<Refusal> {
        has_control(topic)
            .then(|| Refusal::InvalidTopic(format!("{topic:?} holds a control character")))
    }
}

/// The running stderr sink.
pub struct StderrSink {
    buffer: Arc<Buffer>,
    metrics: Arc<Metrics>,
    text: bool,
}

impl Sink for StderrSink {
    fn run(self: Box<Self>, drain: Drain) -> BoxFuture<'static, usize> {
        run(self.buffer, self.metrics, self.text, drain).boxed()
    }
}

/// Formats one record as the stderr sink prints it (without the newline).
pub fn line(rec: &Record, text: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(rec.payload.len() + rec.sink_topic.len() * 2 + 48);
    out.extend_from_slice(b"{\"source_topic\":");
    // Serialising a str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, &*rec.source_topic);
    out.extend_from_slice(b",\"sink_topic\":");
    let _ = serde_json::to_writer(&mut out, &*rec.sink_topic);
    out.extend_from_slice(b",\"event\":");
    match std::str::from_utf8(&rec.payload) {
        // The relay checked UTF-8 of every payload.
        Ok(data) if text => {
            let _ = serde_json::to_writer(&mut out, data);
        }
        _ => out.extend_from_slice(&rec.payload),
    }
    out.push(b'}');
    out
}

/// Writes batches of lines until the drain ends; returns how many events
/// were left undelivered.
async fn run(buffer: Arc<Buffer>, metrics: Arc<Metrics>, as_text: bool, drain: Drain) -> usize {
    metrics.sink_connected.store(true, Ordering::Relaxed);
    let mut deadline = None;
    loop {
        drain.beat();
        let batch = buffer.take(256);
        if batch.is_empty() {
            if drain.deadline(&mut deadline).is_some() {
                break;
            }
            tokio::select! {
                _ = buffer.ready() => {}
                _ = drain.stop.recv() => {}
                _ = drain.watchdog_due() => {}
            }
            continue;
        }
        let mut text = Vec::with_capacity(batch.len() * 128);
        for rec in &batch {
            text.extend_from_slice(&line(rec, as_text));
            text.push(b'\n');
        }
        // A pipe nobody drains blocks the write: on a blocking thread, so
        // the source's task and the API keep their worker.
        let ok = tokio::task::spawn_blocking(move || std::io::stderr().lock().write_all(&text))
            .await
            .is_ok_and(|written| written.is_ok());
        for rec in &batch {
            if ok {
                inc(&metrics.published);
                inc(&metrics.acked);
                buffer.release(rec);
            } else {
                buffer.refuse(
                    rec,
                    crate::reason::Reason::SinkError,
                    "writing to stderr failed",
                );
            }
        }
        if let Some(d) = drain.deadline(&mut deadline) {
            if tokio::time::Instant::now() >= d {
                break;
            }
        }
        // Let other tasks run between large batches.
        tokio::task::yield_now().await;
    }
    buffer.stats().queued
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn only_control_characters_are_refused() {
        for t in ["a/\u{1b}[31m", "\u{0}", "a\u{7f}", "\u{85}", "a\nb"] {
            assert!(Stderr::default().refuse_topic(t).is_some(), "{t:?}");
        }
        for t in ["a b", "a/+/#", "", "\u{ffff}", "é"] {
            assert!(Stderr::default().refuse_topic(t).is_none(), "{t:?}");
        }
    }

    #[test]
    fn line_shape() {
        let rec = Record {
            seq: 1,
            source_topic: "timer/sec/1".into(),
            sink_topic: "a\"b".into(),
            payload: Bytes::from_static(br#"{"topic":"timer/sec/1"}"#),
            id: None,
            letter: None,
        };
        let v: serde_json::Value = serde_json::from_slice(&line(&rec, false)).unwrap();
        assert_eq!(v["source_topic"], "timer/sec/1");
        assert_eq!(v["sink_topic"], "a\"b");
        assert_eq!(v["event"]["topic"], "timer/sec/1");
    }
}
