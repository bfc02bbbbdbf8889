//! The publishing id of an event, from its dedup key.
//!
//! A RabbitMQ stream keeps, per producer name, the highest publishing id it
//! stored, and drops a message whose id is not above it (and confirms it).
//! So the ids must grow in the source's order, and every repeater of the
//! source, at every start, must give an event the same id. Counting events
//! cannot do that: a repeater that starts later, or resumes from its
//! checkpoint, does not know how many events came before. The source's own
//! numbering can:
//!
//! - an event whose dedup key is a decimal number (its own SSE `id:`, all
//!   ASCII digits, up to `u64::MAX`) is published under the producer name
//!   with that number as its publishing id. `app-event-time` (microsecond
//!   sequence numbers), `loadgen sse` and every feed that numbers its
//!   events upwards are deduplicated across crashes, restarts and
//!   active-active repeaters;
//! - any other event (an id that is not a number, an event without an id
//!   of its own, whose key is derived: `LASTID#N.HASH`, or no key at all)
//!   is published by a producer without a name: stored at least once, with
//!   no broker-side deduplication. Both producers share one connection, so
//!   the stream keeps the source's order.
//!
//! Where the rule does not hold: a source whose numbers go down (it numbers
//! from 1 again after its own restart) has its events dropped by the stream
//! as duplicates until it passes the highest number stored; the sink warns
//! when the numbers it sends go down. Give such a source a new
//! `--source-id`. Numbers with leading zeros are taken by value (`007` is 7).

use crate::event_key::EventKey;

/// The publishing id of an event with `key`, when it has one (see the
/// module docs); `None`: publish it without deduplication.
pub fn publishing_id(key: Option<&EventKey>) -> Option<u64> {
    // A derived key always holds '#', so all digits is an own id.
    let s = key?.as_str();
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The producer name (RabbitMQ's "publisher reference") for `source_id`:
/// the same for every repeater of one source. RabbitMQ takes up to 256
/// bytes; a longer id is shortened to a prefix and a hash of the whole.
pub fn producer_name(source_id: &str) -> String {
    let name = format!("app-event-repeater:{source_id}");
    if name.len() <= 256 {
        return name;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in source_id.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut end = 200;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}#{h:016x}", &name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn decimal_own_ids_are_publishing_ids_and_nothing_else_is() {
        let own = |s: &str| EventKey::own(Arc::from(s));
        assert_eq!(publishing_id(Some(&own("17"))), Some(17));
        assert_eq!(publishing_id(Some(&own("0"))), Some(0));
        assert_eq!(
            publishing_id(Some(&own("1733151234567890"))),
            Some(1_733_151_234_567_890)
        );
        assert_eq!(
            publishing_id(Some(&own("18446744073709551615"))),
            Some(u64::MAX)
        );
        for bad in [
            "18446744073709551616",
            "",
            "1a",
            "-1",
            "+1",
            " 1",
            "a#1",
            "1.5",
        ] {
            assert_eq!(publishing_id(Some(&own(bad))), None, "{bad:?}");
        }
        // An event without an id of its own after event 17: derived key.
        let derived = EventKey::after(&Arc::from("17"), 1, b"x");
        assert_eq!(publishing_id(Some(&derived)), None);
        assert_eq!(publishing_id(None), None);
    }

    #[test]
    fn producer_names_are_stable_and_bounded() {
        assert_eq!(producer_name("site-a"), "app-event-repeater:site-a");
        let long = "é".repeat(300);
        let n = producer_name(&long);
        assert!(n.len() <= 256, "{}", n.len());
        assert_eq!(n, producer_name(&long));
        assert_ne!(n, producer_name(&format!("{long}x")));
    }
}
