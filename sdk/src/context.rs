//! What a plugin is told: the context `app` hands to every plugin.
//!
//! This module is the single place where the environment variable names and
//! the JSON context document are defined; `docs/plugin-protocol.md` describes
//! the same contract for plugins written in other languages.
//!
//! The dispatcher builds a [`Context`] and passes it on through the
//! environment (always) and as one line of JSON on stdin (for plugins whose
//! metadata asks for `"context": "stdin"`). A Rust plugin reads it back with
//! one call, [`Context::load`].

use std::env;
use std::io::{self, Read};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::level::{Format, Level};
use crate::paths::Dirs;

/// The version of the context contract, `APP_CONTEXT_VERSION`.
pub const CONTEXT_VERSION: u32 = 1;

/// The version of this SDK, not of `app`: the name is kept for plugins
/// written against 0.1. `app`'s version is the context's
/// [`app_version`](Context::app_version).
///
/// ```
/// #![allow(deprecated)]
/// assert_eq!(app_plugin::context::APP_VERSION, app_plugin::SDK_VERSION);
/// ```
#[deprecated(
    since = "0.1.1",
    note = "the SDK's version: use app_plugin::SDK_VERSION, or Context::app_version for app's"
)]
pub const APP_VERSION: &str = crate::SDK_VERSION;

mod command;
mod environment;
pub mod vars;

pub use command::{command_line, COMMAND_MAX};
pub use environment::split_hosts;

/// How a plugin received its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// The JSON document on the first line of stdin.
    Stdin,
    /// The `APP_*` environment variables.
    Env,
    /// Neither: the plugin was run directly, so `app`'s defaults were computed.
    #[default]
    Defaults,
}

/// An alias that was expanded before the plugin was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliasExpansion {
    /// The word the user typed.
    pub name: String,
    /// What it expanded to (before the user's remaining arguments).
    pub expansion: Vec<String>,
}

/// Everything a plugin is told about the call that started it.
///
/// ```
/// use app_plugin::context::Context;
/// let ctx = Context::defaults("event-time");
/// assert_eq!(ctx.plugin_name, "event-time");
/// assert!(ctx.plugin_socket("event-time").ends_with("plugins/event-time.sock"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Context {
    /// [`CONTEXT_VERSION`].
    pub context_version: u32,
    /// Path of `app`, when the plugin was run through it.
    pub app_bin: Option<PathBuf>,
    /// Version of the `app` that ran the plugin (`APP_VERSION`); `None`
    /// when it was run directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// The plugin's name (`event-repeater`).
    pub plugin_name: String,
    /// The plugin's executable.
    pub plugin_exe: Option<PathBuf>,
    /// The command line as the user typed it, shell-quoted: whole words up
    /// to [`COMMAND_MAX`] bytes (see [`command_line`]).
    pub command: String,
    /// How many words of the command line `command` leaves out (0 unless
    /// it is over [`COMMAND_MAX`]); `args` is always complete.
    #[serde(default)]
    pub command_omitted: usize,
    /// The arguments the plugin received (after its name).
    #[serde(default)]
    pub args: Vec<String>,
    /// Log level, `--log`: warnings by default. A number (0 silent to 5
    /// trace) in the document and `APP_LOG`.
    pub log: Level,
    /// `--log-format`: text or JSON lines.
    pub log_format: Format,
    /// Hosts given with `app -H URL`.
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The config file in force.
    pub config: PathBuf,
    /// `APP_CONFIG_DIR`.
    pub config_dir: PathBuf,
    /// `APP_DATA_DIR`.
    pub data_dir: PathBuf,
    /// `APP_RUNTIME_DIR`.
    pub runtime_dir: PathBuf,
    /// `APP_PLUGIN_PATH` as the user set it.
    #[serde(default)]
    pub plugin_path: Option<String>,
    /// The global flags exactly as typed before the plugin name.
    #[serde(default)]
    pub global_args: Vec<String>,
    /// The alias that led here, if any (JSON context only).
    #[serde(default)]
    pub alias: Option<AliasExpansion>,
    /// This plugin's section of the config file, `plugins.<name>.config` (JSON context only).
    #[serde(default)]
    pub plugin_config: Option<serde_json::Value>,
    /// The plugin's `share/` folder, for a multi-file plugin `app plugin
    /// install` put in the user plugin directory (`APP_PLUGIN_SHARE`);
    /// `None` for any other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_share: Option<PathBuf>,
    /// Where this context came from; not part of the document.
    #[serde(skip)]
    pub source: Source,
}

/// Default log level: warnings and errors.
///
/// ```
/// use app_plugin::log;
/// log::set_level(app_plugin::context::DEFAULT_LOG);
/// assert!(log::enabled(log::WARN) && !log::enabled(log::INFO));
/// ```
pub const DEFAULT_LOG: Level = Level::Warn;

/// Why the context could not be read.
///
/// ```
/// let err = app_plugin::context::Context::from_json("{").unwrap_err();
/// assert!(err.to_string().starts_with("the first line of stdin is not a valid app context document"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ContextError {
    /// `APP_CONTEXT=stdin` but stdin could not be read.
    Io(io::Error),
    /// `APP_CONTEXT=stdin` but the first line was not a context document.
    Json(serde_json::Error),
    /// The context has a version this library does not know.
    Version(u32),
}

impl std::fmt::Display for ContextError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContextError::Io(e) => write!(f, "cannot read the app context from stdin: {e}"),
            ContextError::Json(e) => write!(
                f,
                "the first line of stdin is not a valid app context document: {e}"
            ),
            ContextError::Version(v) => write!(
                f,
                "app context version {v} is not supported (this plugin knows version {CONTEXT_VERSION}); upgrade the plugin"
            ),
        }
    }
}

impl std::error::Error for ContextError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ContextError::Io(e) => Some(e),
            ContextError::Json(e) => Some(e),
            ContextError::Version(_) => None,
        }
    }
}

impl Context {
    /// Reads the context the way every Rust plugin should: from the first
    /// line of stdin when `app` put it there (`APP_CONTEXT=stdin`), else from
    /// the `APP_*` environment, else the defaults `app` would compute, so the
    /// plugin also works when run directly.
    ///
    /// Only the context line is consumed; the rest of stdin is left for the
    /// plugin.
    ///
    /// [`run`](crate::run) calls it for the plugin (and reports an error);
    /// called directly:
    ///
    /// ```no_run
    /// let ctx = app_plugin::context::Context::load().unwrap_or_else(|e| {
    ///     eprintln!("app-example: {e}");
    ///     std::process::exit(2);
    /// });
    /// println!("hello from {}", ctx.plugin_name);
    /// ```
    pub fn load() -> Result<Context, ContextError> {
        if env::var_os(vars::CONTEXT).is_some_and(|v| v == "stdin") {
            let line = read_line_unbuffered(&mut io::stdin().lock()).map_err(ContextError::Io)?;
            return Context::from_json(&line);
        }
        Ok(Context::from_env())
    }

    /// Parses a context document (one JSON object).
    ///
    /// ```
    /// let ctx = app_plugin::context::Context::defaults("x");
    /// let back = app_plugin::context::Context::from_json(&ctx.to_json_line()).unwrap();
    /// assert_eq!(back.plugin_name, "x");
    /// ```
    pub fn from_json(text: &str) -> Result<Context, ContextError> {
        let mut ctx: Context = serde_json::from_str(text).map_err(ContextError::Json)?;
        if ctx.context_version != CONTEXT_VERSION {
            return Err(ContextError::Version(ctx.context_version));
        }
        ctx.source = Source::Stdin;
        Ok(ctx)
    }

    /// The context as one line of JSON (no newline), as `app` writes it.
    ///
    /// ```
    /// let line = app_plugin::context::Context::defaults("demo").to_json_line();
    /// assert!(line.starts_with('{') && !line.contains('\n'));
    /// ```
    pub fn to_json_line(&self) -> String {
        // Serialising plain strings, numbers and already-valid JSON values cannot fail.
        serde_json::to_string(self).expect("a context always serialises")
    }

    /// The directories of this context.
    ///
    /// ```
    /// let ctx = app_plugin::context::Context::defaults("demo");
    /// assert_eq!(ctx.dirs().runtime_dir, ctx.runtime_dir);
    /// ```
    pub fn dirs(&self) -> Dirs {
        Dirs {
            config_dir: self.config_dir.clone(),
            data_dir: self.data_dir.clone(),
            runtime_dir: self.runtime_dir.clone(),
            cache_dir: crate::paths::cache_dir(&self.data_dir),
        }
    }

    /// The socket of the running plugin instance called `name`:
    /// `APP_RUNTIME_DIR/plugins/<name>.sock`.
    ///
    /// ```
    /// let ctx = app_plugin::context::Context::defaults("demo");
    /// assert_eq!(ctx.plugin_socket("r1"), ctx.runtime_dir.join("plugins/r1.sock"));
    /// ```
    pub fn plugin_socket(&self, name: &str) -> PathBuf {
        self.dirs().plugin_socket(name)
    }
}

/// Reads one line without buffering past its end, so that whatever follows
/// the context line on stdin stays there for the plugin.
fn read_line_unbuffered(input: &mut impl Read) -> io::Result<String> {
    let mut line = Vec::with_capacity(1024);
    let mut byte = [0u8; 1];
    loop {
        match input.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    String::from_utf8(line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_keeps_every_field() {
        let mut ctx = Context::defaults("demo");
        ctx.hosts = vec!["unix:///x.sock".into()];
        ctx.alias = Some(AliasExpansion {
            name: "r".into(),
            expansion: vec!["demo".into(), "--a b".into()],
        });
        ctx.plugin_config = Some(serde_json::json!({"k": 1}));
        let mut back = Context::from_json(&ctx.to_json_line()).unwrap();
        back.source = Source::Defaults;
        assert_eq!(back, ctx);
    }

    #[test]
    fn unknown_version_is_refused() {
        let mut ctx = Context::defaults("demo");
        ctx.context_version = 99;
        let err = Context::from_json(&ctx.to_json_line()).unwrap_err();
        assert!(err.to_string().contains("version 99"));
    }

    #[test]
    fn reading_the_context_line_leaves_the_rest_of_stdin() {
        let mut input: &[u8] = b"{\"a\":1}\nuser data\n";
        assert_eq!(read_line_unbuffered(&mut input).unwrap(), "{\"a\":1}");
        assert_eq!(input, b"user data\n");
    }

    #[test]
    fn hosts_split_on_commas() {
        assert_eq!(split_hosts("a, b,,c"), vec!["a", "b", "c"]);
    }
}
