//! Every way `app` itself can fail, with the message and exit code for each.
//!
//! A plugin's own exit code is not an error here: it passes through untouched.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Exit codes of `app` itself (plugins' codes pass through unchanged).
pub mod code {
    /// A general failure: unreadable config, an I/O error.
    pub const FAILURE: i32 = 1;
    /// A usage error: bad global flag, bad arguments to a built-in command.
    pub const USAGE: i32 = 2;
    /// `plugin list` found problems (shadowed, not executable, overriding a built-in).
    pub const WARNINGS: i32 = 1;
    /// The plugin exists but cannot be started (no run bit, bad `#!` interpreter).
    pub const CANNOT_RUN: i32 = 126;
    /// No built-in, alias or plugin has that name.
    pub const NOT_FOUND: i32 = 127;
    /// Added to a signal number when the plugin was killed by that signal.
    pub const SIGNAL_BASE: i32 = 128;
}

/// An error of `app` itself.
#[derive(Debug)]
pub enum Error {
    /// No built-in, alias or plugin matches the command.
    UnknownCommand {
        name: String,
        suggestion: Option<String>,
    },
    /// A plugin name that could never be a file name (`/`, empty).
    InvalidName(String),
    /// The plugin file exists but cannot be started.
    CannotRun { path: PathBuf, reason: String },
    /// The config file cannot be read or parsed.
    Config { path: PathBuf, message: String },
    /// An alias refers back to itself.
    AliasLoop { chain: Vec<String>, config: PathBuf },
    /// An alias value cannot be split into words.
    AliasSyntax {
        name: String,
        message: String,
        config: PathBuf,
    },
    /// Bad usage, already worded for the user (clap's messages included).
    Usage(String),
    /// A listener registered with `can_abort` vetoed the command.
    Aborted { listener: String, reason: String },
    /// An operating-system error while doing `what`.
    Io { what: String, source: io::Error },
}

impl Error {
    /// The exit code `app` ends with for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::UnknownCommand { .. } | Error::InvalidName(_) => code::NOT_FOUND,
            Error::CannotRun { .. } => code::CANNOT_RUN,
            Error::Usage(_) | Error::AliasLoop { .. } | Error::AliasSyntax { .. } => code::USAGE,
            Error::Config { .. } | Error::Io { .. } | Error::Aborted { .. } => code::FAILURE,
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownCommand { name, suggestion } => {
                write!(f, "'{name}' is not an app command or plugin")?;
                if let Some(s) = suggestion {
                    write!(f, "\n\n  did you mean '{s}'?")?;
                }
                write!(
                    f,
                    "\n\nRun 'app help' for the commands, or 'app plugin list' for the plugins found on the search path."
                )
            }
            Error::InvalidName(name) => write!(
                f,
                "'{name}' is not a valid command name (plugin names cannot contain '/' or be empty)"
            ),
            Error::CannotRun { path, reason } => {
                write!(f, "cannot run plugin {}: {reason}", path.display())
            }
            Error::Config { path, message } => write!(
                f,
                "config file {} is not valid: {message}\n  fix the file, or point --config / APP_CONFIG at another one",
                path.display()
            ),
            Error::AliasLoop { chain, config } => write!(
                f,
                "alias '{}' expands to itself ({}); fix \"aliases\" in {}",
                chain[0],
                chain.join(" -> "),
                config.display()
            ),
            Error::AliasSyntax {
                name,
                message,
                config,
            } => write!(
                f,
                "alias '{name}' cannot be split into words ({message}); fix \"aliases\" in {}",
                config.display()
            ),
            Error::Usage(message) => f.write_str(message.trim_end()),
            Error::Aborted { listener, reason } => {
                write!(f, "aborted by listener '{listener}': {reason}")
            }
            Error::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result alias for the dispatcher.
pub type Result<T, E = Error> = std::result::Result<T, E>;
