//! How `app_fetch` fails, and the exit code of each failure. `app` reports
//! the message and the code as its own (`app::error::Error::Fetch`), so the
//! codes here are `app`'s: `app::error::code` re-exports them.

use std::fmt;
use std::io;

/// The exit codes `app_fetch` ends with, and `app` with it.
pub mod code {
    /// A general failure: unreadable config, an I/O error.
    pub const FAILURE: i32 = 1;
    /// A usage error: bad global flag, bad arguments to a built-in command.
    pub const USAGE: i32 = 2;
    /// `plugin install`/`upgrade`: the download failed (no connection, an
    /// HTTP status other than 2xx).
    pub const DOWNLOAD: i32 = 3;
    /// `plugin install`/`upgrade`: what was given is not what it should be
    /// (wrong checksum, not an executable, no single `app-*` in the archive,
    /// larger than the size cap).
    pub const VERIFY: i32 = 5;
}

/// Why `app_fetch` could not hand back what it was asked for.
#[derive(Debug)]
pub enum Error {
    /// Bad usage (an unreadable token file), worded for the user.
    Usage(String),
    /// An operating-system error while doing `what`.
    Io { what: String, source: io::Error },
    /// Downloading a plugin failed.
    Download { url: String, reason: String },
    /// What was fetched does not have the checksum the user gave.
    ChecksumMismatch {
        source: String,
        expected: String,
        actual: String,
    },
    /// What was given is not an installable plugin.
    NotInstallable { source: String, reason: String },
}

/// Result alias for `app_fetch`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The exit code `app_fetch`, and `app` after it, ends with.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => code::USAGE,
            Error::Io { .. } => code::FAILURE,
            Error::Download { .. } => code::DOWNLOAD,
            Error::ChecksumMismatch { .. } | Error::NotInstallable { .. } => code::VERIFY,
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
            Error::Usage(message) => f.write_str(message.trim_end()),
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Download { url, reason } => write!(
                f,
                "cannot download {url}: {reason}; check the URL and your connection"
            ),
            Error::ChecksumMismatch {
                source,
                expected,
                actual,
            } => write!(
                f,
                "checksum mismatch for {source}: expected sha256 {expected}, got {actual}; nothing was installed (check the URL and the --sha256 value)"
            ),
            Error::NotInstallable { source, reason } => write!(
                f,
                "{source} is not an installable plugin: {reason}; nothing was installed"
            ),
        }
    }
}

impl std::error::Error for Error {}
