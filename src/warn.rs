//! One way `app` itself prints a warning: `app: warning: <what>` on stderr,
//! as its errors are `app: <what>` (plugins' own lines are theirs).
//!
//! Text from a peer, an index or a plugin in `message` must already be
//! escaped (`app_plugin::text::escape_for_terminal`).

/// The line a warning is printed as.
///
/// ```
/// assert_eq!(app::warn::line("index 'x' is not signed"), "app: warning: index 'x' is not signed");
/// ```
pub fn line(message: impl std::fmt::Display) -> String {
    format!("app: warning: {message}")
}

/// Prints `message` as a warning of `app`.
pub fn warn(message: impl std::fmt::Display) {
    eprintln!("{}", line(message));
}
