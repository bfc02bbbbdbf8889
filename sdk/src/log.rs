//! A small logger for plugins that honours `app --log` and `app --log-format`.
//!
//! `app` passes the level as `APP_LOG` (0 silent, 1 errors, 2 warnings (the
//! default), 3 info, 4 debug, 5 trace) and the format as `APP_LOG_FORMAT`:
//!
//! - `text`: `app-NAME: warning: message`, one line per message (info lines
//!   have no tag);
//! - `json`: one JSON object per line, `{"time":…,"level":"warn","plugin":"NAME","message":…}`,
//!   with `time` in RFC 3339 (UTC, milliseconds).
//!
//! Besides the five levels, [`notice!`](crate::notice!) writes a line at the
//! default level labelled as info (a daemon's start-up summary), and
//! [`fatal`] the error that ends the program, at any level.
//!
//! Under systemd (`JOURNAL_STREAM` names this process's stderr, see
//! [`journal_priority_prefix`]) every line starts with its syslog priority,
//! `<3>` for an error … `<7>` for debug, so that `journalctl -p warning`
//! filters them; journald strips the prefix, and JSON lines stay JSON there.
//!
//! The level and format are process-wide (set once at start-up, read by
//! every task): every task writes to the same stderr, so passing a logger
//! around would buy nothing. Each line is written with one call, so lines
//! from different threads never mix.
//!
//! The macros are at the crate's root (`app_plugin::info!`) and here, so
//! that `use app_plugin::log::{info, warn};` imports them by path, beside or
//! instead of the `log` crate's:
//!
//! ```
//! use app_plugin::log::{self, debug, info, Format, Level};
//!
//! log::init("demo", Level::Info, Format::Json);
//! info!("listening on {}", "127.0.0.1:8080");
//! debug!("not shown at level info");
//! assert!(log::enabled(Level::Warn) && !log::enabled(Level::Debug));
//! ```

mod line;
mod rate;

use std::fmt;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use crate::context::Context;

pub use crate::level::{
    level_name, parse_level, Format, FormatError, Level, LevelError, DEBUG, ERROR, INFO, OFF,
    TRACE, WARN,
};
// The macros, by path: `use app_plugin::log::{info, warn};` brings them in
// without `#[macro_use]`, and without taking the `log` crate's names.
pub use crate::{debug, error, info, notice, trace, warn};
#[cfg(feature = "log-bridge")]
pub(crate) use line::write_target;
use line::{emit, emit_as, prefix};
pub use line::{journal_priority_prefix, render, render_target};
pub use rate::RateLimited;

static LEVEL: AtomicU8 = AtomicU8::new(WARN as u8);
static JSON: AtomicU8 = AtomicU8::new(0);
static PLUGIN: OnceLock<String> = OnceLock::new();

/// Sets the plugin's name (as `app` names it: `event-time` for
/// `app-event-time`), the level and the format. The name is set once; later
/// calls change only the level and format.
///
/// ```
/// use app_plugin::log::{self, Format};
/// log::init("demo", log::DEBUG, Format::Text);
/// assert!(log::enabled(log::DEBUG));
/// assert_eq!(log::plugin_name(), "demo");
/// ```
pub fn init(plugin: &str, level: Level, format: Format) {
    let _ = PLUGIN.set(plugin.to_string());
    set_level(level);
    set_format(format);
}

/// [`init`] from what `app` said: the plugin's name, `APP_LOG` and
/// `APP_LOG_FORMAT`. [`run`](crate::run) calls it for the plugin.
///
/// ```
/// use app_plugin::log::{self, Format, Level};
/// let mut ctx = app_plugin::context::Context::defaults("demo");
/// ctx.log = Level::Debug;
/// ctx.log_format = Format::Json;
/// log::init_from_context(&ctx);
/// assert_eq!((log::level(), log::format()), (Level::Debug, Format::Json));
/// ```
pub fn init_from_context(ctx: &Context) {
    init(&ctx.plugin_name, ctx.log, ctx.log_format);
}

/// [`init`] from the environment `app` always sets (`APP_PLUGIN_NAME`,
/// `APP_LOG`, `APP_LOG_FORMAT`), before the context is read or the command
/// line parsed, so that even a usage error follows `--log-format`. Missing
/// or unreadable values keep the defaults (level 2, text, the executable's
/// name).
///
/// ```
/// use app_plugin::log::{self, Level};
/// std::env::set_var("APP_LOG", "info");
/// log::init_from_env();
/// assert_eq!(log::level(), Level::Info);
/// ```
pub fn init_from_env() {
    use crate::context::{vars, DEFAULT_LOG};
    let var = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(name) = var(vars::PLUGIN_NAME) {
        let _ = PLUGIN.set(name);
    }
    let level = var(vars::LOG)
        .and_then(|l| parse_level(&l).ok())
        .unwrap_or(DEFAULT_LOG);
    let format = var(vars::LOG_FORMAT)
        .and_then(|f| f.parse().ok())
        .unwrap_or_default();
    init(plugin_name(), level, format);
}

/// Sets the level: off, errors, warnings, info, debug or trace.
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::ERROR);
/// assert!(!app_plugin::log::enabled(app_plugin::log::WARN));
/// ```
pub fn set_level(level: Level) {
    LEVEL.store(u8::from(level), Ordering::Relaxed);
    if let Some(follow) = LEVEL_HOOK.get() {
        follow(level);
    }
}

/// Told every new level: the `log` facade's filter follows it once
/// [`log_bridge`](crate::log_bridge) is installed. A hook rather than a
/// call, so that this module does not depend on the bridge.
static LEVEL_HOOK: OnceLock<fn(Level)> = OnceLock::new();

/// Sets the [`set_level`] hook (once).
#[cfg(feature = "log-bridge")]
pub(crate) fn on_level_change(hook: fn(Level)) {
    let _ = LEVEL_HOOK.set(hook);
}

/// The level in force.
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::INFO);
/// assert_eq!(app_plugin::log::level(), app_plugin::log::Level::Info);
/// ```
pub fn level() -> Level {
    Level::from_number(LEVEL.load(Ordering::Relaxed))
}

/// Sets the format.
///
/// ```
/// use app_plugin::log::{self, Format};
/// log::set_format(Format::Json);
/// assert_eq!(log::format(), Format::Json);
/// ```
pub fn set_format(format: Format) {
    JSON.store(u8::from(format == Format::Json), Ordering::Relaxed);
}

/// The format in force.
///
/// ```
/// assert_eq!(app_plugin::log::format(), app_plugin::log::Format::Text);
/// ```
pub fn format() -> Format {
    if JSON.load(Ordering::Relaxed) == 1 {
        Format::Json
    } else {
        Format::Text
    }
}

/// The plugin name the lines carry: the one given to [`init`], else the
/// running executable's name without `app-`.
///
/// ```
/// assert!(!app_plugin::log::plugin_name().is_empty());
/// ```
pub fn plugin_name() -> &'static str {
    PLUGIN.get_or_init(|| {
        let exe = std::env::args_os()
            .next()
            .and_then(|a| {
                std::path::Path::new(&a)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| "plugin".to_string());
        exe.strip_prefix("app-").unwrap_or(&exe).to_string()
    })
}

/// Whether messages of `level` are written.
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::OFF);
/// assert!(!app_plugin::log::enabled(app_plugin::log::ERROR));
/// ```
pub fn enabled(level: Level) -> bool {
    level != OFF && level <= self::level()
}

/// Writes one line at `level` when it is enabled; the macros
/// ([`error!`](crate::error!) …) call this.
///
/// ```
/// app_plugin::log::write(app_plugin::log::WARN, format_args!("disk {}% full", 91));
/// ```
pub fn write(level: Level, message: fmt::Arguments<'_>) {
    if enabled(level) {
        emit(level, message);
    }
}

/// Writes a line the user should see at the default level (2), such as
/// the one-line summary a daemon prints when it starts: it is written
/// whenever warnings are, and labelled as info (no tag in text, `"info"` in
/// JSON). The [`notice!`](crate::notice!) macro calls this.
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::WARN);
/// app_plugin::log::notice(format_args!("serving on {}", "/run/app/plugins/demo.sock"));
/// ```
pub fn notice(message: fmt::Arguments<'_>) {
    if enabled(WARN) {
        emit_as(INFO, 5, None, message);
    }
}

/// Writes an error that ends the program (a usage error, a fatal one) at
/// any level, `--log 0` included: the exit code alone would not say what
/// to fix. In text it is `app-NAME: message`, the way `app` itself writes
/// its errors (`app: message`); in JSON a line of level `error`.
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::OFF);
/// app_plugin::log::fatal(format_args!("--qos 3: use 0, 1 or 2"));
/// ```
pub fn fatal(message: fmt::Arguments<'_>) {
    if format() == Format::Text {
        let message = message.to_string();
        let line = format!(
            "{}app-{}: {}\n",
            prefix(3),
            plugin_name(),
            crate::text::escape_for_terminal(&message)
        );
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    } else {
        emit(ERROR, message);
    }
}

/// `log!(level, "format", args…)`: logs at `level` when it is enabled.
///
/// ```
/// app_plugin::log!(app_plugin::log::INFO, "{} routes", 3);
/// ```
#[macro_export]
macro_rules! log {
    ($level:expr, $($arg:tt)*) => {
        if $crate::log::enabled($level) {
            $crate::log::write($level, format_args!($($arg)*));
        }
    };
}

/// Logs an error: `error!("cannot bind {addr}: {e}")`.
///
/// ```
/// app_plugin::error!("cannot bind {}: {}", "127.0.0.1:80", "permission denied");
/// ```
#[macro_export]
macro_rules! error { ($($t:tt)*) => { $crate::log!($crate::log::ERROR, $($t)*) } }

/// Logs a warning.
///
/// ```
/// app_plugin::warn!("retrying in {} s", 2);
/// ```
#[macro_export]
macro_rules! warn { ($($t:tt)*) => { $crate::log!($crate::log::WARN, $($t)*) } }

/// Logs at info level (start-up, shutdown).
///
/// ```
/// app_plugin::info!("serving on {}", "/run/x.sock");
/// ```
#[macro_export]
macro_rules! info { ($($t:tt)*) => { $crate::log!($crate::log::INFO, $($t)*) } }

/// Logs a line shown at the default level but labelled info: a daemon's
/// start-up summary ([`log::notice`](crate::log::notice())).
///
/// ```
/// app_plugin::notice!("serving on {}", "/run/app/plugins/demo.sock");
/// ```
#[macro_export]
macro_rules! notice { ($($t:tt)*) => { $crate::log::notice(format_args!($($t)*)) } }

/// Logs at debug level (every request).
///
/// ```
/// app_plugin::debug!("GET {}", "/routes");
/// ```
#[macro_export]
macro_rules! debug { ($($t:tt)*) => { $crate::log!($crate::log::DEBUG, $($t)*) } }

/// Logs at trace level (every event).
///
/// ```
/// app_plugin::trace!("event {}", 42);
/// ```
#[macro_export]
macro_rules! trace { ($($t:tt)*) => { $crate::log!($crate::log::TRACE, $($t)*) } }
