//! What a plugin may be called when `app` installs or scaffolds it.
//!
//! Stricter than what the dispatcher runs: lowercase ASCII letters, digits,
//! `-` and `_`, starting with a letter or digit, at most [`MAX_LEN`] bytes,
//! and never a built-in command nor a name whose first word is one
//! (`plugin-foo` could only be typed as `app plugin foo`, which is the
//! built-in `plugin`; dashes and underscores count alike, as in resolution),
//! nor a name under a shipped command (`event-repeater-run`, see
//! [`crate::shipped`]).

use crate::cli::{is_builtin, BUILTINS};
use crate::discovery::PLUGIN_PREFIX;

/// The longest plugin name `install` accepts.
pub const MAX_LEN: usize = 64;

/// Why a name cannot be a plugin name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    Empty,
    TooLong,
    /// A character outside `a-z 0-9 - _`.
    BadChar(char),
    /// Starts with `-` or `_`.
    BadStart(char),
    /// Is, or starts with the word of, a built-in command.
    Builtin(&'static str),
    /// Is under a shipped command's name (see [`crate::shipped`]).
    UnderShipped(&'static str),
}

impl std::fmt::Display for NameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameError::Empty => f.write_str("it is empty"),
            NameError::TooLong => write!(f, "it is longer than {MAX_LEN} characters"),
            NameError::BadChar(c) => write!(
                f,
                "it contains {c:?}; use lowercase letters, digits, '-' and '_'"
            ),
            NameError::BadStart(c) => {
                write!(f, "it starts with {c:?}; start with a letter or digit")
            }
            NameError::Builtin(b) => write!(
                f,
                "it would replace the built-in command '{b}', and built-ins always win"
            ),
            NameError::UnderShipped(s) => write!(
                f,
                "it is under the shipped command '{s}' ('app {}' …), a name only app's own plugins may use",
                s.replace('-', " ")
            ),
        }
    }
}

/// Checks that `name` (without the `app-` prefix) may be installed.
///
/// ```
/// use app::install::name::validate;
/// assert!(validate("event-time").is_ok());
/// assert!(validate("plugin-foo").is_err());
/// assert!(validate("Foo").is_err());
/// ```
pub fn validate(name: &str) -> Result<(), NameError> {
    let first = name.chars().next().ok_or(NameError::Empty)?;
    if name.len() > MAX_LEN {
        return Err(NameError::TooLong);
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-' || *c == '_'))
    {
        return Err(NameError::BadChar(c));
    }
    if first == '-' || first == '_' {
        return Err(NameError::BadStart(first));
    }
    let first_word = name.split(['-', '_']).next().unwrap_or(name);
    if is_builtin(name) || is_builtin(first_word) {
        let builtin = BUILTINS
            .iter()
            .copied()
            .find(|b| *b == name || *b == first_word)
            .unwrap_or("plugin");
        return Err(NameError::Builtin(builtin));
    }
    if let Some(shipped) = crate::shipped::under_shipped(name) {
        return Err(NameError::UnderShipped(shipped));
    }
    Ok(())
}

/// The plugin name a file name stands for: `app-foo` → `foo`.
pub fn from_file_name(file_name: &str) -> Option<&str> {
    file_name
        .strip_prefix(PLUGIN_PREFIX)
        .filter(|rest| !rest.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for ok in [
            "foo",
            "event-time",
            "foo_bar",
            "x1",
            "9lives",
            "helper",
            "versions2",
        ] {
            assert_eq!(validate(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn refuses_bad_characters_and_starts() {
        assert_eq!(validate(""), Err(NameError::Empty));
        assert_eq!(validate("Foo"), Err(NameError::BadChar('F')));
        assert_eq!(validate("a/b"), Err(NameError::BadChar('/')));
        assert_eq!(validate("a b"), Err(NameError::BadChar(' ')));
        assert_eq!(validate("-x"), Err(NameError::BadStart('-')));
        assert_eq!(validate("_x"), Err(NameError::BadStart('_')));
        assert_eq!(validate(&"a".repeat(65)), Err(NameError::TooLong));
    }

    #[test]
    fn refuses_builtins_and_their_words() {
        assert_eq!(validate("plugin"), Err(NameError::Builtin("plugin")));
        assert_eq!(validate("plugin-foo"), Err(NameError::Builtin("plugin")));
        assert_eq!(validate("help_me"), Err(NameError::Builtin("help")));
        assert_eq!(validate("version"), Err(NameError::Builtin("version")));
        assert_eq!(
            validate("completion-x"),
            Err(NameError::Builtin("completion"))
        );
        // `__complete` starts with '_', refused before the built-in check.
        assert!(validate("__complete").is_err());
    }

    #[test]
    fn refuses_names_under_a_shipped_command() {
        assert_eq!(
            validate("event-repeater-run"),
            Err(NameError::UnderShipped("event-repeater"))
        );
        assert_eq!(
            validate("event_time-x"),
            Err(NameError::UnderShipped("event-time"))
        );
        assert_eq!(validate("event-timer"), Ok(()));
    }

    #[test]
    fn file_names_give_plugin_names() {
        assert_eq!(from_file_name("app-foo"), Some("foo"));
        assert_eq!(from_file_name("app-"), None);
        assert_eq!(from_file_name("foo"), None);
    }
}
