//! The benchmark event: built by the generators, read back by the subscriber.
//!
//! Every hop carries the same bytes: the event document an event source sends
//! and the repeater publishes,
//! `{"topic":"bench/seq","type":"bench","id":"<n>","timestamp":"…","data":{"seq":n,"t":ns}}`,
//! padded inside `data` (`"pad":"xxx…"`) to a fixed size, so that the direct
//! and bridged runs publish exactly what the repeater publishes. Sequence
//! number 0 marks warm-up events, which the subscriber does not count.

use std::time::{SystemTime, UNIX_EPOCH};

/// The largest MQTT packet a loadgen client sends or accepts: bigger than
/// any benchmark payload.
pub const MAX_PACKET: usize = 1024 * 1024;

/// The topic of the benchmark events.
pub const TOPIC: &str = "bench/seq";

/// Bytes the pad field adds around its filler: `,"pad":""`.
const PAD_OVERHEAD: usize = 9;

/// Nanoseconds since the Unix epoch, the clock both ends of a run share.
/// When the `n`th event (from 0) is due at `rate` events/s: its offset
/// from the start; `None` when `rate` is 0 (as fast as it goes).
pub fn due_after(n: u64, rate: u64) -> Option<std::time::Duration> {
    n.saturating_mul(1_000_000_000)
        .checked_div(rate)
        .map(std::time::Duration::from_nanos)
}

pub fn now_ns() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// The event document for `seq`, sent at `t_ns`, padded to `size` bytes when
/// it is shorter (never truncated).
pub fn event_json(topic: &str, seq: u64, t_ns: u64, size: usize) -> String {
    let timestamp = rfc3339_millis(t_ns);
    let mut json = format!(
        "{{\"topic\":\"{topic}\",\"type\":\"bench\",\"id\":\"{seq}\",\"timestamp\":\"{timestamp}\",\"data\":{{\"seq\":{seq},\"t\":{t_ns}"
    );
    let unpadded = json.len() + 2;
    if size >= unpadded + PAD_OVERHEAD {
        json.push_str(",\"pad\":\"");
        json.push_str(&"x".repeat(size - unpadded - PAD_OVERHEAD));
        json.push('"');
    }
    json.push_str("}}");
    json
}

/// The smallest `size` that gives every event up to `max_seq` the same size.
pub fn min_fixed_size(topic: &str, max_seq: u64) -> usize {
    event_json(topic, max_seq, now_ns(), 0).len() + PAD_OVERHEAD
}

/// What the subscriber reads from a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The sequence number.
    pub seq: u64,
    /// The send time in ns since the epoch, when the payload has one.
    pub t_ns: Option<u64>,
}

/// Reads the sequence number and send time from a payload: `data.seq` and
/// `data.t` of a benchmark event, or a numeric `data` (`Data`) as in
/// `app-event-time`'s numbered stream (`test/seq`). `None` when there is no
/// sequence number. A scan rather than a JSON parse, to keep the subscriber
/// cheap at 100k events/s; keys are matched with their quotes and colon.
pub fn read_stamp(payload: &[u8]) -> Option<Stamp> {
    if let Some(seq) = number_after(payload, b"\"seq\":") {
        return Some(Stamp {
            seq,
            t_ns: number_after(payload, b"\"t\":"),
        });
    }
    let seq =
        number_after(payload, b"\"data\":").or_else(|| number_after(payload, b"\"Data\":"))?;
    Some(Stamp { seq, t_ns: None })
}

/// The unsigned integer right after `key` (spaces allowed between).
fn number_after(hay: &[u8], key: &[u8]) -> Option<u64> {
    let at = hay.windows(key.len()).position(|w| w == key)? + key.len();
    let rest = &hay[at..];
    let start = rest.iter().position(|b| *b != b' ')?;
    let digits = rest[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 || digits > 20 {
        return None;
    }
    std::str::from_utf8(&rest[start..start + digits])
        .ok()?
        .parse()
        .ok()
}

/// `t_ns` as RFC 3339 in UTC with milliseconds: `2026-11-29T21:56:27.123Z`.
pub fn rfc3339_millis(t_ns: u64) -> String {
    app_plugin::time::rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_nanos(t_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_padded_to_the_same_size() {
        let size = min_fixed_size(TOPIC, 10_000_000);
        let a = event_json(TOPIC, 1, now_ns(), size);
        let b = event_json(TOPIC, 9_999_999, now_ns(), size);
        assert_eq!(a.len(), size);
        assert_eq!(b.len(), size);
        let v: serde_json::Value = serde_json::from_str(&b).unwrap();
        assert_eq!(v["data"]["seq"], 9_999_999);
        assert_eq!(v["id"], "9999999");
        assert_eq!(v["topic"], TOPIC);
    }

    #[test]
    fn stamps_are_read_back_whatever_the_key_order() {
        let json = event_json(TOPIC, 42, 1_700_000_000_123_456_789, 200);
        assert_eq!(
            read_stamp(json.as_bytes()),
            Some(Stamp {
                seq: 42,
                t_ns: Some(1_700_000_000_123_456_789)
            })
        );
        let reordered = br#"{"data":{"t":5,"pad":"x","seq":7},"id":"7","timestamp":"t","topic":"bench/seq","type":"bench"}"#;
        assert_eq!(
            read_stamp(reordered),
            Some(Stamp {
                seq: 7,
                t_ns: Some(5)
            })
        );
    }

    #[test]
    fn event_time_numbered_events_are_read() {
        let json = br#"{"topic":"test/seq","type":"seq","id":"12","timestamp":"x","data":12}"#;
        assert_eq!(
            read_stamp(json),
            Some(Stamp {
                seq: 12,
                t_ns: None
            })
        );
        assert_eq!(
            read_stamp(br#"{"Data": 3}"#),
            Some(Stamp { seq: 3, t_ns: None })
        );
        assert_eq!(read_stamp(br#"{"data":"x"}"#), None);
        assert_eq!(read_stamp(b"garbage"), None);
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_millis(1_709_210_096_789_000_000),
            "2024-02-29T12:34:56.789Z"
        );
    }
}
