//! Every way `app` itself can fail, with the message and exit code for each.
//!
//! A plugin's own exit code is not an error here: it passes through untouched.

use std::fmt;
use std::io;
use std::path::PathBuf;

pub mod code;
pub mod config;
pub mod index;

pub use config::ConfigProblem;
pub use index::IndexError;

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
    /// The config file is missing (when named), not a regular file, too
    /// large, unreadable or not valid JSON.
    Config {
        path: PathBuf,
        problem: ConfigProblem,
    },
    /// An alias refers back to itself.
    AliasLoop { chain: Vec<String>, config: PathBuf },
    /// An alias value cannot be split into words.
    AliasSyntax {
        name: String,
        message: String,
        config: PathBuf,
    },
    /// Everything was already printed (a built-in's help, or its usage when
    /// a subcommand is missing); exit with this code.
    Printed(i32),
    /// Bad usage, already worded for the user (clap's messages included).
    Usage(String),
    /// A listener registered with `can_abort` vetoed the command.
    Aborted { listener: String, reason: String },
    /// An operating-system error while doing `what`.
    Io { what: String, source: io::Error },
    /// A name `plugin install` or `plugin new` cannot give a plugin;
    /// `retry` says how to give another (each command has its own way).
    BadPluginName {
        name: String,
        reason: String,
        retry: &'static str,
    },
    /// A plugin of that name is already in the user plugin directory.
    PluginExists { name: String, path: PathBuf },
    /// The fetch helper (`app_fetch`) failed (it could not download, or
    /// what it fetched is not installable); its message and exit code.
    Fetch { message: String, code: i32 },
    /// A plugin index was refused (signature, serial, expiry, format, …).
    Index(IndexError),
    /// No such plugin, version or build in the indexes (worded for the user).
    Unavailable(String),
    /// Building a plugin from source failed (worded for the user).
    Build(String),
    /// `plugin apply --locked`: no lock, or it disagrees with the file.
    LockMismatch(String),
    /// `upgrade NAME` of a plugin pinned at `version`.
    Pinned { name: String, version: String },
    /// `remove`/`upgrade` of something `install` did not put there (as is).
    NotManaged {
        name: String,
        reason: String,
        /// Where `app <name>` actually finds the plugin, if anywhere.
        found: Option<PathBuf>,
    },
}

impl Error {
    /// The exit code `app` ends with for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::UnknownCommand { .. } | Error::InvalidName(_) => code::NOT_FOUND,
            Error::CannotRun { .. } => code::CANNOT_RUN,
            Error::Usage(_) | Error::AliasLoop { .. } | Error::AliasSyntax { .. } => code::USAGE,
            Error::Config { .. } | Error::Io { .. } | Error::Aborted { .. } => code::FAILURE,
            Error::Printed(code) => *code,
            Error::BadPluginName { .. } => code::USAGE,
            Error::Fetch { code, .. } => *code,
            Error::PluginExists { .. } | Error::NotManaged { .. } | Error::Pinned { .. } => {
                code::REFUSED
            }
            Error::Index(e) => e.problem.exit_code(),
            Error::Unavailable(_) => code::UNAVAILABLE,
            Error::Build(_) => code::BUILD,
            Error::LockMismatch(_) => code::LOCKED,
        }
    }

    /// An [`Error::Io`]: `source` happened while doing `what`.
    pub fn io(what: impl Into<String>, source: io::Error) -> Error {
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
            Error::Config { path, problem } => {
                write!(f, "config file {} {problem}", path.display())
            }
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
            Error::Printed(_) => Ok(()),
            Error::Aborted { listener, reason } => {
                write!(f, "aborted by listener '{listener}': {reason}")
            }
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            // The name may come from an archive member or an index: data.
            Error::BadPluginName {
                name,
                reason,
                retry,
            } => write!(
                f,
                "'{}' cannot be a plugin name: {reason}; {retry}",
                app_plugin::text::escape_for_terminal(name)
            ),
            Error::PluginExists { name, path } => write!(
                f,
                "plugin '{name}' is already installed at {}; pass --force to replace it, or 'app plugin upgrade {name}'",
                path.display()
            ),
            // From app_fetch, quoting a server or an archive: as data.
            Error::Fetch { message, .. } => {
                f.write_str(&app_plugin::text::escape_for_terminal(message))
            }
            Error::Index(e) => e.fmt(f),
            Error::Unavailable(message) | Error::Build(message) | Error::LockMismatch(message) => {
                f.write_str(message)
            }
            Error::Pinned { name, version } => write!(
                f,
                "plugin '{name}' is pinned at {}, so it was left as it is; 'app plugin upgrade {name}@VERSION' moves the pin, 'app plugin unpin {name}' releases it",
                app_plugin::text::escape_for_terminal(version)
            ),
            Error::NotManaged {
                name,
                reason,
                found,
            } => {
                write!(f, "plugin '{name}' {reason}")?;
                match found {
                    Some(path) => write!(
                        f,
                        "; it is at {}: remove or replace that file yourself",
                        path.display()
                    ),
                    None => write!(f, "; 'app plugin list' shows the plugins there are"),
                }
            }
        }
    }
}

impl std::error::Error for Error {}

/// What `plugin install` (or `index add`) cannot take as a source is a usage error.
impl From<app_fetch_protocol::SourceError> for Error {
    fn from(e: app_fetch_protocol::SourceError) -> Error {
        Error::Usage(e.to_string())
    }
}

/// Result alias for the dispatcher.
pub type Result<T, E = Error> = std::result::Result<T, E>;
