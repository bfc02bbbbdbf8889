//! Every way `app-event-time` can fail, with its exit code (listed in
//! `--help`): a usage error before anything is opened, or a failure to
//! start or keep serving.

use std::fmt;
use std::io;

/// Exit codes.
pub mod code {
    /// Stopped by SIGTERM or SIGINT, or `--help`/`--version`.
    pub const OK: u8 = 0;
    /// A runtime failure: another instance, cannot listen, a server stopped.
    pub const FAILURE: u8 = 1;
    /// A usage error: a bad flag or value, an unusable app context.
    pub const USAGE: u8 = 2;
}

/// A failure of the server.
#[derive(Debug)]
pub enum Error {
    /// A flag or value is wrong.
    Usage(String),
    /// The app context (`APP_*` variables, the config file) cannot be used.
    Context(String),
    /// Another instance runs under this name, or the runtime files (socket,
    /// pid, listen) cannot be written.
    Instance(String),
    /// A listener cannot be opened.
    Listen { what: String, source: io::Error },
    /// The async runtime or a signal handler cannot be set up.
    Runtime {
        what: &'static str,
        source: io::Error,
    },
    /// A server stopped accepting connections.
    Stopped {
        what: &'static str,
        source: io::Error,
    },
}

impl Error {
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage(_) | Error::Context(_) => code::USAGE,
            _ => code::FAILURE,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m}; see app-event-time --help"),
            Error::Context(m) | Error::Instance(m) => f.write_str(m),
            Error::Listen { what, source } => {
                write!(
                    f,
                    "cannot listen on {what}: {source}; choose another --listen address"
                )
            }
            Error::Runtime { what, source } => write!(f, "cannot {what}: {source}"),
            Error::Stopped { what, source } => write!(f, "the {what} server stopped: {source}"),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(Error::Usage("x".into()).exit_code(), 2);
        assert_eq!(Error::Context("x".into()).exit_code(), 2);
        assert_eq!(Error::Instance("x".into()).exit_code(), 1);
        let e = Error::Stopped {
            what: "unix socket",
            source: io::Error::from(io::ErrorKind::Other),
        };
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().starts_with("the unix socket server stopped"));
    }
}
