//! Which SSE ids are kept: an id goes back to the source as a
//! `Last-Event-ID` header and into the checkpoint, so one that no header
//! may hold (a control character), one that is not UTF-8, or one over
//! [`MAX_ID`] bytes is refused (the last id stays what it was).

use super::MAX_ID;

/// Why an `id:` was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdRefusal {
    /// Over [`MAX_ID`] bytes: this many.
    #[error("of {0} bytes, over the limit of {MAX_ID} bytes")]
    TooLong(usize),
    /// A control character (other than tab), which no HTTP header may hold.
    #[error("holding a control character, which cannot be sent back as a Last-Event-ID header")]
    Control,
    /// Not UTF-8.
    #[error("that is not UTF-8")]
    NotUtf8,
}

/// What one pass over an id found: printable ASCII only (no further check
/// needed), and whether it holds a `#` (see [`crate::event_key`]).
pub(super) fn scan(id: &[u8]) -> (bool, bool) {
    // Two plain folds the compiler vectorises: ids are on every event.
    let printable = id
        .iter()
        .fold(true, |ok, &b| ok & (0x20..0x7f).contains(&b));
    let hash = id.iter().fold(false, |h, &b| h | (b == b'#'));
    (printable, hash)
}

/// Why `id` cannot be kept as the last event id, if it cannot: also asked
/// of an id read from an older release's checkpoint.
pub fn refuse_id(id: &[u8]) -> Option<IdRefusal> {
    if id.len() > MAX_ID {
        return Some(IdRefusal::TooLong(id.len()));
    }
    if id.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Some(IdRefusal::Control);
    }
    if std::str::from_utf8(id).is_err() {
        return Some(IdRefusal::NotUtf8);
    }
    None
}
