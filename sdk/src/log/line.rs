//! One log line: how it looks (text or JSON, [`render`]), the journal's
//! priority prefix, and the one write to stderr.

use std::fmt;
use std::io::Write;
use std::sync::OnceLock;
use std::time::SystemTime;

use super::{format, plugin_name, Format, Level};

/// The syslog priority of a line at `level` (`notice` lines are 5).
fn priority(level: Level) -> u8 {
    match level {
        Level::Error => 3,
        Level::Warn => 4,
        Level::Info => 6,
        _ => 7,
    }
}

/// `<N>` when stderr goes to the journal, else nothing.
pub(super) fn prefix(priority: u8) -> String {
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

pub(super) fn emit(level: Level, message: fmt::Arguments<'_>) {
    emit_as(level, priority(level), None, message)
}

/// Writes a line at `level` (when enabled) that names where it came from:
/// a library's module path, as the `log` facade gives it
/// ([`log_bridge`](crate::log_bridge)).
#[cfg(feature = "log-bridge")]
pub(crate) fn write_target(level: Level, target: &str, message: fmt::Arguments<'_>) {
    if super::enabled(level) {
        emit_as(level, priority(level), Some(target), message);
    }
}

pub(super) fn emit_as(
    level: Level,
    priority: u8,
    target: Option<&str>,
    message: fmt::Arguments<'_>,
) {
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

/// One log line (without its newline), as [`write()`](super::write()) prints it.
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
pub fn render(
    format: Format,
    plugin: &str,
    level: Level,
    message: &str,
    time: SystemTime,
) -> String {
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
    level: Level,
    target: Option<&str>,
    message: &str,
    time: SystemTime,
) -> String {
    match format {
        Format::Text => {
            let tag = match level {
                Level::Error => "error: ",
                Level::Warn => "warning: ",
                Level::Info => "",
                Level::Debug => "debug: ",
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
                level: level.name(),
                plugin,
                target,
                message,
            };
            // Strings only: serialising cannot fail.
            serde_json::to_string(&line).expect("a log line always serialises")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn json_lines_are_one_object_with_the_required_fields() {
        let line = render(Format::Json, "p", Level::Error, "a\nb", UNIX_EPOCH);
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "error");
        assert_eq!(v["plugin"], "p");
        assert_eq!(v["message"], "a\nb");
        assert_eq!(v["time"], "1970-01-01T00:00:00.000Z");
    }
}
