//! Text from a peer, a source or a plugin, made safe to show or store.
//!
//! Three jobs, each done once here and used by `app` and every plugin:
//! - [`escape_for_terminal`]: such text is printed as data, never as terminal
//!   commands. Control characters (ESC sequences, OSC title and hyperlink
//!   codes, `ESC[2J`, `\r` that rewrites a line, newlines that forge lines,
//!   C1 codes such as U+009B CSI), bidirectional overrides and isolates
//!   (U+202E makes `exe.txt` read as `txt.exe`) and invisible format
//!   characters are shown as escapes instead of being sent raw.
//! - [`shorten`]: a peer's error body can be any size; what is printed of it
//!   is bounded.
//! - [`mask_url`]: a password or token in a URL is never printed, logged
//!   or stored in clear (the rule is [`crate::redact`]'s).
//!
//! JSON output needs none of this: serde_json escapes control characters,
//! and JSON is for programs (print it exactly).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal raw: a control character (C0, DEL,
/// C1), a bidirectional control, or an invisible format character that can
/// hide or reorder what is shown.
///
/// ```
/// use app_plugin::text::is_dangerous;
/// assert!(is_dangerous('\x1b') && is_dangerous('\u{9b}') && is_dangerous('\u{202e}'));
/// assert!(!is_dangerous('a') && !is_dangerous('é') && !is_dangerous('✓'));
/// ```
pub fn is_dangerous(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // soft hyphen, Arabic letter mark, Mongolian vowel separator
            '\u{ad}' | '\u{61c}' | '\u{180e}'
            // zero-width space/joiners, LRM, RLM
            | '\u{200b}'..='\u{200f}'
            // line and paragraph separators, LRE, RLE, PDF, LRO, RLO
            | '\u{2028}'..='\u{202e}'
            // word joiner, invisible operators, LRI, RLI, FSI, PDI, deprecated format controls
            | '\u{2060}'..='\u{206f}'
            // byte order mark / zero-width no-break space
            | '\u{feff}'
            // interlinear annotation controls
            | '\u{fff9}'..='\u{fffb}'
            // tag characters (invisible)
            | '\u{e0000}'..='\u{e007f}')
}

/// `text` with every [dangerous](is_dangerous) character written as an
/// escape: `\n`, `\r`, `\t`, `\x1b` for the others below U+0080, and
/// `\u{202e}` above. Everything else, non-ASCII letters included, is kept.
/// Borrowed (no copy) when there is nothing to escape.
///
/// ```
/// use app_plugin::text::escape_for_terminal;
/// assert_eq!(escape_for_terminal("plain ünïcode ✓"), "plain ünïcode ✓");
/// assert_eq!(
///     escape_for_terminal("a\x1b]0;pwned\x07b\nc\rd\u{9b}2J\u{202e}txt.exe"),
///     "a\\x1b]0;pwned\\x07b\\nc\\rd\\u{9b}2J\\u{202e}txt.exe"
/// );
/// ```
pub fn escape_for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_dangerous) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_dangerous(c) && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if is_dangerous(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The most of a peer's error body printed by [`shorten_for_terminal`].
pub const ERROR_BODY_MAX: usize = 512;

/// The first `max` bytes of `text` (cut at a character boundary), followed
/// by `… (N bytes more)` when there was more.
///
/// ```
/// use app_plugin::text::shorten;
/// assert_eq!(shorten("short", 512), "short");
/// assert_eq!(shorten(&"x".repeat(600), 512), format!("{}… (88 bytes more)", "x".repeat(512)));
/// assert_eq!(shorten("ééé", 3), "é… (4 bytes more)");
/// ```
pub fn shorten(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!(
        "{}… ({} bytes more)",
        &text[..cut],
        text.len() - cut
    ))
}

/// A peer's text (an error body, a message) as one safe line for a
/// terminal: shortened to [`ERROR_BODY_MAX`] bytes, then escaped.
///
/// ```
/// use app_plugin::text::shorten_for_terminal;
/// let body = format!("<h1>\x1b[2J{}</h1>", "y".repeat(130_000));
/// let shown = shorten_for_terminal(&body);
/// assert!(shown.len() < 600 && shown.starts_with("<h1>\\x1b[2J") && shown.ends_with("bytes more)"));
/// ```
pub fn shorten_for_terminal(text: &str) -> String {
    escape_for_terminal(&shorten(text, ERROR_BODY_MAX)).into_owned()
}

// The one masking rule lives in `crate::redact`; these names stay for
// the callers that know it as text.
pub use crate::redact::{has_secret, MASK};

/// [`crate::redact::url`], owned.
///
/// ```
/// use app_plugin::text::mask_url;
/// assert_eq!(mask_url("nats://u:hunter3@127.0.0.1:4222"), "nats://***:***@127.0.0.1:4222");
/// assert_eq!(mask_url("not a url"), "not a url");
/// ```
pub fn mask_url(url: &str) -> String {
    crate::redact::url(url).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_and_bidi_character_is_escaped() {
        for c in (0u32..0x20).chain(0x7f..0xa0).chain([
            0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f,
            0x2028, 0x2029, 0xfeff, 0x200b,
        ]) {
            let c = char::from_u32(c).unwrap();
            let text = format!("a{c}b");
            let shown = escape_for_terminal(&text);
            assert!(!shown.contains(c), "{c:?} kept in {shown:?}");
            assert!(
                shown.starts_with("a\\") && shown.ends_with('b'),
                "{shown:?}"
            );
        }
    }
}
