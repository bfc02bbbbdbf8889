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
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::paths::Dirs;

/// The version of the context contract, `APP_CONTEXT_VERSION`.
pub const CONTEXT_VERSION: u32 = 1;

/// The version of this SDK. `app` and the SDK are released together with
/// the same number, so it is also the `app_version` a plugin run directly
/// (without `app`) reports.
///
/// A plugin run without `app` (no `APP_VERSION` in its environment) gets it
/// from [`Context::defaults`]:
///
/// ```
/// use app_plugin::context::{Context, APP_VERSION};
/// if std::env::var_os("APP_VERSION").is_none() {
///     assert_eq!(Context::defaults("demo").app_version, APP_VERSION);
/// }
/// ```
pub const APP_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The most bytes of `APP_COMMAND` (and the context's `command`): whole
/// shell-quoted words up to this size, the rest counted in
/// [`vars::COMMAND_OMITTED`]. The kernel refuses any one environment string
/// over 128 KiB (`MAX_ARG_STRLEN`) and the whole of arguments and
/// environment over `ARG_MAX`, so a copy of a long command line in one
/// variable would make `app` fail where the plugin run directly works.
pub const COMMAND_MAX: usize = 16 * 1024;

/// `argv` joined with shell quoting, whole words only, at most
/// [`COMMAND_MAX`] bytes; with the number of words left out. Linear in the
/// size of `argv`.
///
/// ```
/// use app_plugin::context::command_line;
/// assert_eq!(command_line(["app", "foo", "a b"]), ("app foo 'a b'".to_string(), 0));
/// let many = std::iter::once("app").chain(std::iter::repeat("word").take(10_000));
/// let (line, omitted) = command_line(many);
/// assert!(line.len() <= app_plugin::context::COMMAND_MAX);
/// assert_eq!(line.split(' ').count() + omitted, 10_001);
/// ```
pub fn command_line<'a>(argv: impl IntoIterator<Item = &'a str>) -> (String, usize) {
    let mut line = String::new();
    let mut omitted = 0;
    for word in argv {
        if omitted > 0 {
            omitted += 1;
            continue;
        }
        let quoted = shell_words::quote(word);
        let sep = usize::from(!line.is_empty());
        if line.len() + sep + quoted.len() > COMMAND_MAX {
            omitted = 1;
            continue;
        }
        if sep == 1 {
            line.push(' ');
        }
        line.push_str(&quoted);
    }
    (line, omitted)
}

/// Names of the environment variables of the plugin protocol.
pub mod vars {
    /// Absolute path of the `app` binary that ran the plugin.
    pub const BIN: &str = "APP_BIN";
    /// Version of that `app`.
    pub const VERSION: &str = "APP_VERSION";
    /// The plugin's name: `event-repeater` for `app-event-repeater`.
    pub const PLUGIN_NAME: &str = "APP_PLUGIN_NAME";
    /// Absolute path of the plugin's own executable.
    pub const PLUGIN_EXE: &str = "APP_PLUGIN_EXE";
    /// The original command line, joined with shell quoting; at most
    /// [`COMMAND_MAX`](super::COMMAND_MAX) bytes of whole words.
    pub const COMMAND: &str = "APP_COMMAND";
    /// How many words of the command line `APP_COMMAND` leaves out (set only
    /// when it leaves some out); the plugin's own arguments are always whole.
    pub const COMMAND_OMITTED: &str = "APP_COMMAND_OMITTED";
    /// Log level 0 (silent) to 5 (trace), from `app --log N`.
    pub const LOG: &str = "APP_LOG";
    /// `text` or `json`, from `app --log-format`.
    pub const LOG_FORMAT: &str = "APP_LOG_FORMAT";
    /// Hosts from `app -H URL` (repeatable), comma-separated.
    pub const HOSTS: &str = "APP_HOSTS";
    /// The config file in force (it need not exist).
    pub const CONFIG: &str = "APP_CONFIG";
    /// Directory of the config file.
    pub const CONFIG_DIR: &str = "APP_CONFIG_DIR";
    /// Directory for persistent data.
    pub const DATA_DIR: &str = "APP_DATA_DIR";
    /// Directory for sockets and pid files (`plugins/` below it).
    pub const RUNTIME_DIR: &str = "APP_RUNTIME_DIR";
    /// Always `1` for this version of the contract.
    pub const CONTEXT_VERSION: &str = "APP_CONTEXT_VERSION";
    /// `stdin` when the JSON context document is the first line of stdin.
    pub const CONTEXT: &str = "APP_CONTEXT";
    /// The user's plugin search path; passed on unchanged.
    pub const PLUGIN_PATH: &str = "APP_PLUGIN_PATH";
}

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
pub struct Context {
    /// [`CONTEXT_VERSION`].
    pub context_version: u32,
    /// Path of `app`, when the plugin was run through it.
    pub app_bin: Option<PathBuf>,
    /// Version of `app`.
    pub app_version: String,
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
    /// Log level, 0 (silent) to 5 (trace); 2 (warnings) by default.
    pub log: u8,
    /// `text` or `json`.
    pub log_format: String,
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
pub const DEFAULT_LOG: u8 = 2;

/// Why the context could not be read.
#[derive(Debug)]
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

impl std::error::Error for ContextError {}

impl Context {
    /// Reads the context the way every Rust plugin should: from the first
    /// line of stdin when `app` put it there (`APP_CONTEXT=stdin`), else from
    /// the `APP_*` environment, else the defaults `app` would compute, so the
    /// plugin also works when run directly.
    ///
    /// Only the context line is consumed; the rest of stdin is left for the
    /// plugin.
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

    /// Reads the context from `APP_*` variables; anything missing gets the
    /// default. With no `APP_CONTEXT_VERSION` at all, this is
    /// [`Context::defaults`] for the name of the running executable.
    ///
    /// ```
    /// let ctx = app_plugin::context::Context::from_env();
    /// assert_eq!(ctx.context_version, app_plugin::context::CONTEXT_VERSION);
    /// assert!(ctx.log <= 5);
    /// ```
    pub fn from_env() -> Context {
        let exe_name = env::args_os()
            .next()
            .and_then(|a| {
                Path::new(&a)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default();
        let fallback_name = exe_name
            .strip_prefix("app-")
            .unwrap_or(&exe_name)
            .to_string();
        let name = env_string(vars::PLUGIN_NAME).unwrap_or(fallback_name);
        let mut ctx = Context::defaults(&name);
        if env::var_os(vars::CONTEXT_VERSION).is_none() {
            ctx.args = env::args().skip(1).collect();
            return ctx;
        }
        ctx.source = Source::Env;
        ctx.app_bin = env_string(vars::BIN).map(PathBuf::from);
        if let Some(v) = env_string(vars::VERSION) {
            ctx.app_version = v;
        }
        ctx.plugin_exe = env_string(vars::PLUGIN_EXE)
            .map(PathBuf::from)
            .or(ctx.plugin_exe);
        if let Some(c) = env_string(vars::COMMAND) {
            ctx.command = c;
        }
        ctx.command_omitted = env_string(vars::COMMAND_OMITTED)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        ctx.args = env::args().skip(1).collect();
        if let Some(level) = env_string(vars::LOG).and_then(|l| crate::level::parse_level(&l).ok())
        {
            ctx.log = level;
        }
        if let Some(format) = env_string(vars::LOG_FORMAT) {
            ctx.log_format = format;
        }
        ctx.hosts = env_string(vars::HOSTS)
            .map(|h| split_hosts(&h))
            .unwrap_or_default();
        if let Some(config) = env_string(vars::CONFIG) {
            ctx.config = PathBuf::from(config);
        }
        ctx
    }

    /// The context `app` would give plugin `name` when run with no flags.
    ///
    /// ```
    /// let ctx = app_plugin::context::Context::defaults("demo");
    /// assert_eq!(ctx.log_format, "text");
    /// assert!(ctx.config.ends_with("config.json"));
    /// ```
    pub fn defaults(name: &str) -> Context {
        let dirs = Dirs::from_env();
        let config = env::var_os(vars::CONFIG)
            .map(PathBuf::from)
            .unwrap_or_else(|| dirs.config_file());
        let log = env::var(vars::LOG)
            .ok()
            .and_then(|l| crate::level::parse_level(&l).ok())
            .unwrap_or(DEFAULT_LOG);
        Context {
            context_version: CONTEXT_VERSION,
            app_bin: None,
            app_version: APP_VERSION.to_string(),
            plugin_name: name.to_string(),
            plugin_exe: env::current_exe().ok(),
            command: String::new(),
            command_omitted: 0,
            args: Vec::new(),
            log,
            log_format: "text".to_string(),
            hosts: Vec::new(),
            config,
            config_dir: dirs.config_dir,
            data_dir: dirs.data_dir,
            runtime_dir: dirs.runtime_dir,
            plugin_path: env::var(vars::PLUGIN_PATH).ok(),
            global_args: Vec::new(),
            alias: None,
            plugin_config: None,
            source: Source::Defaults,
        }
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

    /// The `APP_*` variables for this context, as `app` sets them.
    ///
    /// ```
    /// let env = app_plugin::context::Context::defaults("demo").to_env();
    /// assert!(env.iter().any(|(k, v)| *k == "APP_PLUGIN_NAME" && v == "demo"));
    /// ```
    pub fn to_env(&self) -> Vec<(&'static str, OsString)> {
        let mut env: Vec<(&'static str, OsString)> = vec![
            (vars::VERSION, self.app_version.clone().into()),
            (vars::PLUGIN_NAME, self.plugin_name.clone().into()),
            (vars::COMMAND, self.command.clone().into()),
            (vars::LOG, self.log.to_string().into()),
            (vars::LOG_FORMAT, self.log_format.clone().into()),
            (vars::HOSTS, self.hosts.join(",").into()),
            (vars::CONFIG, self.config.clone().into()),
            (vars::CONFIG_DIR, self.config_dir.clone().into()),
            (vars::DATA_DIR, self.data_dir.clone().into()),
            (vars::RUNTIME_DIR, self.runtime_dir.clone().into()),
            (vars::CONTEXT_VERSION, CONTEXT_VERSION.to_string().into()),
        ];
        if self.command_omitted > 0 {
            env.push((
                vars::COMMAND_OMITTED,
                self.command_omitted.to_string().into(),
            ));
        }
        if let Some(bin) = &self.app_bin {
            env.push((vars::BIN, bin.clone().into()));
        }
        if let Some(exe) = &self.plugin_exe {
            env.push((vars::PLUGIN_EXE, exe.clone().into()));
        }
        env
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

fn env_string(var: &str) -> Option<String> {
    env::var(var).ok().filter(|v| !v.is_empty())
}

/// `APP_HOSTS` as a list: comma-separated, blanks dropped.
///
/// ```
/// assert_eq!(app_plugin::context::split_hosts("a, b,,c"), ["a", "b", "c"]);
/// ```
pub fn split_hosts(hosts: &str) -> Vec<String> {
    hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(String::from)
        .collect()
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
