//! The SSE-over-HTTP reader both SSE kinds share (the event plugin's
//! dialect and a plain feed): the kind says what differs ([`Dialect`]:
//! where to connect, what to ask, the hint for a source that is not
//! there, how it is shown); this module subscribes, feeds the stream
//! through the SSE parser into the router, and reconnects with capped
//! exponential backoff and jitter when the source goes away, sending
//! `Last-Event-ID` so that a source which keeps history can replay what was
//! missed. A lost source is logged once, and its return once, however many
//! retries lie between; a source not there yet in the first 3 s after the
//! start (`STARTUP_GRACE`) is retried at info level.
//!
//! The reader is generic over the kind, so the per-event path (parser →
//! `Relay::handle`) has no dynamic dispatch; the daemon's one dynamic call
//! is [`crate::source::SourceConfig::run`], once.
//!
//! The first subscription sends the checkpoint loaded at start (see
//! [`crate::checkpoint`]); later ones the last id received. A source that
//! answers a resume with an id that is not newer (it restarted, or its ids
//! are unrelated) is followed anyway, with one warning. A comment in which
//! the source says it skipped events (`events A..B are no longer held`, as
//! event-time writes for a slow or late reader) is counted in
//! `events_missed_total` and warned about once.
//!
//! A source that keeps its connection open but sends nothing, not even a
//! keep-alive comment, for `--source-idle-timeout` (a frozen or hung
//! process: event-time sends a keep-alive every 15 s) is reported as
//! stalled (`/healthz`, the log, `source_stalled`), counted
//! (`source_stalls_total`) and left: the repeater subscribes again with
//! `Last-Event-ID`, so what the source sends once it moves again is not
//! lost. The stall ends when the source sends something (an event or a
//! keep-alive), not when a subscription's headers arrive: a source that
//! answers every subscription and then says nothing looked healthy 49
//! times in 50 (issue 30).

use app_plugin::log::{info, warn};
use app_plugin::text::escape_for_terminal;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use app_plugin::daemon::Shutdown;
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::event_key::EventKey;
use crate::metrics::{inc, Metrics};
use crate::relay::Relay;
use crate::source::Runtime;
use crate::sse::{Item, Parser};

pub mod connect;
mod pace;

pub use connect::{get, Peer, Refused, Via};
use pace::Pace;

/// What an SSE-over-HTTP kind tells the reader; its `Display` is how the
/// source is shown (the log, `/healthz`), never with a secret.
pub trait Dialect: std::fmt::Display + Send + Sync + 'static {
    /// Where the requests go, and what each one carries.
    fn peer(&self) -> Peer<'_>;

    /// The request target of the event stream (`/events?topic=.`).
    fn stream_target(&self) -> &str;

    /// Said after "cannot subscribe to the event source …; retrying with
    /// backoff": how to make such a source be there, when the kind knows.
    fn unreachable_hint(&self) -> &'static str {
        ""
    }
}

/// Reads `source` until `cancel` fires.
pub async fn run<D: Dialect>(source: Arc<D>, rt: Runtime, cancel: Shutdown) {
    if !rt.begin(&cancel).await {
        return;
    }
    let Runtime {
        relay,
        metrics,
        max_event,
        idle_timeout,
        resume_after,
        replay: _,
    } = rt;
    let reader = Reader {
        source,
        relay,
        metrics,
        max_event,
        resume_after,
        idle_timeout,
    };
    reader.run(cancel).await
}

/// How a connection attempt or stream ended.
enum End {
    /// Could not connect or the source refused the subscription.
    Failed(Refused),
    /// The stream was open and then ended or broke.
    Lost(String),
    /// The stream was open and then silent past the idle timeout.
    Stalled,
    Cancelled,
}

/// One source being read: its kind's dialect and the [`Runtime`] it was
/// given.
struct Reader<D> {
    source: Arc<D>,
    relay: Arc<Relay>,
    metrics: Arc<Metrics>,
    /// Largest SSE line / event accepted from the source.
    max_event: usize,
    /// The checkpoint to resume after, from the file.
    resume_after: Option<EventKey>,
    /// `--source-idle-timeout`: silence after which the source is stalled.
    idle_timeout: Duration,
}

/// The events a source comment says were skipped: `… events A..B are no
/// longer held …` → `B - A + 1`.
pub fn skipped_in_comment(comment: &str) -> Option<u64> {
    let at = comment.find("events ")?;
    let rest = &comment[at + "events ".len()..];
    let (range, tail) = rest.split_once(' ')?;
    if !tail.starts_with("are no longer held") {
        return None;
    }
    let (a, b) = range.split_once("..")?;
    let (a, b): (u64, u64) = (a.parse().ok()?, b.parse().ok()?);
    (b >= a).then(|| b - a + 1)
}

/// Whether `got` answers a resume after `asked` with an id that is not
/// newer: both numbers and `got <= asked`, or one a number and the other not.
fn not_newer(asked: &str, got: &str) -> bool {
    match (asked.parse::<u64>(), got.parse::<u64>()) {
        (Ok(a), Ok(g)) => g <= a,
        (Ok(_), Err(_)) | (Err(_), Ok(_)) => true,
        (Err(_), Err(_)) => false,
    }
}

/// Warnings given at most once per process.
#[derive(Default)]
struct Once {
    resume: bool,
    missed: bool,
    gone: bool,
}

/// How long after the start a source that is not there yet is only
/// retried, not warned about: a source started in the same breath (the
/// tour's `app event-time & app event-repeater run &`) needs a moment to
/// open its socket. After that the first failure is a warning, as before.
const STARTUP_GRACE: Duration = Duration::from_secs(3);

/// The connection to the source over time, so that each loss and each
/// return is logged once however many retries lie between.
struct Link {
    started: Instant,
    ever_connected: bool,
    down_since: Option<Instant>,
}

impl<D: Dialect> Reader<D> {
    /// Runs until `cancel` fires.
    async fn run(self, cancel: Shutdown) {
        let mut parser = Parser::new(self.max_event, self.max_event);
        let resume_after = self.resume_after.clone();
        parser.set_last_id(
            resume_after
                .as_ref()
                .map(|k| k.last_event_id_shared().clone()),
        );
        let mut once = Once::default();
        let mut pace = Pace::default();
        let mut link = Link {
            started: Instant::now(),
            ever_connected: false,
            down_since: None,
        };
        loop {
            parser.reset();
            let asked = parser.last_id().map(str::to_string);
            let response = tokio::select! {
                r = self.subscribe(parser.last_id()) => r,
                _ = cancel.recv() => return,
            };
            let end = match response {
                Err(why) => End::Failed(why),
                Ok(body) => {
                    self.connected(&mut link, parser.last_id());
                    pace.connected();
                    self.stream(body, &mut parser, asked, &mut once, &mut pace, &cancel)
                        .await
                }
            };
            self.metrics
                .source_connected
                .store(false, Ordering::Relaxed);
            let delay = match &end {
                End::Cancelled => return,
                End::Failed(Refused::NoContent) => {
                    self.stopped_by_source();
                    cancel.recv().await;
                    return;
                }
                End::Failed(Refused::Status { retry_after, .. }) => pace.after_failed(*retry_after),
                End::Failed(_) => pace.after_failed(None),
                End::Lost(_) | End::Stalled => pace.after_lost(),
            };
            self.ended(&mut link, end, parser.last_id());
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = cancel.recv() => return,
            }
        }
    }

    /// A subscription was answered: the source is connected, and back if
    /// it was lost.
    fn connected(&self, link: &mut Link, last_id: Option<&str>) {
        self.metrics.source_connected.store(true, Ordering::Relaxed);
        // A refusal's problem ends here; a stall's only once the source
        // sends something.
        if !self.metrics.source_stalled.load(Ordering::Relaxed) {
            crate::metrics::set_problem(&self.metrics.source_problem, "");
        }
        match link.down_since.take() {
            Some(t) => warn!(
                "event source {} is back after {:.1}s; resuming{}",
                self.source,
                t.elapsed().as_secs_f64(),
                last_id
                    .map(|id| format!(" after event id {}", escape_for_terminal(id)))
                    .unwrap_or_default()
            ),
            None if !link.ever_connected => {
                info!("subscribed to event source {}", self.source)
            }
            None => {}
        }
        link.ever_connected = true;
    }

    /// A subscription failed or a stream ended: counted, and logged once
    /// per outage.
    fn ended(&self, link: &mut Link, end: End, last_id: Option<&str>) {
        match end {
            End::Cancelled => {}
            End::Lost(why) => {
                inc(&self.metrics.source_disconnects);
                if link.down_since.is_none() {
                    warn!("lost the event source {}: {why}; reconnecting", self.source);
                    link.down_since = Some(Instant::now());
                }
            }
            End::Stalled => {
                inc(&self.metrics.source_disconnects);
                self.stalled(last_id);
                link.down_since.get_or_insert_with(Instant::now);
            }
            // A source that answered (with a refusal) is there: only an
            // unreachable one is given the grace.
            End::Failed(why @ Refused::Unreachable(_))
                if !link.ever_connected && link.started.elapsed() < STARTUP_GRACE =>
            {
                // Started together with its source (`app event-time &
                // app event-repeater run &`): not worth a warning yet.
                info!(
                    "the event source {} is not there yet: {why}; retrying",
                    self.source
                );
            }
            End::Failed(why) => {
                crate::metrics::set_problem(
                    &self.metrics.source_problem,
                    &format!("cannot subscribe: {why}; retrying"),
                );
                if link.down_since.is_none() {
                    let hint = self.source.unreachable_hint();
                    warn!(
                        "cannot subscribe to the event source {}: {why}; retrying with backoff{hint}",
                        self.source
                    );
                    link.down_since = Some(Instant::now());
                }
            }
        }
    }

    async fn stream(
        &self,
        mut body: Incoming,
        parser: &mut Parser,
        mut asked: Option<String>,
        once: &mut Once,
        pace: &mut Pace,
        cancel: &Shutdown,
    ) -> End {
        let mut items = Vec::new();
        let mut heard = false;
        loop {
            // Only the wait for the source is timed: time spent relaying
            // (a full buffer under --overflow block) is not its silence.
            let frame = tokio::select! {
                f = tokio::time::timeout(self.idle_timeout, body.frame()) => match f {
                    Ok(f) => f,
                    Err(_) => return End::Stalled,
                },
                _ = cancel.recv() => return End::Cancelled,
            };
            let chunk = match frame {
                None => return End::Lost("the stream ended".into()),
                Some(Err(e)) => return End::Lost(e.to_string()),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    Err(_) => continue, // trailers
                },
            };
            if !heard && !chunk.is_empty() {
                heard = true;
                self.stall_ended();
            }
            parser.feed(&chunk, &mut items);
            for item in items.drain(..) {
                match item {
                    Item::Event(ev) => {
                        // Only an id of its own says where the source resumed.
                        let own = ev.id.as_ref().filter(|k| k.is_own());
                        if let (Some(a), Some(got)) = (&asked, own) {
                            let got = got.last_event_id();
                            if !once.resume && not_newer(a, got) {
                                once.resume = true;
                                warn!(
                                    "the event source {} answered a resume after event id {} with event id {}, which is not newer (did it restart, or change its ids?); relaying from there",
                                    self.source,
                                    escape_for_terminal(a),
                                    escape_for_terminal(got)
                                );
                            }
                            asked = None;
                        }
                        self.relay
                            .handle(ev.data, ev.event.as_deref(), ev.id.as_ref(), cancel)
                            .await;
                        if cancel.is_shutdown() {
                            return End::Cancelled;
                        }
                    }
                    Item::Oversized(key) => self.relay.discarded(
                        &format!("a line or event over {} bytes", self.max_event),
                        key.as_ref(),
                    ),
                    Item::InvalidUtf8(key) => {
                        self.relay.discarded("the data is not UTF-8", key.as_ref())
                    }
                    Item::IdRefused(why) => self.relay.id_refused(why),
                    Item::Retry(ms) => pace.set_retry(ms),
                    Item::Comment(text) => {
                        if let Some(n) = skipped_in_comment(&text) {
                            self.metrics.missed.fetch_add(n, Ordering::Relaxed);
                            if !once.missed {
                                once.missed = true;
                                warn!(
                                    "the event source {} skipped events for this repeater: {text:?}; see events_missed_total in /metrics",
                                    self.source
                                );
                            }
                        } else if text.contains("no longer held") && !once.gone {
                            // Skipped, but the source cannot say how many.
                            once.gone = true;
                            warn!("the event source {} says: {text:?}", self.source);
                        }
                    }
                }
            }
        }
    }

    /// The source went silent: reported until a subscription is answered.
    fn stalled(&self, last_id: Option<&str>) {
        inc(&self.metrics.source_stalls);
        self.metrics.source_stalled.store(true, Ordering::Relaxed);
        let timeout = humantime::format_duration(self.idle_timeout);
        crate::metrics::set_problem(
            &self.metrics.source_problem,
            &format!(
                "stalled: nothing received, not even a keep-alive, for {timeout} (--source-idle-timeout); subscribing again"
            ),
        );
        warn!(
            "the event source {} sent nothing, not even a keep-alive, for {timeout} (--source-idle-timeout): it looks stalled (stopped, or hung); subscribing again{}",
            self.source,
            last_id
                .map(|id| format!(" to resume after event id {}", escape_for_terminal(id)))
                .unwrap_or_default()
        );
    }

    fn stall_ended(&self) {
        if self.metrics.source_stalled.swap(false, Ordering::Relaxed) {
            crate::metrics::set_problem(&self.metrics.source_problem, "");
        }
    }

    /// The source answered 204: it asks not to be asked again.
    fn stopped_by_source(&self) {
        let text = format!(
            "the event source {} answered 204 No Content, which asks clients not to reconnect: not subscribing again until the repeater is restarted",
            self.source
        );
        warn!("{text}");
        crate::metrics::set_problem(&self.metrics.source_problem, &text);
    }

    /// Opens the connection and sends the subscription; `Ok` is a 200 stream.
    async fn subscribe(&self, last_id: Option<&str>) -> Result<Incoming, Refused> {
        let mut headers = vec![
            ("accept", "text/event-stream"),
            ("cache-control", "no-cache"),
            // Proxies that gzip a stream buffer it (a known SSE trap).
            ("accept-encoding", "identity"),
        ];
        if let Some(id) = last_id {
            headers.push(("last-event-id", id));
        }
        let target = self.source.stream_target();
        get(&self.source.peer(), target, &headers, true)
            .await
            .map(hyper::Response::into_body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_notices_from_event_time_are_counted() {
        assert_eq!(
            skipped_in_comment("lagged: events 3..7 are no longer held and were skipped"),
            Some(5)
        );
        assert_eq!(
            skipped_in_comment(
                "events 10..10 are no longer held; replaying from the oldest held event"
            ),
            Some(1)
        );
        assert_eq!(skipped_in_comment("keep-alive"), None);
        assert_eq!(skipped_in_comment("events 9..3 are no longer held"), None);
        assert_eq!(skipped_in_comment("events a..b are no longer held"), None);
    }

    #[test]
    fn resumes_answered_with_older_or_unrelated_ids() {
        assert!(not_newer("100", "100"));
        assert!(not_newer("100", "5"));
        assert!(!not_newer("100", "101"));
        assert!(not_newer("100", "abc"));
        assert!(!not_newer("abc", "abd"));
    }
}
