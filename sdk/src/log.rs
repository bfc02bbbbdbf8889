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
//! ```
//! use app_plugin::log::{self, Format};
//!
//! log::init("demo", log::INFO, Format::Json);
//! app_plugin::info!("listening on {}", "127.0.0.1:8080");
//! app_plugin::debug!("not shown at level info");
//! assert!(log::enabled(log::WARN) && !log::enabled(log::DEBUG));
//! ```

use std::fmt;
use std::io::Write;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use crate::context::Context;

pub use crate::level::{level_name, parse_level, LevelError, DEBUG, ERROR, INFO, OFF, TRACE, WARN};
static LEVEL: AtomicU8 = AtomicU8::new(WARN);
static JSON: AtomicU8 = AtomicU8::new(0);
static PLUGIN: OnceLock<String> = OnceLock::new();

/// How log lines look: `APP_LOG_FORMAT`.
///
/// ```
/// use app_plugin::log::Format;
/// assert_eq!("json".parse::<Format>(), Ok(Format::Json));
/// assert!("xml".parse::<Format>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `app-NAME: warning: message`.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// A format that is neither `text` nor `json`.
///
/// ```
/// let err = "xml".parse::<app_plugin::log::Format>().unwrap_err();
/// assert!(err.to_string().contains("use text or json"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid log format '{}'; use text or json", self.0)
    }
}

impl std::error::Error for FormatError {}

impl FromStr for Format {
    type Err = FormatError;

    fn from_str(s: &str) -> Result<Format, FormatError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(Format::Text),
            "json" => Ok(Format::Json),
            _ => Err(FormatError(s.to_string())),
        }
    }
}

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
pub fn init(plugin: &str, level: u8, format: Format) {
    let _ = PLUGIN.set(plugin.to_string());
    set_level(level);
    set_format(format);
}

/// [`init`] from what `app` said: the plugin's name, `APP_LOG` and
/// `APP_LOG_FORMAT` (an unknown format is text).
///
/// ```
/// let ctx = app_plugin::context::Context::defaults("demo");
/// app_plugin::log::init_from_context(&ctx);
/// assert_eq!(app_plugin::log::level(), ctx.log.min(5));
/// ```
pub fn init_from_context(ctx: &Context) {
    init(
        &ctx.plugin_name,
        ctx.log,
        ctx.log_format.parse().unwrap_or_default(),
    );
}

/// [`init`] from the environment `app` always sets (`APP_PLUGIN_NAME`,
/// `APP_LOG`, `APP_LOG_FORMAT`), before the context is read or the command
/// line parsed, so that even a usage error follows `--log-format`. Missing
/// or unreadable values keep the defaults (level 2, text, the executable's
/// name).
///
/// ```
/// app_plugin::log::init_from_env();
/// assert!(app_plugin::log::level() <= app_plugin::log::TRACE);
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

/// Sets the level: 0 silent, 1 errors, 2 warnings, 3 info, 4 debug, 5 trace
/// (higher is trace).
///
/// ```
/// app_plugin::log::set_level(app_plugin::log::ERROR);
/// assert!(!app_plugin::log::enabled(app_plugin::log::WARN));
/// ```
pub fn set_level(level: u8) {
    LEVEL.store(level.min(TRACE), Ordering::Relaxed);
    if let Some(follow) = LEVEL_HOOK.get() {
        follow(level.min(TRACE));
    }
}

/// Told every new level: the `log` facade's filter follows it once
/// [`log_bridge`](crate::log_bridge) is installed. A hook rather than a
/// call, so that this module does not depend on the bridge.
static LEVEL_HOOK: OnceLock<fn(u8)> = OnceLock::new();

/// Sets the [`set_level`] hook (once).
#[cfg(feature = "log-bridge")]
pub(crate) fn on_level_change(hook: fn(u8)) {
    let _ = LEVEL_HOOK.set(hook);
}

/// The level in force.
///
/// ```
/// app_plugin::log::set_level(3);
/// assert_eq!(app_plugin::log::level(), app_plugin::log::INFO);
/// ```
pub fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
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
pub fn enabled(level: u8) -> bool {
    level != OFF && level <= LEVEL.load(Ordering::Relaxed)
}

/// Writes one line at `level` when it is enabled; the macros
/// ([`error!`](crate::error!) …) call this.
///
/// ```
/// app_plugin::log::write(app_plugin::log::WARN, format_args!("disk {}% full", 91));
/// ```
pub fn write(level: u8, message: fmt::Arguments<'_>) {
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

/// The syslog priority of a line at `level` (`notice` lines are 5).
fn priority(level: u8) -> u8 {
    match level {
        ERROR => 3,
        WARN => 4,
        INFO => 6,
        _ => 7,
    }
}

/// `<N>` when stderr goes to the journal, else nothing.
fn prefix(priority: u8) -> String {
    static JOURNAL: OnceLock<bool> = OnceLock::new();
    let journal = *JOURNAL.get_or_init(|| {
        journal_priority_prefix(std::env::var("JOURNAL_STREAM").ok().as_deref(), stderr_id())
    });
    if journal {
        format!("<{priority}>")
    } else {
        String::new()
    }
}

/// Whether lines need the `<N>` prefix: `journal_stream` (the value of
/// `JOURNAL_STREAM`, `DEVICE:INODE` in decimal, which systemd sets when it
/// connects stdout or stderr to the journal) names `stderr` (the device and
/// inode of fd 2). A child whose stderr was redirected elsewhere inherits the
/// variable but not the stream, and gets no prefix.
///
/// ```
/// use app_plugin::log::journal_priority_prefix;
/// assert!(journal_priority_prefix(Some("8:12345"), Some((8, 12345))));
/// assert!(!journal_priority_prefix(Some("8:12345"), Some((8, 999))));
/// assert!(!journal_priority_prefix(None, Some((8, 12345))));
/// assert!(!journal_priority_prefix(Some("junk"), Some((8, 12345))));
/// ```
pub fn journal_priority_prefix(journal_stream: Option<&str>, stderr: Option<(u64, u64)>) -> bool {
    let parsed = journal_stream.and_then(|v| {
        let (dev, ino) = v.trim().split_once(':')?;
        Some((dev.parse::<u64>().ok()?, ino.parse::<u64>().ok()?))
    });
    parsed.is_some() && parsed == stderr
}

/// The device and inode of fd 2, as `JOURNAL_STREAM` writes them.
fn stderr_id() -> Option<(u64, u64)> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a whole `stat` into the pointer on success and
    // nothing else; it is read only then.
    let st = unsafe {
        if libc::fstat(2, st.as_mut_ptr()) != 0 {
            return None;
        }
        st.assume_init()
    };
    #[allow(clippy::unnecessary_cast)] // st_dev's type differs between targets
    Some((st.st_dev as u64, st.st_ino as u64))
}

fn emit(level: u8, message: fmt::Arguments<'_>) {
    emit_as(level, priority(level), None, message)
}

/// Writes a line at `level` (when enabled) that names where it came from:
/// a library's module path, as the `log` facade gives it
/// ([`log_bridge`](crate::log_bridge)).
#[cfg(feature = "log-bridge")]
pub(crate) fn write_target(level: u8, target: &str, message: fmt::Arguments<'_>) {
    if enabled(level) {
        emit_as(level, priority(level), Some(target), message);
    }
}

fn emit_as(level: u8, priority: u8, target: Option<&str>, message: fmt::Arguments<'_>) {
    let mut line = prefix(priority);
    line.push_str(&render_target(
        format(),
        plugin_name(),
        level,
        target,
        &message.to_string(),
        SystemTime::now(),
    ));
    line.push('\n');
    // One write per line, so that threads do not interleave; a closed
    // stderr is nobody's to report to.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// One log line (without its newline), as [`write()`] prints it.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use app_plugin::log::{render, Format, WARN, INFO};
/// let t = UNIX_EPOCH + Duration::from_millis(1_767_225_600_250);
/// assert_eq!(render(Format::Text, "demo", WARN, "low disk", t), "app-demo: warning: low disk");
/// assert_eq!(render(Format::Text, "demo", INFO, "started", t), "app-demo: started");
/// // In text, control and bidi characters are escaped (one line, no terminal codes):
/// assert_eq!(
///     render(Format::Text, "demo", WARN, "topic a/\x1b[2J\nforged", t),
///     "app-demo: warning: topic a/\\x1b[2J\\nforged"
/// );
/// assert_eq!(
///     render(Format::Json, "demo", WARN, "low \"disk\"", t),
///     r#"{"time":"2026-01-01T00:00:00.250Z","level":"warn","plugin":"demo","message":"low \"disk\""}"#
/// );
/// ```
pub fn render(format: Format, plugin: &str, level: u8, message: &str, time: SystemTime) -> String {
    render_target(format, plugin, level, None, message, time)
}

/// [`render`] for a line that names its source, `target` (a library's
/// module path): after the level tag in text, a `target` field in JSON.
///
/// ```
/// use std::time::UNIX_EPOCH;
/// use app_plugin::log::{render_target, Format, DEBUG};
/// let target = Some("rumqttc::state");
/// assert_eq!(
///     render_target(Format::Text, "demo", DEBUG, target, "Pubrel. Pkid = 3", UNIX_EPOCH),
///     "app-demo: debug: rumqttc::state: Pubrel. Pkid = 3"
/// );
/// assert_eq!(
///     render_target(Format::Json, "demo", DEBUG, target, "x", UNIX_EPOCH),
///     r#"{"time":"1970-01-01T00:00:00.000Z","level":"debug","plugin":"demo","target":"rumqttc::state","message":"x"}"#
/// );
/// ```
pub fn render_target(
    format: Format,
    plugin: &str,
    level: u8,
    target: Option<&str>,
    message: &str,
    time: SystemTime,
) -> String {
    match format {
        Format::Text => {
            let tag = match level {
                ERROR => "error: ",
                WARN => "warning: ",
                INFO => "",
                DEBUG => "debug: ",
                _ => "trace: ",
            };
            // Log lines often quote a peer (a source's topic, a broker's
            // refusal): as data, one line, never terminal codes.
            let message = crate::text::escape_for_terminal(message);
            match target {
                Some(target) => {
                    let target = crate::text::escape_for_terminal(target);
                    format!("app-{plugin}: {tag}{target}: {message}")
                }
                None => format!("app-{plugin}: {tag}{message}"),
            }
        }
        Format::Json => {
            #[derive(serde::Serialize)]
            struct Line<'a> {
                time: String,
                level: &'a str,
                plugin: &'a str,
                #[serde(skip_serializing_if = "Option::is_none")]
                target: Option<&'a str>,
                message: &'a str,
            }
            let line = Line {
                time: crate::time::rfc3339_millis(time),
                level: level_name(level),
                plugin,
                target,
                message,
            };
            // Strings only: serialising cannot fail.
            serde_json::to_string(&line).expect("a log line always serialises")
        }
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
/// start-up summary ([`log::notice`](crate::log::notice)).
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

/// A message written at most once per interval; the occurrences in between
/// are counted and reported with the next line, so a failing peer cannot
/// flood the log and nothing is hidden.
///
/// ```
/// use std::time::Duration;
/// use app_plugin::log::{RateLimited, WARN};
/// let limit = RateLimited::new(Duration::from_secs(10));
/// limit.log(WARN, || "broker unreachable".to_string()); // written
/// limit.log(WARN, || "broker unreachable".to_string()); // counted
/// assert_eq!(limit.suppressed(), 1);
/// ```
pub struct RateLimited {
    interval: Duration,
    last: Mutex<Option<Instant>>,
    suppressed: AtomicU64,
}

impl RateLimited {
    /// At most one line per `interval`.
    ///
    /// ```
    /// let _limit = app_plugin::log::RateLimited::new(std::time::Duration::from_secs(5));
    /// ```
    pub fn new(interval: Duration) -> RateLimited {
        RateLimited {
            interval,
            last: Mutex::new(None),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Logs `message` at `level` unless one was logged within the interval
    /// (then it is only counted).
    ///
    /// ```
    /// use app_plugin::log::{RateLimited, WARN};
    /// let limit = RateLimited::new(std::time::Duration::ZERO);
    /// limit.log(WARN, || "twice".into());
    /// limit.log(WARN, || "twice".into());
    /// assert_eq!(limit.suppressed(), 0);
    /// ```
    pub fn log(&self, level: u8, message: impl FnOnce() -> String) {
        let now = Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_some_and(|t| now.duration_since(t) < self.interval) {
            self.suppressed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        *last = Some(now);
        drop(last);
        let more = self.suppressed.swap(0, Ordering::Relaxed);
        if more > 0 {
            write(
                level,
                format_args!(
                    "{} ({more} more like this since the last report)",
                    message()
                ),
            );
        } else {
            write(level, format_args!("{}", message()));
        }
    }

    /// How many messages were counted and not yet reported.
    ///
    /// ```
    /// let limit = app_plugin::log::RateLimited::new(std::time::Duration::from_secs(1));
    /// assert_eq!(limit.suppressed(), 0);
    /// ```
    pub fn suppressed(&self) -> u64 {
        self.suppressed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::NAMES;
    use std::time::UNIX_EPOCH;

    #[test]
    fn every_level_name_and_number_parses() {
        for (n, name) in NAMES.iter().enumerate() {
            assert_eq!(parse_level(name), Ok(n as u8));
            assert_eq!(parse_level(&n.to_string()), Ok(n as u8));
            assert_eq!(parse_level(&name.to_uppercase()), Ok(n as u8));
        }
        for bad in ["6", "-1", "", "verbose", "2.0"] {
            assert!(parse_level(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_lines_are_one_object_with_the_required_fields() {
        let line = render(Format::Json, "p", ERROR, "a\nb", UNIX_EPOCH);
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "error");
        assert_eq!(v["plugin"], "p");
        assert_eq!(v["message"], "a\nb");
        assert_eq!(v["time"], "1970-01-01T00:00:00.000Z");
    }
}
