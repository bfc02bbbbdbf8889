//! The events `app` writes to lifecycle listeners (`app-listener-<name>`),
//! one JSON line each on the listener's stdin: [`Event::Start`] before a
//! command runs, [`Event::End`] after it. `app` builds them with these
//! types and a listener reads them back with the same ones;
//! `docs/plugin-protocol.md` ("Listeners") describes the lines.
//!
//! ```
//! use app_plugin::listener::Event;
//!
//! let line = r#"{"event":"command.end","id":"7f3a","timestamp":"2026-11-29T21:56:27.123Z",
//!   "command":"app event-time","plugin":"/usr/lib/app/plugins/app-event-time","builtin":null,
//!   "exit_code":0,"duration_ms":12.5,"aborted":false}"#;
//! match serde_json::from_str::<Event>(line)? {
//!     Event::End(end) => assert_eq!((end.exit_code, end.signal), (0, None)),
//!     other => panic!("not an end: {other:?}"),
//! }
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::path::PathBuf;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::context::Context;

/// One event, tagged by its `event` field.
///
/// ```
/// use app_plugin::{context::Context, listener::{CommandStart, Event}};
/// let start = Event::Start(CommandStart::new("1f", Context::defaults("demo")));
/// assert_eq!(start.name(), "command.start");
/// assert!(start.to_json_line().starts_with(r#"{"event":"command.start","id":"1f","#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event")]
#[non_exhaustive]
// Two events per command: a box would cost matching more than it saves.
#[allow(clippy::large_enum_variant)]
pub enum Event {
    /// `command.start`: before the command runs.
    #[serde(rename = "command.start")]
    Start(CommandStart),
    /// `command.end`: after it ended (or was aborted).
    #[serde(rename = "command.end")]
    End(CommandEnd),
}

impl Event {
    /// The `event` field: `command.start`, `command.end`.
    ///
    /// ```
    /// use app_plugin::listener::{CommandEnd, Event};
    /// assert_eq!(Event::End(CommandEnd::new("1f", "app x")).name(), "command.end");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Event::Start(_) => "command.start",
            Event::End(_) => "command.end",
        }
    }

    /// The event as one line of JSON (no newline), as `app` writes it.
    ///
    /// ```
    /// use app_plugin::listener::{CommandEnd, Event};
    /// let line = Event::End(CommandEnd::new("1f", "app x")).to_json_line();
    /// assert!(!line.contains('\n'));
    /// ```
    pub fn to_json_line(&self) -> String {
        // Strings, numbers, paths (lossy) and a context: always serialises.
        serde_json::to_string(self).expect("an event always serialises")
    }
}

/// `command.start`: what is about to run.
///
/// ```
/// use app_plugin::{context::Context, listener::CommandStart};
/// let mut ctx = Context::defaults("demo");
/// ctx.command = "app demo run".into();
/// let start = CommandStart::new("1f", ctx);
/// assert_eq!(start.command, "app demo run");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CommandStart {
    /// 32 hex digits, the same in the command's `command.end`.
    pub id: String,
    /// When, in RFC 3339 (UTC, milliseconds).
    pub timestamp: String,
    /// The command line as typed ([`Context::command`]).
    pub command: String,
    /// The plugin's executable; `None` for a built-in command.
    #[serde(default)]
    pub plugin: Option<PathBuf>,
    /// The built-in command (`plugin list`); `None` for a plugin.
    #[serde(default)]
    pub builtin: Option<String>,
    /// The arguments the plugin (or built-in) receives.
    #[serde(default)]
    pub args: Vec<String>,
    /// The context the plugin is given (or a built-in would be).
    pub context: Context,
    /// The plugin's declared secret config keys (its metadata
    /// [`secrets`](crate::metadata::Metadata::secrets)): a listener that
    /// shows the command line masks the `--KEY` flags named after them, as
    /// [`crate::redact::command_line`] does given them. Empty for a
    /// built-in, an untrusted plugin (never asked) or one declaring none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

impl CommandStart {
    /// The start of the command `context` describes, now: its command line
    /// and arguments are the context's; no plugin or built-in named yet.
    ///
    /// ```
    /// use app_plugin::{context::Context, listener::CommandStart};
    /// let start = CommandStart::new("1f", Context::defaults("demo"));
    /// assert!(start.plugin.is_none() && start.timestamp.ends_with('Z'));
    /// ```
    pub fn new(id: impl Into<String>, context: Context) -> CommandStart {
        CommandStart {
            id: id.into(),
            timestamp: now(),
            command: context.command.clone(),
            plugin: None,
            builtin: None,
            args: context.args.clone(),
            context,
            secrets: Vec::new(),
        }
    }
}

/// `command.end`: how the command ended.
///
/// ```
/// use app_plugin::listener::CommandEnd;
/// let mut end = CommandEnd::new("1f", "app demo");
/// end.exit_code = 143;
/// end.signal = Some(15);
/// let line = app_plugin::listener::Event::End(end).to_json_line();
/// assert!(line.contains(r#""exit_code":143,"signal":15"#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CommandEnd {
    /// The id of the command's `command.start`.
    pub id: String,
    /// When, in RFC 3339 (UTC, milliseconds).
    pub timestamp: String,
    /// The command line as typed.
    pub command: String,
    /// The plugin's executable; `None` for a built-in command.
    #[serde(default)]
    pub plugin: Option<PathBuf>,
    /// The built-in command; `None` for a plugin.
    #[serde(default)]
    pub builtin: Option<String>,
    /// The exit code: the plugin's, `128+N` when signal N ended it, 1 when
    /// a listener aborted the command.
    pub exit_code: i32,
    /// The signal that ended the plugin, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// How long the command ran, in milliseconds.
    pub duration_ms: f64,
    /// Whether a listener vetoed the command (it did not run).
    #[serde(default)]
    pub aborted: bool,
    /// The plugin's declared secret config keys, as in [`CommandStart::secrets`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
}

impl CommandEnd {
    /// The end of `command`, now: exit 0, no signal, not aborted, 0 ms.
    ///
    /// ```
    /// let end = app_plugin::listener::CommandEnd::new("1f", "app x");
    /// assert_eq!((end.exit_code, end.aborted), (0, false));
    /// ```
    pub fn new(id: impl Into<String>, command: impl Into<String>) -> CommandEnd {
        CommandEnd {
            id: id.into(),
            timestamp: now(),
            command: command.into(),
            plugin: None,
            builtin: None,
            exit_code: 0,
            signal: None,
            duration_ms: 0.0,
            aborted: false,
            secrets: Vec::new(),
        }
    }
}

fn now() -> String {
    crate::time::rfc3339_millis(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_have_the_documented_fields() {
        let mut start = CommandStart::new("ab", Context::defaults("demo"));
        start.builtin = Some("plugin list".into());
        let v: serde_json::Value =
            serde_json::from_str(&Event::Start(start.clone()).to_json_line()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "args",
                "builtin",
                "command",
                "context",
                "event",
                "id",
                "plugin",
                "timestamp"
            ]
        );
        assert_eq!(v["plugin"], serde_json::Value::Null);
        assert_eq!(v["context"]["plugin_name"], "demo");
        let back: Event = serde_json::from_value(v).unwrap();
        assert_eq!(back, Event::Start(start));

        let mut end = CommandEnd::new("ab", "app x");
        end.exit_code = 3;
        let v: serde_json::Value =
            serde_json::from_str(&Event::End(end.clone()).to_json_line()).unwrap();
        assert_eq!(v["event"], "command.end");
        assert!(v.get("signal").is_none(), "signal only when killed by one");
        assert_eq!(v["exit_code"], 3);
        end.signal = Some(9);
        let line = Event::End(end.clone()).to_json_line();
        assert!(line.contains(r#""signal":9"#), "{line}");
        assert!(!line.contains("secrets"), "only when declared: {line}");
        end.secrets = vec!["pin".into()];
        let line = Event::End(end).to_json_line();
        assert!(line.contains(r#""secrets":["pin"]"#), "{line}");
    }
}
