//! Exit codes of `app` itself (plugins' codes pass through unchanged).

/// The codes `app_fetch` can end with too (1 failure, 2 usage, 3 download,
/// 5 verify): defined once, in the crate both use, since `app` reports
/// `app_fetch`'s code as its own.
pub use app_fetch_protocol::code::{DOWNLOAD, FAILURE, USAGE, VERIFY};

/// `plugin list` found problems (shadowed, not executable, overriding a built-in).
pub const WARNINGS: i32 = 1;
/// The plugin exists but cannot be started (no run bit, bad `#!` interpreter).
pub const CANNOT_RUN: i32 = 126;
/// No built-in, alias or plugin has that name.
pub const NOT_FOUND: i32 = 127;
/// Added to a signal number when the plugin was killed by that signal.
pub const SIGNAL_BASE: i32 = 128;
/// `plugin install`/`remove`/`upgrade` refused to touch a plugin: it
/// exists (no `--force`), or `install` did not put it there.
pub const REFUSED: i32 = 4;
/// A plugin index was refused as stale: its serial went back (a
/// rollback) or it is past its `expires`.
pub const STALE_INDEX: i32 = 6;
/// `plugin install NAME`: no such plugin or version in the indexes, or
/// no build of it for this machine.
pub const UNAVAILABLE: i32 = 7;
/// Building a plugin from source failed (no cargo, or cargo failed).
pub const BUILD: i32 = 8;
/// `plugin outdated`: some installed plugins have a newer version in their
/// index (for scripts: 0 means none).
pub const OUTDATED: i32 = 9;
/// `plugin apply --locked`: `plugins.lock` is missing or disagrees with
/// `plugins.json` (as `cargo --locked` refuses).
pub const LOCKED: i32 = 10;
