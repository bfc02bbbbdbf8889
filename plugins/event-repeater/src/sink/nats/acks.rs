//! JetStream acknowledgements collected on one subscription.
//!
//! Every publish carries a reply subject under one inbox the sink subscribes
//! to once (`INBOX.N`, N counting up), and what arrives there is matched to
//! the publish by N. async-nats's `send_publish` makes each publish a request
//! of its own (a fresh inbox name, a oneshot channel, a semaphore permit, a
//! timeout and a boxed future, and an answer parsed as an untagged enum that
//! builds an error for every success): about a quarter of the repeater's
//! instructions per event on JetStream (docs/benchmarks.md). Here a publish
//! costs one entry in a queue and a success one prefix check.
//!
//! A publish not acknowledged within the timeout is handed back, oldest
//! first, as failed; an acknowledgement that comes later finds nothing and
//! is ignored (the publish is sent again with the same `Nats-Msg-Id`, so
//! the stream keeps one copy).

use std::collections::VecDeque;
use std::sync::LazyLock;
use std::time::Duration;

use async_nats::{Message, StatusCode, Subject};
use memchr::memmem::Finder;
use serde::Deserialize;
use tokio::time::Instant;

/// The error text of an acknowledgement that did not come in time (as
/// async-nats words it).
pub const TIMED_OUT: &str = "timed out: didn't receive ack in time";

/// A stored publish: `Some` when the stream answered `duplicate` (it held
/// a message with that `Nats-Msg-Id` already), with where that one is.
pub type Stored = Option<Duplicate>;

/// Where the message a duplicate publish matched is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    pub stream: String,
    pub seq: u64,
}

/// What a waiting publish came to.
pub type Outcome<T> = (T, Result<Stored, String>);

struct Waiting<T> {
    sent: Instant,
    item: Option<T>,
}

/// Publishes awaiting their acknowledgement, in the order they were sent.
pub struct Acks<T> {
    /// `INBOX.`: the reply subjects' common start.
    prefix: String,
    /// The number of `waiting[0]`.
    front: u64,
    waiting: VecDeque<Waiting<T>>,
    /// How many of `waiting` still hold their item.
    pending: usize,
    timeout: Duration,
}

impl<T> Acks<T> {
    /// Acknowledgements arrive under `inbox.*`.
    pub fn new(inbox: &str, timeout: Duration) -> Acks<T> {
        Acks {
            prefix: format!("{inbox}."),
            front: 0,
            waiting: VecDeque::new(),
            pending: 0,
            timeout,
        }
    }

    /// The subject to subscribe to.
    pub fn filter(&self) -> String {
        format!("{}*", self.prefix)
    }

    /// How many publishes are waiting.
    pub fn len(&self) -> usize {
        self.pending
    }

    pub fn is_empty(&self) -> bool {
        self.pending == 0
    }

    /// Whether another publish may go out with `window` unacknowledged at
    /// most. Answered publishes behind an unanswered one keep their place
    /// until it is answered or times out; at most `3 × window` places are
    /// kept, so one lost acknowledgement holds memory to that (and new
    /// publishes for at most --ack-timeout) however fast the rest go.
    pub fn has_room(&self, window: usize) -> bool {
        self.pending < window && self.waiting.len() < window.saturating_mul(3)
    }

    /// Books `item` as sent now; returns the reply subject to publish it with.
    pub fn add(&mut self, item: T, now: Instant) -> Subject {
        let n = self.front + self.waiting.len() as u64;
        self.waiting.push_back(Waiting {
            sent: now,
            item: Some(item),
        });
        self.pending += 1;
        let mut reply = String::with_capacity(self.prefix.len() + 20);
        reply.push_str(&self.prefix);
        push_decimal(&mut reply, n);
        Subject::from(reply)
    }

    /// Takes back the item just added (its publish could not be sent).
    pub fn unsend(&mut self) -> Option<T> {
        let item = self.waiting.pop_back()?.item?;
        self.pending -= 1;
        Some(item)
    }

    /// A message arrived on the inbox: the outcome of the publish it
    /// answers, or `None` when it answers nothing still waiting.
    pub fn arrived(&mut self, msg: &Message) -> Option<Outcome<T>> {
        let n: u64 = msg
            .subject
            .strip_prefix(self.prefix.as_str())?
            .parse()
            .ok()?;
        let i = usize::try_from(n.checked_sub(self.front)?).ok()?;
        let item = self.waiting.get_mut(i)?.item.take()?;
        self.pending -= 1;
        self.trim();
        Some((item, verdict(msg)))
    }

    fn trim(&mut self) {
        while self.waiting.front().is_some_and(|w| w.item.is_none()) {
            self.waiting.pop_front();
            self.front += 1;
        }
    }

    /// When the oldest waiting publish times out.
    pub fn deadline(&self) -> Option<Instant> {
        self.waiting.front().map(|w| w.sent + self.timeout)
    }

    /// The publishes left unacknowledged for the timeout, oldest first.
    pub fn expired(&mut self, now: Instant) -> Vec<T> {
        let mut out = Vec::new();
        while let Some(w) = self.waiting.front_mut() {
            if w.item.is_some() && w.sent + self.timeout > now {
                break;
            }
            if let Some(item) = w.item.take() {
                self.pending -= 1;
                out.push(item);
            }
            self.waiting.pop_front();
            self.front += 1;
        }
        out
    }
}

fn push_decimal(s: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[i..] {
        s.push(char::from(*d));
    }
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    error: Option<ApiError>,
    #[serde(default)]
    stream: Option<String>,
    #[serde(default)]
    seq: u64,
    #[serde(default)]
    duplicate: bool,
}

#[derive(Deserialize)]
struct ApiError {
    #[serde(default)]
    code: u16,
    #[serde(default)]
    err_code: u64,
    #[serde(default)]
    description: Option<String>,
}

/// Whether an acknowledgement says stored; the error text otherwise,
/// worded as async-nats words it (sink::nats::trouble reads it).
fn verdict(msg: &Message) -> Result<Stored, String> {
    if let Some(status) = msg.status {
        if status == StatusCode::NO_RESPONDERS {
            return Err("no stream found for given subject".into());
        }
        return Err(format!(
            "publish failed: the server answered status {status}"
        ));
    }
    // Built once: memmem::find builds its searcher on every call, which
    // cost more than the rest of handling an acknowledgement.
    static ERROR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"error\""));
    let p = &msg.payload[..];
    // The server writes a success as {"stream":…,"seq":…[,"duplicate":true]}.
    // A duplicate (rare) is read whole, for where its original is.
    if p.starts_with(b"{\"stream\":") && ERROR.find(p).is_none() && !p.ends_with(b"true}") {
        return Ok(None);
    }
    match serde_json::from_slice::<Answer>(p) {
        Ok(Answer { error: Some(e), .. }) => Err(format!(
            "publish failed: {} (code {}, error code {})",
            e.description.as_deref().unwrap_or("unknown"),
            e.code,
            e.err_code
        )),
        Ok(Answer {
            stream: Some(stream),
            seq,
            duplicate,
            ..
        }) => Ok(duplicate.then_some(Duplicate { stream, seq })),
        _ => Err(format!(
            "publish failed: an acknowledgement that is not JetStream's ({} bytes)",
            p.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn msg(subject: &str, payload: &str) -> Message {
        Message {
            subject: Subject::from(subject),
            reply: None,
            payload: Bytes::from(payload.to_string()),
            headers: None,
            status: None,
            description: None,
            length: payload.len(),
        }
    }

    #[test]
    fn acknowledgements_in_any_order_find_their_publish() {
        let t0 = Instant::now();
        let mut acks = Acks::new("_INBOX.x", Duration::from_secs(5));
        assert_eq!(acks.filter(), "_INBOX.x.*");
        let r: Vec<Subject> = (0..3).map(|i| acks.add(i, t0)).collect();
        assert_eq!(r[2].as_str(), "_INBOX.x.2");
        let ok = r#"{"stream":"EVENTS","seq":7}"#;
        assert_eq!(acks.arrived(&msg("_INBOX.x.1", ok)), Some((1, Ok(None))));
        assert_eq!(acks.len(), 2);
        // The same answer again, or one for nothing sent: ignored.
        assert_eq!(acks.arrived(&msg("_INBOX.x.1", ok)), None);
        assert_eq!(acks.arrived(&msg("_INBOX.x.9", ok)), None);
        assert_eq!(acks.arrived(&msg("_INBOX.y.0", ok)), None);
        let dup = r#"{"stream":"EVENTS","seq":7,"duplicate":true}"#;
        let original = Duplicate {
            stream: "EVENTS".into(),
            seq: 7,
        };
        assert_eq!(
            acks.arrived(&msg("_INBOX.x.0", dup)),
            Some((0, Ok(Some(original))))
        );
        let full =
            r#"{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"}}"#;
        assert_eq!(
            acks.arrived(&msg("_INBOX.x.2", full)),
            Some((
                2,
                Err(
                    "publish failed: maximum messages exceeded (code 503, error code 10077)".into()
                )
            ))
        );
        assert!(acks.is_empty());
        assert_eq!(acks.deadline(), None);
        assert_eq!(acks.add(3, t0).as_str(), "_INBOX.x.3");
    }

    #[test]
    fn unanswered_publishes_expire_oldest_first_and_late_answers_are_ignored() {
        let t0 = Instant::now();
        let mut acks = Acks::new("i", Duration::from_secs(5));
        acks.add("a", t0);
        acks.add("b", t0 + Duration::from_secs(1));
        acks.add("c", t0 + Duration::from_secs(9));
        assert_eq!(acks.deadline(), Some(t0 + Duration::from_secs(5)));
        assert!(acks.expired(t0 + Duration::from_secs(4)).is_empty());
        assert_eq!(acks.expired(t0 + Duration::from_secs(6)), vec!["a", "b"]);
        assert_eq!(acks.len(), 1);
        assert_eq!(acks.arrived(&msg("i.0", r#"{"stream":"S","seq":1}"#)), None);
        assert_eq!(acks.deadline(), Some(t0 + Duration::from_secs(14)));
        assert_eq!(acks.unsend(), Some("c"));
        assert!(acks.is_empty());
    }

    #[test]
    fn a_lost_acknowledgement_holds_at_most_three_windows_of_places() {
        let t0 = Instant::now();
        let mut acks = Acks::new("i", Duration::from_secs(5));
        acks.add(0u64, t0); // never answered
        let ok = r#"{"stream":"S","seq":1}"#;
        let mut n = 1u64;
        while acks.has_room(4) {
            acks.add(n, t0);
            assert!(acks.arrived(&msg(&format!("i.{n}"), ok)).is_some());
            n += 1;
        }
        assert_eq!(n, 12, "3 x 4 places, one of them the lost one");
        assert_eq!(acks.len(), 1);
        // Once the lost one times out, all the places are free again.
        assert_eq!(acks.expired(t0 + Duration::from_secs(5)), vec![0]);
        assert!(acks.has_room(4));
        assert_eq!(acks.deadline(), None);
    }

    #[test]
    fn no_responders_and_odd_answers_are_failures() {
        let mut acks = Acks::new("i", Duration::from_secs(5));
        acks.add((), Instant::now());
        let mut m = msg("i.0", "");
        m.status = Some(StatusCode::NO_RESPONDERS);
        assert_eq!(
            acks.arrived(&m),
            Some(((), Err("no stream found for given subject".into())))
        );
        acks.add((), Instant::now());
        let (_, r) = acks.arrived(&msg("i.1", "hello")).unwrap();
        assert!(r.unwrap_err().contains("not JetStream's"));
    }
}
