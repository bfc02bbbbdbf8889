//! Text from other programs made safe for a terminal: what a trusted plugin
//! says about itself (metadata), a listener's abort reason, recorded
//! sources. Such text is printed as data, never as terminal commands, so
//! control characters (ESC sequences, OSC title or hyperlink codes, `\r`
//! that rewrites a line, newlines that forge extra lines, C1 codes such as
//! U+009B CSI) are shown escaped instead of being sent raw.

use std::borrow::Cow;

/// `text` with every control character (Unicode category Cc: C0, DEL, C1)
/// written as an escape: `\n`, `\r`, `\t`, `\x1b`, `\u{9b}`.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x80 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_the_rest_kept() {
        assert!(matches!(printable("plain text, ünïcode"), Cow::Borrowed(_)));
        assert_eq!(
            printable("a\x1b]0;pwned\x07b\nc\rd\te\u{9b}31m\x7f"),
            "a\\x1b]0;pwned\\x07b\\nc\\rd\\te\\u{9b}31m\\x7f"
        );
    }
}
