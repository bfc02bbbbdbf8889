//! An event's place in the source's stream, and the dedup key derived from
//! it (the NATS sink's `Nats-Msg-Id`, the checkpoint's position).
//!
//! The SSE rules (WHATWG): an event without an `id:` of its own carries the
//! last id in force, and an empty `id:` clears it. Taking "the id in force"
//! as the key gave every event after an id the key of the event that set
//! it, and JetStream dropped them as duplicates (issue 29: 3 of 8 stored).
//! So the key is
//!
//! - the event's own id when its block has an `id:` line;
//! - for an event without one, the last id, its position since that id
//!   (1, 2, …) and a hash of its data: `LASTID#3.9f86d081884c7d65`;
//! - none before any id, or after an empty `id:` (such events are relayed
//!   at least once, with no key).
//!
//! A resume by `Last-Event-ID: LASTID` replays the events after LASTID, so
//! the parser counts from 0 again on every connection and the replayed
//! events get the keys they had: the broker stores each once. The hash
//! keeps a source that does not replay (it ignores `Last-Event-ID`) from
//! handing new events the keys of old ones: different data, different key.
//! A `#` in an id is doubled in the key, so an own id can never look like a
//! derived one (`a#1` is the key `a##1`; the second event after `a` is
//! `a#2.…`).

use std::fmt::Write as _;
use std::sync::Arc;

/// An event's position and dedup key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey {
    /// The last SSE id in force: what a resume sends as `Last-Event-ID`.
    id: Arc<str>,
    /// The dedup key (see the module docs) when it is not `id` itself: an
    /// own id without `#`, the common case, costs one reference count.
    key: Option<Arc<str>>,
}

impl EventKey {
    /// The key of an event with its own `id:`.
    pub fn own(id: Arc<str>) -> EventKey {
        let has_hash = memchr::memchr(b'#', id.as_bytes()).is_some();
        EventKey::own_scanned(id, has_hash)
    }

    /// The same, for an id already scanned for `#` (the parser's one pass
    /// over an id checks its bytes and looks for `#` at once).
    pub fn own_scanned(id: Arc<str>, has_hash: bool) -> EventKey {
        let key = has_hash.then(|| Arc::from(escape(&id)));
        EventKey { id, key }
    }

    /// The key of the `since`-th event (from 1) after the one that set
    /// `id`, whose data is `data`.
    pub fn after(id: &Arc<str>, since: u64, data: &[u8]) -> EventKey {
        let mut key = escape(id);
        // Writing into a String cannot fail.
        let _ = write!(key, "#{since}.{:016x}", fnv1a(data));
        EventKey {
            key: Some(Arc::from(key)),
            id: id.clone(),
        }
    }

    /// Rebuilds a key read from the checkpoint file: `key` absent means
    /// the id's own key.
    pub fn restored(id: &str, key: Option<&str>) -> EventKey {
        let id: Arc<str> = Arc::from(id);
        match key {
            Some(key) if key != &*id => EventKey {
                key: Some(Arc::from(key)),
                id,
            },
            _ => EventKey::own(id),
        }
    }

    /// The dedup key.
    pub fn as_str(&self) -> &str {
        self.key.as_deref().unwrap_or(&self.id)
    }

    /// The SSE id to resume after (`Last-Event-ID`).
    pub fn last_event_id(&self) -> &str {
        &self.id
    }

    /// The same, shared.
    pub fn last_event_id_shared(&self) -> &Arc<str> {
        &self.id
    }

    /// Whether the event had an `id:` of its own (its key is its id's).
    pub fn is_own(&self) -> bool {
        match &self.key {
            None => true,
            Some(key) => **key == *escape_if_needed(&self.id),
        }
    }
}

fn escape(id: &str) -> String {
    id.replace('#', "##")
}

fn escape_if_needed(id: &str) -> std::borrow::Cow<'_, str> {
    if id.contains('#') {
        escape(id).into()
    } else {
        id.into()
    }
}

/// FNV-1a, 64 bits: the same on every machine and in every release (std's
/// hasher promises neither), and cheap; it only has to tell two events at
/// the same position apart, not resist an attacker (a source that wants its
/// events deduplicated can simply repeat an id).
fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_are_their_keys_and_never_look_derived() {
        let k = EventKey::own(Arc::from("17"));
        assert_eq!((k.as_str(), k.last_event_id()), ("17", "17"));
        assert!(k.is_own());
        let hashy = EventKey::own(Arc::from("a#1"));
        assert_eq!(hashy.as_str(), "a##1");
        assert!(hashy.is_own());
        let derived = EventKey::after(&Arc::from("a"), 1, b"x");
        assert!(!derived.is_own());
        assert_ne!(derived.as_str(), hashy.as_str());
        assert!(derived.as_str().starts_with("a#1."), "{}", derived.as_str());
        assert_eq!(derived.last_event_id(), "a");
    }

    #[test]
    fn derived_keys_are_reproducible_and_distinct() {
        let id: Arc<str> = Arc::from("7");
        let a = EventKey::after(&id, 1, b"one");
        assert_eq!(
            a,
            EventKey::after(&id, 1, b"one"),
            "a replay gives the same key"
        );
        assert_ne!(a.as_str(), EventKey::after(&id, 2, b"one").as_str());
        assert_ne!(a.as_str(), EventKey::after(&id, 1, b"two").as_str());
        // FNV-1a's published test vector: the key is stable across releases.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let restored = EventKey::restored("7", Some(a.as_str()));
        assert_eq!(restored, a);
        assert_eq!(EventKey::restored("x#", None).as_str(), "x##");
    }
}
