//! The commands `app` ships, and the names under them that only trusted
//! places may add (git's rule for its own commands, not kubectl's "anything
//! on PATH wins").
//!
//! A command path that starts with a shipped command's name resolves only
//! to files in `APP_PLUGIN_PATH` or the shipped directory when it is longer
//! than that name: `app-event-repeater-run` on `PATH`, or written into the
//! user plugin directory, never replaces `app event-repeater run`. `install`
//! and index entries refuse such names, and `plugin list` warns about them.

/// The plugins this project ships (their names after `app-`). Files in the
/// shipped directory count too (see [`crate::discovery::Origin::AppDir`]);
/// this list holds when `app` and its plugins were put on `PATH` instead.
pub const SHIPPED: &[&str] = &[
    "event-repeater",
    "event-repeater-manage",
    "event-time",
    "listener-tracer",
];

/// `name` with underscores read as dashes, as resolution reads them.
pub fn normalized(name: &str) -> String {
    name.replace('_', "-")
}

/// Whether `name` is one of [`SHIPPED`].
pub fn is_shipped(name: &str) -> bool {
    let name = normalized(name);
    SHIPPED.contains(&name.as_str())
}

/// Whether `name` is strictly under `shipped` (`event-repeater-run` under
/// `event-repeater`); dashes and underscores alike.
pub fn is_under(name: &str, shipped: &str) -> bool {
    let (name, shipped) = (normalized(name), normalized(shipped));
    name.len() > shipped.len()
        && name.starts_with(&shipped)
        && name.as_bytes()[shipped.len()] == b'-'
}

/// The shipped command of [`SHIPPED`] that `name` is strictly under, the
/// longest when several are.
pub fn under_shipped(name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .copied()
        .filter(|s| is_under(name, s))
        .max_by_key(|s| s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_under_a_shipped_command() {
        assert_eq!(under_shipped("event-repeater-run"), Some("event-repeater"));
        assert_eq!(under_shipped("event_repeater-run"), Some("event-repeater"));
        assert_eq!(
            under_shipped("event-repeater-manage-x"),
            Some("event-repeater-manage")
        );
        assert_eq!(under_shipped("event-repeater"), None);
        assert_eq!(under_shipped("event-repeaterx"), None);
        assert_eq!(under_shipped("hello"), None);
        assert!(is_shipped("event_time"));
        assert!(!is_shipped("event-time-x"));
    }
}
